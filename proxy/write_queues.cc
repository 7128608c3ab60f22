// WritePath: the queues of client writes waiting: for buffer room
// (blocked_, all files, in arrival order, a file's own limit holding only
// its own writes) and for other callers' bytes to leave (File::parked).
#include <algorithm>
#include <unordered_set>

#include "proxy/write_path.h"
#include "proxy/write_path_state.h"
#include "rpc/log.h"

namespace nfsedge {

using write_path_internal::CommitError;
using write_path_internal::WriteError;

bool WritePath::KeptErrorAnswered(const std::string& fh, const OpaqueAuth& cred,
                                  const ReplyFn& reply, bool commit) {
  auto it = files_.find(fh);
  const nfsstat3 e = it == files_.end() ? TakeOrphanedError(fh, cred) : TakeError(*it->second, cred);
  if (e == NFS3_OK) return false;
  reply(commit ? CommitError(e) : WriteError(e));
  ForgetIfIdle(fh);
  return true;
}

bool WritePath::Readmitted(Blocked& b) {
  if (!b.waited) return true;
  // A reload may have changed the export's write rules while it waited: it
  // is taken as they are now. Answered from the buffer only with
  // write-behind, from the journal only with write_back, and only if the
  // ACCESS cache proved it may write (answered from either).
  const bool write_back = b.exp->config().write_back && options_.journal != nullptr;
  const bool evidence = b.journal || !b.stable;
  b.journal = write_back && evidence;
  if (!b.exp->config().write_behind && !write_back) b.stable = true;
  if (!b.readmit) return true;
  OpaqueAuth cred = b.cred;
  if (!b.readmit(&cred)) return false;
  if (cred.flavor != b.cred.flavor || cred.body != b.cred.body) {
    b.cred = cred;
    b.stable = true;
    b.journal = false;
  }
  return true;
}

void WritePath::Park(File& f, std::unique_ptr<Blocked> b) {
  stats_.parked++;
  b->waited = true;
  // In arrival order: one taken from the room queue may be older than
  // writes parked meanwhile.
  auto at = std::find_if(f.parked.begin(), f.parked.end(), [&b](const std::unique_ptr<Blocked>& w) {
    return w->arrival > b->arrival;
  });
  f.parked.insert(at, std::move(b));
  if (!f.retry_scheduled) SendDirty(f, true, false);
  Pump(f);
}

bool WritePath::TotalRoom(uint64_t n) const {
  return stats_.buffered_bytes == 0 || stats_.buffered_bytes + n <= options_.max_bytes;
}

bool WritePath::FileRoom(const File& f, uint64_t n, uint64_t max_file_bytes) {
  return f.bytes == 0 || f.bytes + n <= max_file_bytes;
}

bool WritePath::TotalShort() const {
  // Room in all is monotone in the size: the largest write waiting decides.
  return !blocked_sizes_.empty() && !TotalRoom(*blocked_sizes_.rbegin());
}

void WritePath::Enter(File& f, std::unique_ptr<Blocked> b) {
  const uint64_t n = b->data.size();
  const bool room = TotalRoom(n) && FileRoom(f, n, options_.max_file_bytes);
  // Where it waits, if it must: before the file's writes that came after
  // it; it must if an older write of the file waits for room.
  auto at = blocked_.end();
  bool older_waits = false;
  if (f.blocked > 0) {
    for (auto it = blocked_.begin(); it != blocked_.end(); ++it) {
      if ((*it)->fh != f.fh) continue;
      if ((*it)->arrival > b->arrival) {
        at = it;
        break;
      }
      older_waits = true;
    }
  }
  const bool admitted = b->admitted;
  b->admitted = false;
  if (!room || older_waits || (!admitted && TotalShort())) {
    stats_.blocked++;
    b->waited = true;
    f.blocked++;
    blocked_sizes_.insert(n);
    blocked_.insert(at, std::move(b));
    // Pressure: the file flushes and commits so that room is made; every
    // file, when the room in all is short.
    if (!TotalShort()) {
      Pump(f);
      return;
    }
    std::vector<std::string> held;
    for (const auto& [k, file] : files_) {
      if (file->bytes > 0) held.push_back(k);
    }
    for (const std::string& k : held) {
      if (auto it = files_.find(k); it != files_.end()) Pump(*it->second);
    }
    return;
  }
  if (!Readmitted(*b)) return;  // (the file's entry: AdmitParked's idle check)
  Accept(f, *b->exp, b->offset, b->data, b->cred, b->stable, b->journal, std::move(b->reply));
}

void WritePath::AdmitParked(const std::string& fh) {
  for (;;) {
    auto it = files_.find(fh);
    if (it == files_.end()) return;
    File& f = *it->second;
    if (f.admitting) return;
    if (f.parked.empty()) {
      // The last one taken may have been refused (STALE, or the export's
      // rules after a reload): nothing else may look at the file again.
      ForgetIfIdle(fh);
      return;
    }
    const Blocked& b = *f.parked.front();
    if (stale_.Peek(fh) == nullptr &&
        (OthersHeld(f, b.offset, b.offset + b.data.size(), b.cred) ||
         SentAndWaitedFor(f, b.offset, b.offset + b.data.size()))) {
      return;
    }
    std::unique_ptr<Blocked> taken = std::move(f.parked.front());
    f.parked.pop_front();
    f.admitting = true;
    // (A refusal of the bytes it waited for is not its own: it keeps the
    // file's error, if any, for the file's next WRITE or COMMIT.)
    if (stale_.Peek(fh) != nullptr) {
      taken->reply(WriteError(NFS3ERR_STALE));
    } else {
      Enter(f, std::move(taken));
    }
    if (auto again = files_.find(fh); again != files_.end()) again->second->admitting = false;
  }
}

void WritePath::AdmitBlocked() {
  // Each write is taken at most once a call: one taken back (it cannot be:
  // see Blocked::admitted) waits for the next room made rather than
  // spinning the event loop.
  std::unordered_set<uint64_t> taken_once;  // by arrival
  for (;;) {
    // The first write with room whose file has no older write waiting;
    // none past one waiting for room in all.
    auto pick = blocked_.end();
    std::unordered_set<const File*> held;
    for (auto it = blocked_.begin(); it != blocked_.end(); ++it) {
      auto fit = files_.find((*it)->fh);
      if (fit == files_.end()) {  // cannot happen: a blocked write keeps its file
        pick = it;
        break;
      }
      const File* f = fit->second.get();
      const uint64_t n = (*it)->data.size();
      if (!TotalRoom(n)) break;
      if (held.contains(f)) continue;
      if (!FileRoom(*f, n, options_.max_file_bytes)) {
        held.insert(f);
        continue;
      }
      pick = it;
      break;
    }
    if (pick == blocked_.end()) return;
    if (!taken_once.insert((*pick)->arrival).second) {
      NFSEDGE_LOG(kError) << "write path: a write waiting for room came back to the room queue "
                             "at once; it waits for the next room made";
      return;
    }
    std::unique_ptr<Blocked> taken = std::move(*pick);
    blocked_.erase(pick);
    blocked_sizes_.erase(blocked_sizes_.find(taken->data.size()));
    auto it = files_.find(taken->fh);
    if (it == files_.end()) continue;
    File& f = *it->second;
    f.blocked--;
    if (stale_.Peek(taken->fh) != nullptr) {
      taken->reply(WriteError(NFS3ERR_STALE));
      ForgetIfIdle(taken->fh);
      continue;
    }
    const uint64_t end = taken->offset + taken->data.size();
    if (!f.parked.empty() || OthersHeld(f, taken->offset, end, taken->cred) ||
        SentAndWaitedFor(f, taken->offset, end)) {
      // Over another caller's bytes taken meanwhile (a write that waited
      // for room before this one), or over bytes on their way that a call
      // waits for: it waits for them as any such write (in arrival order
      // among the file's parked writes), its turn for room taken.
      taken->admitted = true;
      Park(f, std::move(taken));
      continue;
    }
    if (!Readmitted(*taken)) {
      ForgetIfIdle(taken->fh);
      continue;
    }
    if (nfsstat3 e = TakeError(f, taken->cred); e != NFS3_OK) {
      taken->reply(WriteError(e));
      ForgetIfIdle(taken->fh);
      continue;
    }
    Accept(f, *taken->exp, taken->offset, taken->data, taken->cred, taken->stable, taken->journal,
           std::move(taken->reply));
  }
}

}  // namespace nfsedge
