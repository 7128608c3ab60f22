// WritePath: the per-file buffer (pieces: split, insert, erase, lookup),
// the replies to clients, and the file table.
#include <algorithm>

#include "cache/change_id.h"
#include "proxy/write_path.h"
#include "proxy/write_path_state.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

using write_path_internal::CompareCtime;
using write_path_internal::kMaxIdleFiles;

WritePath::File& WritePath::FileFor(const std::string& fh, const Export& exp) {
  auto [it, inserted] = files_.try_emplace(fh);
  if (inserted) {
    it->second = std::make_unique<File>();
    it->second->fh = fh;
    // A file starts lone: its first stable write goes at once; a second one
    // arriving meanwhile is company, and windows open from then on.
    it->second->lone = options_.lone_after;
    // Errors its writers were not told of before it was forgotten.
    if (std::vector<KeptError>* kept = orphaned_errors_.Peek(fh)) {
      it->second->errors = std::move(*kept);
      orphaned_errors_.Erase(fh);
    }
  }
  it->second->exp = &exp;
  return *it->second;
}

void WritePath::SeedFromWriter(File& f, const OpaqueAuth& cred) {
  f.writer = write_path_internal::WriterKey(cred);
  if (options_.lone_after == 0 || f.calls_sent != 0 || f.last_batch != 0 || !f.waiters.empty() ||
      f.window || f.lone < options_.lone_after) {
    return;  // not a new file, or files always wait
  }
  const int* lone = writers_.Find(f.writer);
  if (lone != nullptr && *lone < options_.lone_after) {
    f.lone = *lone;
    f.first_window = true;
  }
}

void WritePath::NoteWriter(const File& f) {
  constexpr size_t kMaxWriters = 4096;
  if (f.writer.empty()) return;
  writers_.Put(f.writer, f.lone);
  while (writers_.size() > kMaxWriters) writers_.Erase(writers_.Oldest()->key);
}

void WritePath::OpenWindow(File& f, size_t expected) {
  f.window = true;
  f.expected = expected;
  f.window_start = clock_.MonoNow();
  stats_.windows++;
  ArmWindowEnd(f);
}

void WritePath::ArmWindowEnd(File& f) {
  const Duration window = std::chrono::milliseconds(f.exp->config().gather_window_ms);
  Duration delay = window - (clock_.MonoNow() - f.window_start);
  if (f.expected == kOpenEnded) delay = std::min(delay, window / 4);
  // An earlier end no longer applies; unique across files, so that one left
  // from a file since forgotten cannot end a new file's window.
  const uint64_t gen = f.window_gen = next_id_++;
  schedule_(delay, [this, fh = f.fh, gen] { CloseWindow(fh, gen); });
}

std::array<char, 8> WritePath::ReplyVerf(const File& f, const Export& exp) const {
  // The journal's: one for every file, changed by a loss, kept across
  // restarts.
  if (exp.config().write_back && options_.journal) return options_.journal->verifier();
  if (!exp.config().write_behind) return f.upstream_verf;
  std::array<char, 8> v = verifier_;
  // A file that lost answered data: the shared verifier, changed by how
  // many times (never back to it: the count is at least 1).
  if (const uint64_t* lost = lost_.Peek(f.fh)) {
    for (int i = 0; i < 8; ++i) v[i] = static_cast<char>(v[i] ^ static_cast<char>(*lost >> (8 * i)));
  }
  return v;
}

std::string WritePath::JournaledReply(const std::array<char, 8>& v, uint32_t count, bool stable,
                                      bool commit) const {
  std::string out;
  if (commit) {
    COMMIT3res res{};
    res.status = NFS3_OK;
    std::copy(v.begin(), v.end(), res.COMMIT3res_u.resok.verf);
    XdrEncode(reinterpret_cast<xdrproc_t>(xdr_COMMIT3res), &res, &out);
    return out;
  }
  WRITE3res res{};
  res.status = NFS3_OK;
  WRITE3resok& ok = res.WRITE3res_u.resok;
  ok.count = count;
  ok.committed = stable ? FILE_SYNC : UNSTABLE;
  std::copy(v.begin(), v.end(), ok.verf);
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_WRITE3res), &res, &out);
  return out;
}

std::string WritePath::WriteReply(const File& f, const Export& exp, uint32_t count,
                                  bool stable) const {
  WRITE3res res{};
  res.status = NFS3_OK;
  WRITE3resok& ok = res.WRITE3res_u.resok;
  if (std::optional<fattr3> attr = stable ? ReplyAttr(f) : std::nullopt) {
    ok.file_wcc.after.attributes_follow = TRUE;
    ok.file_wcc.after.post_op_attr_u.attributes = *attr;
  }
  ok.count = count;
  ok.committed = stable ? FILE_SYNC : UNSTABLE;
  std::array<char, 8> v = ReplyVerf(f, exp);
  std::copy(v.begin(), v.end(), ok.verf);
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_WRITE3res), &res, &out);
  return out;
}

std::string WritePath::CommitReply(const File& f, const Export& exp) const {
  COMMIT3res res{};
  res.status = NFS3_OK;
  COMMIT3resok& ok = res.COMMIT3res_u.resok;
  if (std::optional<fattr3> attr = ReplyAttr(f)) {
    ok.file_wcc.after.attributes_follow = TRUE;
    ok.file_wcc.after.post_op_attr_u.attributes = *attr;
  }
  std::array<char, 8> v = ReplyVerf(f, exp);
  std::copy(v.begin(), v.end(), ok.verf);
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_COMMIT3res), &res, &out);
  return out;
}

std::optional<fattr3> WritePath::ReplyAttr(const File& f) const {
  // Those of the file's last upstream WRITE or COMMIT (reset when one came
  // without them, or a mutation of the file was forwarded), or the cache's
  // if newer (a SETATTR or another call went
  // by since): the upstream's view after every byte it was sent.
  // Bytes answered to a client that the upstream does not have yet would
  // not show in them.
  if (!f.attr || f.attr_ambiguous) return std::nullopt;
  for (const auto& [off, p] : f.pieces) {
    if (p.state != Piece::kWritten && (p.acked || (!p.records.empty() && KeepsAcknowledged(p)))) {
      return std::nullopt;
    }
  }
  // A ctime the cache knew and let go, or holds without attributes in
  // order: these may show the file from before a change made elsewhere.
  const NfsTime ctime = NfsTime::From(f.attr->ctime);
  if (ctime < f.attr_floor) return std::nullopt;
  if (attributes_.latest) {
    if (std::optional<fattr3> latest = attributes_.latest(f.fh);
        latest && CompareCtime(*latest, *f.attr) > 0) {
      return latest;
    }
    if (std::optional<NfsTime> newest = attributes_.newest_ctime(f.fh); newest && ctime < *newest) {
      return std::nullopt;
    }
  }
  return f.attr;
}

void WritePath::Split(File& f, uint64_t at) {
  auto it = f.pieces.upper_bound(at);
  if (it == f.pieces.begin()) return;
  --it;
  const uint64_t start = it->first;
  Piece& p = it->second;
  if (at <= start || at >= start + p.data.size()) return;
  Piece tail = p;
  tail.data = p.data.substr(at - start);
  p.data.resize(at - start);
  for (uint64_t r : tail.records) RefRecord(f.fh, r, 0);
  f.pieces.emplace(at, std::move(tail));
}

void WritePath::Erase(File& f, std::map<uint64_t, Piece>::iterator it, bool release) {
  const uint64_t n = it->second.data.size();
  f.bytes -= n;
  stats_.buffered_bytes -= n;
  std::vector<uint64_t> records = std::move(it->second.records);
  f.pieces.erase(it);
  if (release) UnrefRecords(std::move(records));
}

void WritePath::RefRecord(const std::string& fh, uint64_t jseq, uint64_t stamp) {
  auto [it, added] = journal_refs_.try_emplace(jseq);
  if (added) {
    it->second.fh = fh;
    it->second.stamp = stamp;
    file_records_[fh].insert(jseq);
  }
  it->second.count++;
}

void WritePath::UnrefRecords(std::vector<uint64_t> jseqs) {
  // A worklist, not recursion: a record let go of may let go of those it
  // overwrote, and so on down a chain of refused appends.
  std::vector<std::string> files;  // of the records let go of
  while (!jseqs.empty()) {
    const uint64_t jseq = jseqs.back();
    jseqs.pop_back();
    auto it = journal_refs_.find(jseq);
    if (it == journal_refs_.end() || it->second.count == 0) continue;
    if (--it->second.count > 0) continue;
    files.push_back(it->second.fh);
    // No piece holds its bytes: they are stable upstream, or replaced by
    // bytes that keep records of their own. What it overwrote need not
    // wait for its append any longer.
    if (auto o = overwritten_.find(jseq); o != overwritten_.end()) {
      jseqs.insert(jseqs.end(), o->second.begin(), o->second.end());
      overwritten_.erase(o);
    }
  }
  // Each file's records go in order: replayed in order, the file's ranges
  // end as the latest acknowledged write not yet stable upstream made them.
  // Other files' records do not wait for them.
  for (const std::string& fh : files) {
    auto fit = file_records_.find(fh);
    if (fit == file_records_.end()) continue;
    std::set<uint64_t>& records = fit->second;
    while (!records.empty()) {
      const uint64_t oldest = *records.begin();
      auto it = journal_refs_.find(oldest);
      if (it != journal_refs_.end() && it->second.count > 0) break;
      if (options_.journal) {
        // (A record no piece ever held: counted as of the oldest write.)
        options_.journal->Remove(
            oldest, RemovalDone(fh, it != journal_refs_.end() ? it->second.stamp : 0));
      }
      unacknowledged_.erase(oldest);
      if (it != journal_refs_.end()) journal_refs_.erase(it);
      records.erase(records.begin());
    }
    if (records.empty()) file_records_.erase(fit);
  }
}

std::function<void(Status)> WritePath::RemovalDone(const std::string& fh, uint64_t stamp,
                                                   uint32_t failures) {
  removing_[fh].open.insert(stamp);
  return [weak = std::weak_ptr<WritePath*>(self_), fh, stamp, failures](Status s) {
    auto self = weak.lock();
    if (!self) return;
    WritePath& w = **self;
    auto it = w.removing_.find(fh);
    if (it == w.removing_.end()) return;
    Removals& r = it->second;
    r.open.erase(r.open.find(stamp));
    if (!s.ok() && failures + 1 < kMaxRemovalFailures) {
      // A failed batch's removals are queued again (first): a sync after
      // them tells when they are on disk.
      w.options_.journal->Sync(w.RemovalDone(fh, stamp, failures + 1));
      return;
    }
    if (!s.ok() && !r.then.empty()) {
      NFSEDGE_LOG(kError) << "write journal: a removal of records stable upstream cannot be "
                             "written; a SETATTR, stable write or COMMIT of their file waiting "
                             "for it goes on without it (a restart before the journal's disk is "
                             "back replays them over it)";
    }
    const uint64_t oldest = r.open.empty() ? UINT64_MAX : *r.open.begin();
    std::vector<std::function<void()>> ready;
    for (auto t = r.then.begin(); t != r.then.end();) {
      if (t->first < oldest) {
        ready.push_back(std::move(t->second));
        t = r.then.erase(t);
      } else {
        ++t;
      }
    }
    if (r.open.empty()) w.removing_.erase(it);
    for (auto& t : ready) t();
  };
}

void WritePath::CommittedFromJournal(const std::string& fh, uint64_t off, uint64_t end,
                                     uint64_t stamp) {
  auto it = files_.find(fh);
  if (it == files_.end()) return;
  for (auto& [at, p] : it->second->pieces) {
    if (p.acked && !p.behind && p.seq <= stamp && at < end && off < at + p.data.size()) {
      p.synced = true;
    }
  }
}

bool WritePath::AfterRemovals(const std::string& fh, uint64_t upto, std::function<void()>& then) {
  auto it = removing_.find(fh);
  if (it == removing_.end() || it->second.open.empty() || *it->second.open.begin() > upto) {
    return false;
  }
  it->second.then.emplace_back(upto, std::move(then));
  return true;
}

void WritePath::Insert(File& f, uint64_t off, std::string_view data, const OpaqueAuth& cred,
                       uint64_t jseq, bool acked, bool synced, bool behind) {
  if (data.empty()) return;
  const uint64_t end = off + data.size();
  Split(f, off);
  Split(f, end);
  // Older bytes of the range are superseded, whatever their state: the wire
  // range of a WRITE in flight stays in flights, so the new data is not
  // sent before that WRITE is answered. The journal records of what they
  // overwrite are kept (their references move, none is let go of here):
  // by the new piece when it is not journaled; for the new record `jseq`
  // in overwritten_ otherwise, until its append is known to be on disk.
  std::vector<uint64_t> kept;
  // Stamps come from one counter, so a file forgotten and made again goes
  // on from where it was (a COMMIT waiting for the journal keeps its own).
  uint64_t seq = f.seq = ++stamps_;
  bool extended = false;
  for (auto it = f.pieces.lower_bound(off); it != f.pieces.end() && it->first < end;) {
    auto next = std::next(it);
    kept.insert(kept.end(), it->second.records.begin(), it->second.records.end());
    acked |= it->second.acked;
    behind |= it->second.behind;
    synced |= it->second.synced;
    seq = std::min(seq, it->second.seq);
    extended |= it->second.state != Piece::kDirty || it->second.extended;
    Erase(f, it, false);
    it = next;
  }
  Piece p;
  p.data.assign(data);
  p.cred = cred;
  p.acked = acked;
  p.behind = behind;
  p.synced = synced;
  p.seq = seq;
  p.extended = extended;
  if (jseq != 0) {
    RefRecord(f.fh, jseq, f.seq);
    p.records.push_back(jseq);
    if (!kept.empty()) {
      std::vector<uint64_t>& held = overwritten_[jseq];
      held.insert(held.end(), kept.begin(), kept.end());
    }
  } else {
    p.records = std::move(kept);
  }
  f.pieces.emplace(off, std::move(p));
  f.bytes += data.size();
  stats_.buffered_bytes += data.size();
  stats_.max_buffered_bytes = std::max(stats_.max_buffered_bytes, stats_.buffered_bytes);
}

bool WritePath::KeepsAcknowledged(const Piece& p) const {
  // A record of an acknowledged write (on disk, or on its way): its bytes,
  // or those this piece replaced, were answered from the journal. A record
  // of a write that was not keeps what that write replaced, looked at in
  // turn (RecordsKeptBy).
  const std::vector<uint64_t> kept = RecordsKeptBy(p);
  return std::any_of(kept.begin(), kept.end(),
                     [&](uint64_t r) { return !unacknowledged_.contains(r); });
}

std::vector<uint64_t> WritePath::RecordsKeptBy(const Piece& p) const {
  std::vector<uint64_t> all = p.records;
  std::unordered_set<uint64_t> seen(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i) {
    if (auto o = overwritten_.find(all[i]); o != overwritten_.end()) {
      for (uint64_t older : o->second) {
        if (seen.insert(older).second) all.push_back(older);
      }
    }
  }
  return all;
}

void WritePath::ReleaseOverwritten(uint64_t jseq) {
  auto it = overwritten_.find(jseq);
  if (it == overwritten_.end()) return;
  std::vector<uint64_t> records = std::move(it->second);
  overwritten_.erase(it);
  UnrefRecords(std::move(records));
}

bool WritePath::Holds(const File& f, uint64_t off, uint64_t end, uint64_t stamp) {
  auto it = f.pieces.upper_bound(off);
  if (it != f.pieces.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.data.size() > off && prev->second.seq <= stamp) return true;
  }
  if (stamp >= f.seq) return it != f.pieces.end() && it->first < end;
  for (; it != f.pieces.end() && it->first < end; ++it) {
    if (it->second.seq <= stamp) return true;
  }
  return false;
}

bool WritePath::SentAndWaitedFor(const File& f, uint64_t off, uint64_t end) {
  if (f.waiters.empty() && f.barriers.empty()) return false;
  auto it = f.pieces.upper_bound(off);
  if (it != f.pieces.begin()) --it;
  for (; it != f.pieces.end() && it->first < end; ++it) {
    const Piece& p = it->second;
    const uint64_t p_end = it->first + p.data.size();
    // The first bytes over them are taken: the call waits a round longer.
    if (p_end <= off || p.state == Piece::kDirty || !p.extended) continue;
    for (const Waiter& w : f.waiters) {
      if (!w.stable && w.error == NFS3_OK && w.stamp >= p.seq && w.off < p_end &&
          it->first < w.end) {
        return true;
      }
    }
    // A READ or GETATTR waits for bytes sent, not for a COMMIT.
    for (const Barrier& b : f.barriers) {
      if (b.stamp >= p.seq && (b.stable || p.state == Piece::kSending)) return true;
    }
  }
  return false;
}

uint32_t WritePath::OlderStates(const File& f, uint64_t stamp) {
  uint32_t states = 0;
  for (const auto& [off, p] : f.pieces) {
    if (p.seq <= stamp) states |= 1u << p.state;
  }
  return states;
}

void WritePath::LearnOwn(const File& f, uint32_t proc, const void* args, RpcReply* r,
                         const OpaqueAuth& cred) {
  struct Scope {
    const File** slot;
    ~Scope() { *slot = nullptr; }
  } scope{&learning_};
  learning_ = &f;
  learn_(*FindNfsProc(proc), args, r, *f.exp, cred);
}

void WritePath::ForgetAttributes(std::string_view fh) {
  auto it = files_.find(std::string(fh));
  if (it == files_.end() || it->second.get() == learning_) return;
  File& f = *it->second;
  f.attr.reset();
  f.attr_ambiguous = false;
  f.changed_at = std::chrono::steady_clock::now();
  f.changed_seq = f.calls_sent;
}

void WritePath::ForgetAttributesBefore(std::string_view fh, NfsTime ctime) {
  auto it = files_.find(std::string(fh));
  if (it == files_.end()) return;
  File& f = *it->second;
  f.attr_floor = std::max(f.attr_floor, ctime);
}

namespace {

// Whether two sets of attributes of one ctime show different states (a
// server clock tick can hold several changes): size, times other than
// atime, link count, mode or owner.
bool Disagree(const fattr3& a, const fattr3& b) {
  return ChangeId::FromFattr(a) != ChangeId::FromFattr(b) ||
         PermId::FromFattr(a) != PermId::FromFattr(b) || a.nlink != b.nlink;
}

}  // namespace

void WritePath::LearnAttr(File& f, const wcc_data& w, bool solo, uint64_t seq,
                          const RpcReply& r) {
  using TimePoint = std::chrono::steady_clock::time_point;
  // A call sent before the last change the cache told of (or written more
  // than once since, when the reply may answer a transmission from before
  // it) may show the file from before that change: it teaches nothing to a
  // file known by nothing since, and is ordered by ctime against what a
  // later reply taught. A call made after the change left after it.
  const bool may_predate =
      f.changed_at != TimePoint{} && seq <= f.changed_seq &&
      (r.transmissions > 1 || (r.sent_at != TimePoint{} && r.sent_at <= f.changed_at));
  if (may_predate) {
    if (!f.attr) return;
    solo = false;
  }
  if (!w.after.attributes_follow) {
    // What the file looks like after this call is not known.
    f.attr.reset();
    f.attr_ambiguous = false;
    return;
  }
  const fattr3& a = w.after.post_op_attr_u.attributes;
  const int order = f.attr ? CompareCtime(a, *f.attr) : 1;
  if (solo || order > 0) {
    f.attr = a;
    f.attr_ambiguous = false;
  } else if (order == 0) {
    if (Disagree(a, *f.attr)) f.attr_ambiguous = true;
    // Of one ctime, a reply that may predate the change is the older.
    if (!may_predate) f.attr = a;
  }
}

void WritePath::ForgetIfIdle(const std::string& fh) {
  auto it = files_.find(fh);
  if (it == files_.end()) return;
  const File& f = *it->second;
  if (!f.pieces.empty() || !f.flights.empty() || f.commit_id != 0 || !f.waiters.empty() ||
      !f.barriers.empty() || f.window || f.flush_scheduled || f.retry_scheduled ||
      f.blocked > 0 || !f.parked.empty()) {
    return;
  }
  // Kept, as long as few files are: for its gathering history, or for
  // errors its writers have yet to be told. Past that, a file with errors
  // goes too (else a writer over its quota could have the proxy keep every
  // file it ever wrote): the bytes they refused were answered UNSTABLE
  // (from the buffer or the journal), so a verifier has changed (the
  // file's, lost_, or the journal's), and their writers' COMMITs show it;
  // they send again and meet the error themselves. Errors no verifier
  // tells of (bytes answered FILE_SYNC from the journal) outlive the file
  // in orphaned_errors_.
  const bool keep = f.last_batch > 1 || f.lone > 0 || !f.errors.empty();
  if (keep && files_.size() <= kMaxIdleFiles) return;
  std::vector<KeptError> uncovered;
  for (const KeptError& e : f.errors) {
    if (e.uncovered) uncovered.push_back(e);
  }
  if (!uncovered.empty()) {
    // Bounded by the errors held (each a writer's key and a status).
    constexpr size_t kMaxOrphaned = 65536;
    const size_t n = uncovered.size();
    orphaned_errors_.Put(fh, std::move(uncovered), n);
    while (orphaned_errors_.charge() > kMaxOrphaned) {
      NFSEDGE_LOG(kError) << "write path: more than " << kMaxOrphaned
                          << " errors held for bytes answered stable from the edge journal "
                             "and lost; the oldest file's writers are no longer told";
      orphaned_errors_.Erase(orphaned_errors_.Oldest()->key);
    }
  }
  files_.erase(it);
}

void WritePath::Recover(const JournalRecord& r, const Export& exp) {
  File& f = FileFor(r.fh, exp);
  // Answered from the journal before the restart (UNSTABLE, for all it
  // knows: lost, it needs a new verifier).
  // (Answered UNSTABLE or FILE_SYNC, the record does not say: both.)
  Insert(f, r.offset, r.data, r.cred, r.seq, /*acked=*/true, /*synced=*/true);
  ReleaseOverwritten(r.seq);  // on disk already
  stats_.recovered++;
  recovered_.insert(r.fh);
  recovered_upto_ = stamps_;
}

bool WritePath::HoldRecovered(const std::function<void()>& then) {
  while (!recovered_.empty()) {
    const auto it = recovered_.begin();
    if (Hold(*it, /*stable=*/true, then, recovered_upto_)) return true;
    recovered_.erase(it);  // stable and out of the journal
  }
  return false;
}

}  // namespace nfsedge
