#include "proxy/write_path.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "proxy/write_path_state.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

using write_path_internal::kToEnd;

namespace {

// The end of a COMMIT's range: count 0 (RFC 1813), or a range past the
// largest offset, is to the end of the file.
uint64_t RangeEnd(uint64_t offset, uint32_t count) {
  return count == 0 || count > kToEnd - offset ? kToEnd : offset + count;
}

}  // namespace

using write_path_internal::CommitError;
using write_path_internal::RandomVerifier;
using write_path_internal::SameCred;
using write_path_internal::WriteError;

WritePath::WritePath(const Clock& clock, RpcCaller& upstream, RpcCaller& background,
                     ScheduleFn schedule, LearnFn learn, const WritePathOptions& options)
    : clock_(clock),
      upstream_(upstream),
      background_caller_(background),
      schedule_(std::move(schedule)),
      learn_(std::move(learn)),
      options_(options),
      verifier_(options.verifier) {
  if (verifier_ == std::array<char, 8>{}) verifier_ = RandomVerifier();
  write_size_ = std::min<uint32_t>(options.write_size ? options.write_size : (1u << 20),
                                   options.max_transfer);
  max_write_ = options.max_transfer;
}

WritePath::~WritePath() = default;

void WritePath::SetLimits(const WritePathOptions& o) {
  options_.max_bytes = o.max_bytes;
  options_.max_file_bytes = o.max_file_bytes;
  options_.flush_delay = o.flush_delay;
  options_.max_background = o.max_background;
  options_.journal_give_up = o.journal_give_up;
  AdmitBlocked();
}

size_t WritePath::buffered_files() const {
  size_t n = 0;
  for (const auto& [fh, f] : files_) n += !f->pieces.empty();
  return n;
}

void WritePath::FlushAll() {
  std::vector<std::string> held;
  for (const auto& [fh, f] : files_) {
    if (!f->pieces.empty()) held.push_back(fh);
  }
  for (const std::string& fh : held) {
    auto it = files_.find(fh);
    if (it == files_.end()) continue;
    File& f = *it->second;
    f.flush_all = true;  // commit once what is written is answered
    if (f.waiters.empty() && !f.retry_scheduled) SendDirty(f, false, false);
    Pump(f);
  }
}

void WritePath::Write(const WRITE3args& a, const Export& exp, const OpaqueAuth& cred,
                      bool may_buffer, ReplyFn reply, ForwardFn forward, ReadmitFn readmit) {
  const std::string fh(a.file.data.data_val, a.file.data.data_len);
  const bool write_back = exp.config().write_back && options_.journal != nullptr;
  const bool write_behind = exp.config().write_behind || write_back;
  if (a.stable == UNSTABLE && !write_behind) {
    // Write-behind off: UNSTABLE writes and COMMITs pass as sent, after
    // what the proxy holds of the file. Stable: bytes written upstream but
    // not committed may go again (another COMMIT verifier, a refusal kept)
    // and land over this write; so may journal records not yet removed
    // from the disk, replayed by a restart.
    if (KeptErrorAnswered(fh, cred, reply, false)) return;
    stats_.forwarded++;
    if (!Hold(fh, true, forward)) forward();
    return;
  }
  if (stale_.Peek(fh) != nullptr) {
    reply(WriteError(NFS3ERR_STALE));
    return;
  }
  const uint64_t n = std::min<uint64_t>(a.count, a.data.data_len);
  if (n == 0 && !may_buffer) {
    // RFC 1813: a WRITE of no bytes succeeds "barring errors due to
    // permissions checking": without evidence, the upstream checks (after
    // what the proxy holds of the file, whose attributes it answers).
    if (KeptErrorAnswered(fh, cred, reply, false)) return;
    stats_.forwarded++;
    if (!Hold(fh, false, forward)) forward();
    return;
  }
  if (n > kToEnd - a.offset) {
    // Past the largest offset: no file holds it (RFC 1813: NFS3ERR_FBIG).
    reply(WriteError(NFS3ERR_FBIG));
    return;
  }
  File& f = FileFor(fh, exp);
  if (!fsinfo_known_ && !fsinfo_asked_) AskFsinfo(fh, cred);  // known before the first flush
  if (nfsstat3 e = TakeError(f, cred); e != NFS3_OK) {
    reply(WriteError(e));
    ForgetIfIdle(fh);
    return;
  }
  const bool stable = a.stable != UNSTABLE || !may_buffer;
  // Journaled: only what the ACCESS cache proves the upstream will take.
  const bool journal = write_back && may_buffer;
  auto b = std::make_unique<Blocked>(Blocked{fh, &exp, a.offset, std::string(a.data.data_val, n),
                                             stable, journal, cred, std::move(reply),
                                             std::move(readmit), false, ++arrivals_});
  // No caller's bytes replace another's in the buffer: the upstream judges
  // each caller's own writes (the older one may have been taken without
  // evidence that it may write), and a refusal reaches only its writer. A
  // write over another caller's bytes waits, behind the file's writes
  // already waiting so, until those have left the buffer (stable upstream,
  // or refused); they go upstream at once. So does a write over bytes on
  // their way upstream that a waiting call needs (SentAndWaitedFor).
  // (Behind a write of the file waiting for room it waits there too: that
  // one is parked, if it must be, when room comes, and this after it.)
  if (f.blocked == 0 && (!f.parked.empty() || OthersHeld(f, a.offset, a.offset + n, cred) ||
                         SentAndWaitedFor(f, a.offset, a.offset + n))) {
    Park(f, std::move(b));
    return;
  }
  Enter(f, std::move(b));
}

void WritePath::Accept(File& f, const Export& exp, uint64_t offset, std::string_view data,
                       const OpaqueAuth& cred, bool stable, bool journal, ReplyFn reply) {
  const uint32_t count = static_cast<uint32_t>(data.size());
  uint64_t pending_jseq = 0;
  // On a write_back export every write is appended to the journal: one the
  // ACCESS cache proves the upstream will take (`journal`) is answered from
  // it; any other is answered once stable upstream, its record there only
  // to order it after the older records of the bytes it replaces, which a
  // restart must not replay over it. So is a write of a file with records
  // through another export (nested, or a reload turned write_back off).
  if (!data.empty() && options_.journal != nullptr &&
      (exp.config().write_back || file_records_.contains(f.fh))) {
    // Insert() keeps the records this write overwrites until its append
    // is on disk (OnJournaled), or its bytes are stable upstream if the
    // journal refuses it; appended first, so that their removal reaches
    // the disk with or after this record in either case.
    const uint64_t jseq = options_.journal->NextSeq();
    ReplyFn answer = journal ? std::move(reply) : nullptr;
    // Its place among the file's writes, should it wait for the upstream,
    // and the verifier of the data it joins (a loss meanwhile changes it).
    const uint64_t stamp = stamps_ + 1;  // the one Insert() gives it
    const std::array<char, 8> verf = options_.journal->verifier();
    appending_.emplace(jseq, NFS3_OK);
    options_.journal->Append(
        JournalRecord{jseq, f.fh, exp.config().path, cred, offset, std::string(data)},
        [weak = std::weak_ptr<WritePath*>(self_), fh = f.fh, &exp, jseq, offset, count, stable,
         stamp, verf, answer = std::move(answer),
         writer = write_path_internal::WriterKey(cred)](Status s) {
          if (auto self = weak.lock()) {
            (*self)->OnJournaled(fh, exp, jseq, offset, count, stable, stamp, verf, s, answer,
                                 writer);
          }
        });
    // Answered UNSTABLE (from the journal, or from the buffer through an
    // export without write_back): lost, it needs a new verifier.
    Insert(f, offset, data, cred, jseq, !stable, journal && stable,
           /*behind=*/!journal && !stable);
    if (journal) {
      ScheduleFlush(f);
      Pump(f);
      return;
    }
    // Answered once stable upstream and its record is written: a restart
    // must not find the older records of its bytes without it.
    unacknowledged_.insert(jseq);
    pending_jseq = jseq;
  } else {
    Insert(f, offset, data, cred, 0, !stable, false, /*behind=*/!stable);
  }
  if (stable) {
    SeedFromWriter(f, cred);
    f.waiters.push_back(Waiter{false, offset, offset + data.size(), count, std::move(reply), f.seq,
                               pending_jseq, NFS3_OK, false, &exp,
                               write_path_internal::WriterKey(cred)});
    Gather(f);
    NoteWriter(f);
  } else {
    stats_.buffered_writes++;
    reply(WriteReply(f, exp, count, false));
    ScheduleFlush(f);
  }
  Pump(f);
}

void WritePath::OnJournaled(const std::string& fh, const Export& exp, uint64_t jseq,
                            uint64_t offset, uint32_t count, bool stable, uint64_t stamp,
                            const std::array<char, 8>& verf, const Status& s, ReplyFn reply,
                            const std::string& writer) {
  nfsstat3 dropped = NFS3_OK;
  if (auto a = appending_.find(jseq); a != appending_.end()) {
    dropped = a->second;
    appending_.erase(a);
  }
  if (s.ok()) {
    stats_.journaled++;
    // A write not answered from the journal keeps what it replaced until
    // its bytes are stable upstream (UnrefRecords): they may be refused.
    if (!unacknowledged_.contains(jseq)) ReleaseOverwritten(jseq);
  } else {
    // The journal could not take it: answered once stable upstream
    // instead; the records it overwrote stay until then (UnrefRecords).
    stats_.journal_failed++;
    if (journal_refs_.contains(jseq)) unacknowledged_.insert(jseq);
  }
  if (!reply) {  // a waiter's own record: it may be answered now
    if (auto it = files_.find(fh); it != files_.end()) Pump(*it->second);
    return;
  }
  if (dropped != NFS3_OK) {
    // Its bytes were refused upstream and given up on meanwhile.
    reply(WriteError(dropped));
    return;
  }
  if (s.ok()) {
    reply(JournaledReply(verf, count, stable, false));
    return;
  }
  auto it = files_.find(fh);
  if (it == files_.end() || !Holds(*it->second, offset, offset + count)) {
    // Its bytes are no longer buffered: stable upstream, or dropped with
    // the file (STALE).
    if (stale_.Peek(fh) != nullptr) {
      reply(WriteError(NFS3ERR_STALE));
      return;
    }
    if (it == files_.end()) {
      // Stable upstream, but older records of its range may not be
      // removed on disk yet: a restart would replay them over it. It has
      // no record of its own to replay after them.
      stats_.stable_writes++;
      std::function<void()> send = [reply = std::move(reply),
                                    r = JournaledReply(verf, count, true, false)] { reply(r); };
      if (!AfterRemovals(fh, Before(stamp), send)) send();
      return;
    }
  }
  File& f = *it->second;
  // In its place among the stable writes waiting (arrival order, rule 3):
  // before those that came after it (a later one may share its stamp, as
  // a write of no bytes or a COMMIT does).
  auto at = std::find_if(f.waiters.begin(), f.waiters.end(),
                         [stamp](const Waiter& w) { return w.stamp >= stamp; });
  f.waiters.insert(
      at, Waiter{false, offset, offset + count, count, std::move(reply), stamp, 0, NFS3_OK, false,
                 &exp, writer});
  Pump(f);
}

void WritePath::Commit(const COMMIT3args& a, const Export& exp, const OpaqueAuth& cred,
                       ReplyFn reply, ForwardFn forward) {
  const std::string fh(a.file.data.data_val, a.file.data.data_len);
  if (exp.config().write_back && options_.journal != nullptr) {
    // Every buffered write of the file was journaled before it was
    // answered: the COMMIT needs only what was appended before it on disk.
    if (stale_.Peek(fh) != nullptr) {
      reply(CommitError(NFS3ERR_STALE));
      return;
    }
    auto it = files_.find(fh);
    if (nfsstat3 e = it == files_.end() ? TakeOrphanedError(fh, cred) : TakeError(*it->second, cred);
        e != NFS3_OK) {
      reply(CommitError(e));
      ForgetIfIdle(fh);
      return;
    }
    // Its place among the file's writes, should it wait for the upstream.
    const uint64_t stamp = stamps_;
    options_.journal->Sync([weak = std::weak_ptr<WritePath*>(self_), fh, &exp, cred, stamp,
                            a_off = a.offset, a_count = a.count,
                            reply = std::move(reply)](Status s) mutable {
      auto self = weak.lock();
      if (!self) return;
      WritePath& w = **self;
      if (s.ok()) {
        w.stats_.client_commits++;
        w.CommittedFromJournal(fh, a_off, RangeEnd(a_off, a_count), stamp);
        reply(w.JournaledReply(w.options_.journal->verifier(), 0, true, true));
        return;
      }
      // No journal: the COMMIT waits for the data upstream, after the
      // writes that came before it.
      File& f = w.FileFor(fh, exp);
      auto at = std::find_if(f.waiters.begin(), f.waiters.end(),
                             [stamp](const Waiter& x) { return x.stamp > stamp; });
      f.waiters.insert(at, Waiter{true, a_off, RangeEnd(a_off, a_count), 0, std::move(reply),
                                  stamp, 0, NFS3_OK, false, &exp,
                                  write_path_internal::WriterKey(cred)});
      w.Pump(f);
    });
    return;
  }
  if (!exp.config().write_behind) {
    if (KeptErrorAnswered(fh, cred, reply, true)) return;
    stats_.forwarded++;
    if (!Hold(fh, true, forward)) forward();
    return;
  }
  if (stale_.Peek(fh) != nullptr) {
    reply(CommitError(NFS3ERR_STALE));
    return;
  }
  File& f = FileFor(fh, exp);
  if (!fsinfo_known_ && !fsinfo_asked_) AskFsinfo(fh, cred);  // known before the first flush
  if (nfsstat3 e = TakeError(f, cred); e != NFS3_OK) {
    reply(CommitError(e));
    ForgetIfIdle(fh);
    return;
  }
  const uint64_t end = RangeEnd(a.offset, a.count);
  if (f.waiters.empty() && !Holds(f, a.offset, end)) {
    stats_.client_commits++;
    // After the removals of records of bytes now stable upstream are on
    // disk (AnswerWaiters).
    std::function<void()> send = [reply = std::move(reply), r = CommitReply(f, exp)] { reply(r); };
    if (!AfterRemovals(fh, Before(f.seq), send)) send();
    ForgetIfIdle(fh);
    return;
  }
  f.waiters.push_back(Waiter{true, a.offset, end, 0, std::move(reply), f.seq, 0, NFS3_OK, false,
                             &exp, write_path_internal::WriterKey(cred)});
  Pump(f);
}

bool WritePath::Hold(std::string_view fh, bool stable, std::function<void()> then,
                     uint64_t before) {
  auto it = files_.find(std::string(fh));
  // It waits for the writes that came before it, not for those after.
  if (it == files_.end() || BarrierMet(*it->second, stable, std::min(it->second->seq, before))) {
    return stable && AfterRemovals(std::string(fh), std::min(stamps_, before), then);
  }
  const uint64_t stamp = std::min(it->second->seq, before);
  stats_.barriers++;
  it->second->barriers.push_back(Barrier{stable, stamp, std::move(then)});
  Pump(*it->second);
  return true;
}

bool WritePath::OthersHeld(const File& f, uint64_t off, uint64_t end, const OpaqueAuth& cred) {
  auto it = f.pieces.upper_bound(off);
  if (it != f.pieces.begin()) --it;
  for (; it != f.pieces.end() && it->first < end; ++it) {
    if (it->first + it->second.data.size() > off && !SameCred(it->second.cred, cred)) {
      return true;
    }
  }
  return false;
}

bool WritePath::Unsent(std::string_view fh) const {
  auto it = files_.find(std::string(fh));
  return it != files_.end() && !BarrierMet(*it->second, false, UINT64_MAX);
}

bool WritePath::BarrierMet(const File& f, bool stable, uint64_t stamp) {
  const uint32_t states = OlderStates(f, stamp);
  return stable ? states == 0 : (states & ~(1u << Piece::kWritten)) == 0;
}

bool WritePath::Busy(const File& f) const {
  return f.urgent_flights > f.lone_flights || (f.commit_id != 0 && f.commit_urgent);
}

void WritePath::Gather(File& f) {
  const bool company = f.waiters.size() > 1;
  const bool was_lone = options_.lone_after > 0 && f.lone >= options_.lone_after;
  if (company) f.lone = 0;  // company: another write waits too
  if (f.window) {
    if (f.waiters.size() >= f.expected) {
      EndWindow(f);
    } else if (f.expected == kOpenEnded) {
      ArmWindowEnd(f);  // writes still coming
    }
    return;
  }
  if (Busy(f)) return;  // joins the next batch, sent when this one is answered
  if (company && was_lone && f.lone_flights > 0 && f.exp->config().gather_window_ms > 0) {
    // A lone write is upstream and company came: a pipelining writer has
    // more in flight. Its writes do not wait a round trip for the lone one:
    // they gather for a window (or until the lone write is answered) and go.
    OpenWindow(f, kOpenEnded);
    return;
  }
  if (company) return;
  const uint32_t window_ms = f.exp->config().gather_window_ms;
  if (window_ms == 0 || (options_.lone_after > 0 && f.lone >= options_.lone_after)) {
    stats_.lone++;
    return;
  }
  OpenWindow(f, f.first_window ? kOpenEnded : std::max<size_t>(2, f.last_batch));
  f.first_window = false;
}

void WritePath::EndWindow(File& f) {
  f.window = false;
  stats_.procrastination_us += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock_.MonoNow() - f.window_start)
          .count());
}

void WritePath::CloseWindow(const std::string& fh, uint64_t gen) {
  auto it = files_.find(fh);
  if (it == files_.end()) return;
  File& f = *it->second;
  if (!f.window || f.window_gen != gen) return;
  EndWindow(f);
  if (f.waiters.size() <= 1) {
    f.lone++;  // the window found no company
  } else {
    f.lone = 0;
  }
  NoteWriter(f);
  Pump(f);
}

size_t WritePath::AnswerWaiters(File& f) {
  size_t answered = 0;
  // In arrival order: a client whose bytes the upstream refused gets the
  // error in its turn (DropAndFail), the others once theirs are stable.
  while (!f.waiters.empty() &&
         (f.waiters.front().error != NFS3_OK ||
          (!appending_.contains(f.waiters.front().jseq) &&
           (f.waiters.front().stable ||
            !Holds(f, f.waiters.front().off, f.waiters.front().end, f.waiters.front().stamp))))) {
    Waiter& w = f.waiters.front();
    std::string r;
    if (w.error != NFS3_OK) {
      r = w.commit ? CommitError(w.error) : WriteError(w.error);
    } else if (w.commit) {
      stats_.client_commits++;
      r = CommitReply(f, *w.exp);
    } else {
      stats_.stable_writes++;
      stats_.gathered++;
      answered++;
      r = WriteReply(f, *w.exp, w.count, true);
    }
    // Bytes of journal records may be stable upstream now, their records'
    // removal not yet on disk: a reply before it would let a restart replay
    // older bytes over what the reply said is stable. It waits for the
    // removals of the records of writes before it (a record of its own
    // write replays its own bytes), and so do the replies after it.
    std::function<void()> send = [reply = std::move(w.reply), r = std::move(r)] { reply(r); };
    if (!AfterRemovals(f.fh, Before(w.stamp), send)) f.ready.push_back(std::move(send));
    f.waiters.pop_front();
  }
  for (auto it = f.barriers.begin(); it != f.barriers.end();) {
    if (BarrierMet(f, it->stable, it->stamp)) {
      if (!it->stable || !AfterRemovals(f.fh, it->stamp, it->then)) {
        f.ready.push_back(std::move(it->then));
      }
      it = f.barriers.erase(it);
    } else {
      ++it;
    }
  }
  return answered;
}

void WritePath::Pump(File& f) {
  const size_t answered = AnswerWaiters(f);
  // A lone write answered during the window its company opened: the window
  // starts again as the one below, which knows how many writers to expect.
  if (answered > 0 && f.window) EndWindow(f);
  // A batch was answered and writes wait for the next one: its writers
  // send their next writes at once, so wait for them to join (on a WAN this
  // keeps all of a pipelined client's writes in one batch).
  if (answered > 0 && !f.waiters.empty() && !f.window && !Busy(f) &&
      f.exp->config().gather_window_ms > 0 &&
      (options_.lone_after == 0 || f.lone < options_.lone_after)) {
    OpenWindow(f, f.waiters.size() + answered);
  }
  bool dirty = false, written = false;
  uint64_t written_bytes = 0;
  for (const auto& [off, p] : f.pieces) {
    dirty |= p.state == Piece::kDirty;
    if (p.state == Piece::kWritten) {
      written = true;
      if (p.commit == 0) written_bytes += p.data.size();
    }
  }
  const bool urgent = (!f.waiters.empty() && !f.window) || !f.barriers.empty();
  if (f.retry_scheduled) {
    // The upstream could not take the last call: nothing goes before the
    // retry (RetryLater).
  } else if (urgent) {
    if (!Busy(f)) {
      // What the waiting calls need: the writes that came before them.
      // Writes that keep coming after them are not waited for (they go
      // with the batch if dirty, and in the background otherwise).
      uint64_t stamp = 0;
      for (const Waiter& w : f.waiters) stamp = std::max(stamp, w.stamp);
      for (const Barrier& b : f.barriers) stamp = std::max(stamp, b.stamp);
      const uint32_t older = OlderStates(f, stamp);
      if (older & (1u << Piece::kDirty)) {
        f.last_batch = f.waiters.size();
        SendDirty(f, true, false);
      } else if (written && f.commit_id == 0 && (older & (1u << Piece::kSending)) == 0) {
        bool need = false;  // a waiter or a stable barrier needs the commit
        for (const Waiter& w : f.waiters) need |= Holds(f, w.off, w.end, w.stamp);
        for (const Barrier& b : f.barriers) need |= b.stable && OlderStates(f, b.stamp) != 0;
        if (need) SendCommit(f, true);
      }
    }
  } else if (f.waiters.empty()) {
    // Background: whole upstream WRITEs as they fill (everything under
    // pressure), a COMMIT when half the file's room is written or when the
    // flush delay found the file idle. Not while stable writes gather in a
    // window: their batch carries the file's dirty data.
    // (A write waiting for another caller's bytes to leave: they go and
    // are committed at once.)
    const bool pressure = f.blocked > 0 || !f.parked.empty() || TotalShort();
    if (dirty) SendDirty(f, false, !pressure);
    if (f.commit_id == 0 && written_bytes > 0 &&
        (written_bytes >= options_.max_file_bytes / 2 ||
         ((f.flush_all || pressure) && f.flights.empty() && !dirty))) {
      SendCommit(f, false);
    }
    if (f.pieces.empty()) f.flush_all = false;
  }
  std::vector<std::function<void()>> ready = std::move(f.ready);
  f.ready.clear();
  const std::string fh = f.fh;
  const bool parked = !f.parked.empty();
  ForgetIfIdle(fh);  // f may be gone from here on
  for (auto& r : ready) r();
  if (parked) AdmitParked(fh);
}

void WritePath::SendDirty(File& f, bool urgent, bool whole_only) {
  auto overlaps_flight = [&f](uint64_t off, uint64_t len) {
    for (const Flight& fl : f.flights) {
      if (off < fl.off + fl.len && fl.off < off + len) return true;
    }
    return false;
  };
  // Runs of adjacent dirty pieces of one credential, not over a WRITE in
  // flight.
  struct Run {
    uint64_t off, len;
  };
  auto in_sync_flight = [&f](const Piece& p) {
    for (const Flight& fl : f.flights) {
      if (fl.id == p.flight) return fl.sync;
    }
    return false;
  };
  std::vector<Run> runs;
  // Pieces that will need a COMMIT: a FILE_SYNC WRITE would not make the
  // batch stable alone.
  bool written = false;
  for (auto it = f.pieces.begin(); it != f.pieces.end();) {
    const Piece& p = it->second;
    written |= p.state == Piece::kWritten || (p.state == Piece::kSending && !in_sync_flight(p));
    if (p.state != Piece::kDirty || overlaps_flight(it->first, p.data.size())) {
      ++it;
      continue;
    }
    Run run{it->first, 0};
    const OpaqueAuth& cred = p.cred;
    while (it != f.pieces.end() && it->second.state == Piece::kDirty &&
           it->first == run.off + run.len && SameCred(it->second.cred, cred) &&
           !overlaps_flight(it->first, it->second.data.size())) {
      run.len += it->second.data.size();
      ++it;
    }
    runs.push_back(run);
  }
  // One contiguous batch for clients waiting: one FILE_SYNC WRITE, one
  // server commit. Anything else: UNSTABLE WRITEs, then one COMMIT.
  const uint32_t max_write = MaxWrite(), write_size = WriteSize();
  const bool sync =
      urgent && !f.waiters.empty() && runs.size() == 1 && !written && runs[0].len <= max_write;
  const uint64_t limit = sync ? max_write : write_size;
  // A lone file's single write: writes that come while it is upstream need
  // not wait for it (Gather).
  const bool lone =
      sync && f.waiters.size() == 1 && options_.lone_after > 0 && f.lone >= options_.lone_after;
  for (const Run& run : runs) {
    for (uint64_t off = run.off; off < run.off + run.len;) {
      const uint64_t len = std::min(limit, run.off + run.len - off);
      if (!urgent &&
          ((whole_only && len < write_size_) || background_ >= options_.max_background)) {
        // Tried again after the flush delay: what is short of a whole
        // WRITE, and what found every background slot taken (under
        // pressure nothing else may come back to this file). A whole WRITE
        // is the size configured or learned: before FSINFO is answered the
        // 32 KiB pieces wait, to go merged once the server's sizes are known.
        ScheduleFlush(f);
        break;
      }
      if (!SendRun(f, off, len, urgent, sync, lone)) return;
      off += len;
    }
  }
}

bool WritePath::SendRun(File& f, uint64_t off, uint64_t len, bool urgent, bool sync, bool lone) {
  Split(f, off);
  Split(f, off + len);
  const uint64_t id = next_id_++;
  // WRITE3args, with the pieces' bytes copied once, straight into place.
  std::string wire;
  wire.reserve(4 + f.fh.size() + 3 + 8 + 4 + 4 + 4 + len + 3);
  XdrWriter w(&wire);
  w.WriteOpaque(f.fh);
  w.WriteU64(off);
  w.WriteU32(static_cast<uint32_t>(len));
  w.WriteU32(sync ? FILE_SYNC : UNSTABLE);
  w.WriteU32(static_cast<uint32_t>(len));
  const size_t data_at = wire.size();
  OpaqueAuth cred;
  std::vector<Span> spans;
  for (auto it = f.pieces.lower_bound(off); it != f.pieces.end() && it->first < off + len; ++it) {
    if (wire.size() == data_at) cred = it->second.cred;
    spans.push_back(Span{it->first, it->first + it->second.data.size(), it->second.seq, {}});
    wire.append(it->second.data);
    it->second.state = Piece::kSending;
    it->second.flight = id;
  }
  assert(wire.size() - data_at == len);  // SendDirty's runs are adjacent pieces
  if (!fsinfo_known_ && !fsinfo_asked_) AskFsinfo(f.fh, cred);
  wire.append((4 - len % 4) % 4, '\0');
  RpcCaller& caller = urgent ? upstream_ : background_caller_;
  const std::string fh = f.fh;
  Status s = caller.Call(
      kNfsProgram, kNfsVersion, NFSPROC3_WRITE, cred, wire,
      [this, fh, id, urgent](StatusOr<RpcReply> r) { OnWritten(fh, id, urgent, std::move(r)); });
  if (!s.ok()) {
    for (auto& [o, p] : f.pieces) {
      if (p.state == Piece::kSending && p.flight == id) p.state = Piece::kDirty;
    }
    NFSEDGE_LOG(kDebug) << "write path: upstream WRITE not queued: " << s.ToString();
    RetryLater(f);
    return false;
  }
  const bool solo = f.flights.empty() && f.commit_id == 0;
  f.flights.push_back(Flight{id, off, len, cred, clock_.MonoNow(), sync, lone, solo,
                            ++f.calls_sent, std::move(spans), stamps_});
  if (urgent) {
    f.urgent_flights++;
    if (lone) f.lone_flights++;
  } else {
    background_++;
  }
  stats_.upstream_writes++;
  stats_.upstream_bytes += len;
  stats_.max_write = std::max<uint64_t>(stats_.max_write, len);
  if (sync) {
    stats_.sync_writes++;
    stats_.batches++;
  }
  return true;
}

void WritePath::SendCommit(File& f, bool urgent) {
  const uint64_t id = next_id_++;
  // As one of the writers of what it covers; not the one the last COMMIT
  // was refused for, if another wrote some (as that writer, it may be
  // refused again, round after round, and leave the others' bytes
  // uncommitted).
  OpaqueAuth cred;
  bool other = false;
  for (auto& [off, p] : f.pieces) {
    if (p.state == Piece::kWritten && p.commit == 0) {
      p.commit = id;
      const bool not_refused = write_path_internal::WriterKey(p.cred) != f.refused_committer;
      if (!other || not_refused) cred = p.cred;
      other |= not_refused;
    }
  }
  COMMIT3args a{};
  a.file = FhView(f.fh);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_COMMIT3args), &a, &wire);
  RpcCaller& caller = urgent ? upstream_ : background_caller_;
  const std::string fh = f.fh;
  Status s = caller.Call(kNfsProgram, kNfsVersion, NFSPROC3_COMMIT, cred, wire,
                         [this, fh, id, cred](StatusOr<RpcReply> r) {
                           OnCommitted(fh, id, cred, std::move(r));
                         });
  if (!s.ok()) {
    for (auto& [off, p] : f.pieces) {
      if (p.commit == id) p.commit = 0;
    }
    RetryLater(f);
    return;
  }
  f.commit_solo = f.flights.empty();
  f.commit_seq = ++f.calls_sent;
  f.commit_id = id;
  f.commit_urgent = urgent;
  // A flush commits what is written once every WRITE is answered: not yet
  // done while some are in flight.
  if (f.flights.empty()) f.flush_all = false;
  stats_.upstream_commits++;
  if (urgent && !f.waiters.empty()) stats_.batches++;
}

void WritePath::ScheduleFlush(File& f) {
  if (f.flush_scheduled) return;
  f.flush_scheduled = true;
  const std::string fh = f.fh;
  schedule_(options_.flush_delay, [this, fh] {
    auto it = files_.find(fh);
    if (it == files_.end()) return;
    File& f = *it->second;
    f.flush_scheduled = false;
    f.flush_all = true;  // commit once what is written is answered
    if (f.waiters.empty() && !f.retry_scheduled) SendDirty(f, false, false);
    Pump(f);
  });
}

}  // namespace nfsedge
