// WritePath's handling of the upstream's answers to the WRITEs and COMMITs
// it sent: pieces made stable, sent again or dropped with an error, and
// retries (write_path.h).
#include <algorithm>
#include <chrono>

#include "proxy/write_path.h"
#include "proxy/write_path_state.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

using write_path_internal::RandomVerifier;

namespace {

// A write or commit the upstream could not take (no connection, queue full,
// NFS3ERR_JUKEBOX) is tried again after this long.
constexpr auto kRetryDelay = std::chrono::milliseconds(100);
// Retry rounds in a row whose upstream WRITEs were answered NFS3_OK with
// nothing written, after which the file's data is given up on with
// NFS3ERR_IO.
constexpr uint32_t kMaxNoProgress = 10;
// The longest wait between tries of data acknowledged from the edge journal
// that the upstream keeps refusing (DropAndFail).
constexpr Duration kMaxKeptDelay = std::chrono::seconds(30);

// An RPC-level refusal (the upstream denied the credential) is an answer,
// not a transport failure: tried again, it would be refused for ever.
bool Denied(const StatusOr<RpcReply>& r) { return r.ok() && r->header.reply_stat == kMsgDenied; }

// Runs `fn` on each entry of `pieces` whose piece `which` selects; `fn`
// may erase the entry it is given.
template <typename Pieces, typename Which, typename Fn>
void EachOf(Pieces& pieces, const Which& which, const Fn& fn) {
  for (auto it = pieces.begin(); it != pieces.end();) {
    auto next = std::next(it);
    if (which(it->second)) fn(it);
    it = next;
  }
}

}  // namespace

void WritePath::OnWritten(const std::string& fh, uint64_t id, bool urgent, StatusOr<RpcReply> r) {
  if (!urgent) background_--;
  auto fit = files_.find(fh);
  if (fit == files_.end()) return;
  File& f = *fit->second;
  auto fl = std::find_if(f.flights.begin(), f.flights.end(),
                         [id](const Flight& x) { return x.id == id; });
  if (fl == f.flights.end()) {
    if (urgent) f.urgent_flights--;
    return;
  }
  const Flight flight = *fl;
  if (urgent) f.urgent_flights--;
  if (flight.lone) f.lone_flights--;
  f.flights.erase(fl);
  NFSEDGE_LOG(kDebug) << "write path: upstream WRITE of " << flight.len << " bytes answered in "
                      << std::chrono::duration_cast<std::chrono::microseconds>(clock_.MonoNow() -
                                                                               flight.sent)
                             .count()
                      << " us";
  XdrValue<WRITE3res> res(reinterpret_cast<xdrproc_t>(xdr_WRITE3res));
  const bool decoded = Succeeded(r) && res.Decode(r->results());
  auto sent_in_it = [id](const Piece& p) { return p.state == Piece::kSending && p.flight == id; };
  auto each = [&f, &sent_in_it](auto fn) { EachOf(f.pieces, sent_in_it, fn); };
  // Nothing written: tried again later, and given up on after a few such
  // answers in a row (the server's fault; the error reaches the clients as
  // any upstream error does).
  auto no_progress = [&] {
    if (f.GiveUpAfterNoProgress(kMaxNoProgress)) {
      DropAndFail(f, NFS3ERR_IO, sent_in_it, &flight);
    } else {
      each([](auto it) { it->second.state = Piece::kDirty; });
      RetryLater(f);
    }
  };
  if (Denied(r)) {
    DropAndFail(f, NFS3ERR_ACCES, sent_in_it, &flight);
  } else if (!r.ok() || (decoded && res->status == NFS3ERR_JUKEBOX)) {
    each([](auto it) { it->second.state = Piece::kDirty; });
    RetryLater(f);
  } else if (!decoded) {
    // Answered, not run (SYSTEM_ERR, GARBAGE_ARGS, PROC_UNAVAIL) or no
    // WRITE3res to read: as a WRITE that wrote nothing.
    no_progress();
  } else if (res->status != NFS3_OK) {
    LearnAttr(f, res->WRITE3res_u.resfail.file_wcc, flight.solo && flight.seq == f.calls_sent,
              flight.seq, *r);
    DropAndFail(f, res->status, sent_in_it, &flight);
    // A refused WRITE may have written part of its bytes: its wcc data
    // reaches the caches too, and the file's cached blocks go.
    WRITE3args a{};
    a.file = FhView(fh);
    LearnOwn(f, NFSPROC3_WRITE, &a, &*r, flight.cred);
  } else {
    const WRITE3resok& ok = res->WRITE3res_u.resok;
    LearnAttr(f, ok.file_wcc, flight.solo && flight.seq == f.calls_sent, flight.seq, *r);
    if (ok.count == 0 && flight.len > 0) {
      no_progress();
      Pump(f);
      AdmitBlocked();
      return;
    }
    f.no_progress = 0;
    f.refusal_counted = false;
    std::copy(ok.verf, ok.verf + 8, f.upstream_verf.begin());
    const uint64_t done = flight.off + std::min<uint64_t>(ok.count, flight.len);
    if (done < flight.off + flight.len) Split(f, done);  // a short write: the rest again
    each([&](auto it) {
      if (it->first >= done) {
        it->second.state = Piece::kDirty;
      } else if (ok.committed == FILE_SYNC) {
        Erase(f, it);
      } else {
        it->second.state = Piece::kWritten;
        it->second.refused = false;
        it->second.commit = 0;
        it->second.written_at = f.calls_sent;
        std::copy(ok.verf, ok.verf + 8, it->second.verf.begin());
      }
    });
    // Another verifier than an earlier WRITE of the file returned, this
    // WRITE sent after that one was answered (so run after it): the server
    // restarted in between, and lost what it wrote and no COMMIT made
    // stable. Those bytes are the proxy's again at once (sent again, and
    // seen by READs and GETATTRs, which wait for them), not only at the
    // next COMMIT's answer. (A late reply of a WRITE sent before says
    // nothing of the order: the COMMIT's verifier still tells.)
    bool lost = false;
    for (auto& [off, p] : f.pieces) {
      if (p.state != Piece::kWritten || flight.seq <= p.written_at ||
          std::equal(p.verf.begin(), p.verf.end(), ok.verf)) {
        continue;
      }
      stats_.resent += p.data.size();
      p.state = Piece::kDirty;
      p.commit = 0;
      lost = true;
    }
    if (lost) ScheduleFlush(f);
    if (NoneRefused(f)) f.refusals = 0;
    if (ok.committed == FILE_SYNC && done == flight.off + flight.len) MarkStable(f, flight);
    WRITE3args a{};
    a.file = FhView(fh);
    LearnOwn(f, NFSPROC3_WRITE, &a, &*r, flight.cred);
  }
  Pump(f);
  AdmitBlocked();
}

void WritePath::MarkStable(File& f, const Flight& flight) {
  for (Waiter& w : f.waiters) {
    if (w.commit || w.error != NFS3_OK || w.stamp > flight.sent_stamp) continue;
    // Covered by the WRITE's bytes of writes up to its own (spans are in
    // offset order, adjacent).
    uint64_t at = w.off;
    for (const Span& s : flight.spans) {
      if (s.end <= at) continue;
      if (s.off > at || s.seq > w.stamp) break;
      at = s.end;
      if (at >= w.end) break;
    }
    if (at >= w.end) w.stable = true;
  }
}

void WritePath::OnCommitted(const std::string& fh, uint64_t id, const OpaqueAuth& cred,
                            StatusOr<RpcReply> r) {
  const std::string who = write_path_internal::WriterKey(cred);
  auto fit = files_.find(fh);
  if (fit == files_.end()) return;
  File& f = *fit->second;
  // Alone upstream from its sending to its reply: its attributes are the
  // latest.
  const bool solo = f.commit_id == id && f.commit_solo && f.commit_seq == f.calls_sent;
  const uint64_t seq = f.commit_id == id ? f.commit_seq : 0;  // 0: an older COMMIT's
  if (f.commit_id == id) f.commit_id = 0;
  XdrValue<COMMIT3res> res(reinterpret_cast<xdrproc_t>(xdr_COMMIT3res));
  const bool decoded = Succeeded(r) && res.Decode(r->results());
  auto covered = [id](const Piece& p) { return p.state == Piece::kWritten && p.commit == id; };
  auto each = [&f, &covered](auto fn) { EachOf(f.pieces, covered, fn); };
  const bool refused_caller =
      Denied(r) || (decoded && (res->status == NFS3ERR_ACCES || res->status == NFS3ERR_PERM));
  if (refused_caller) {
    // The COMMIT's caller (one of the writers, `who`) may not: only its
    // own bytes fail; the others' are committed by another writer's COMMIT
    // (the flush sends it).
    if (!Denied(r)) LearnAttr(f, res->COMMIT3res_u.resfail.file_wcc, solo, seq, *r);
    f.refused_committer = who;
    DropAndFail(f, Denied(r) ? NFS3ERR_ACCES : res->status, [&covered, &who](const Piece& p) {
      return covered(p) && write_path_internal::WriterKey(p.cred) == who;
    });
    if (!Denied(r)) {
      // With the refused writer's credential: what the caches hold for it
      // (its ACCESS result, which lets its writes be buffered) goes.
      COMMIT3args a{};
      a.file = FhView(fh);
      LearnOwn(f, NFSPROC3_COMMIT, &a, &*r, cred);
    }
    bool others = false;
    each([&others](auto it) {
      it->second.commit = 0;
      others = true;
    });
    if (others) ScheduleFlush(f);
  } else if (!r.ok() || (decoded && res->status == NFS3ERR_JUKEBOX)) {
    each([](auto it) { it->second.commit = 0; });
    RetryLater(f);
  } else if (!decoded) {
    // Answered, not run (SYSTEM_ERR, GARBAGE_ARGS, PROC_UNAVAIL) or no
    // COMMIT3res to read: tried again, and given up on after a few such
    // answers in a row, as a WRITE that writes nothing (OnWritten).
    if (f.GiveUpAfterNoProgress(kMaxNoProgress)) {
      DropAndFail(f, NFS3ERR_IO, covered);
    } else {
      each([](auto it) { it->second.commit = 0; });
      RetryLater(f);
    }
  } else if (res->status != NFS3_OK) {
    LearnAttr(f, res->COMMIT3res_u.resfail.file_wcc, solo, seq, *r);
    DropAndFail(f, res->status, covered);
    COMMIT3args a{};
    a.file = FhView(fh);
    LearnOwn(f, NFSPROC3_COMMIT, &a, &*r, OpaqueAuth());
  } else {
    const COMMIT3resok& ok = res->COMMIT3res_u.resok;
    LearnAttr(f, ok.file_wcc, solo, seq, *r);
    f.no_progress = 0;
    f.refused_committer.clear();
    std::array<char, 8> verf{};
    std::copy(ok.verf, ok.verf + 8, verf.begin());
    f.upstream_verf = verf;
    f.refusal_counted = false;
    bool resend = false;
    each([&](auto it) {
      if (it->second.verf == verf) {
        Erase(f, it);
      } else {
        // The server lost what it had not committed: send it again, and
        // commit it (the flush does both, whatever else comes).
        stats_.resent += it->second.data.size();
        it->second.state = Piece::kDirty;
        it->second.commit = 0;
        resend = true;
      }
    });
    if (resend) ScheduleFlush(f);
    if (NoneRefused(f)) f.refusals = 0;
    COMMIT3args a{};
    a.file = FhView(fh);
    OpaqueAuth cred;
    LearnOwn(f, NFSPROC3_COMMIT, &a, &*r, cred);
  }
  Pump(f);
  AdmitBlocked();
}

void WritePath::DropAndFail(File& f, nfsstat3 status,
                            const std::function<bool(const Piece&)>& which, const Flight* flight) {
  // Bytes acknowledged from the edge journal are stable by the proxy's
  // promise: they stay (in the buffer and the journal) and go again later,
  // unless the file is gone, for WritePathOptions::journal_give_up after
  // the first refusal in a row: by default a refusal that lasts longer
  // (quota, a full disk) must not hold the file's reads and attributes
  // (and the journal's newer records) for as long, and is an error as it
  // is without the journal.
  // Each piece by how its bytes were answered, whatever the export the file
  // was last written through: through nested exports, one file may hold
  // journaled bytes and bytes answered from the buffer alone.
  const bool journaled = options_.journal != nullptr;
  // Given up on once a round starts that long after the first refusal in a
  // row, for every call of that round (and after, until the file's data is
  // all gone or the upstream takes some). A round that kept its first
  // refusal keeps the others.
  const Duration bound = options_.journal_give_up;
  const bool give_up = !f.refusal_counted && f.refusals > 0 && bound > Duration::zero() &&
                       clock_.MonoNow() - f.refused_since >= bound;
  const bool keep = status != NFS3ERR_STALE && journaled && !give_up;
  bool acked = false, kept = false, lost = false;
  std::vector<std::string> uncovered;  // writers of bytes answered stable from the journal
  uint64_t lost_bytes = 0;  // of bytes acknowledged from the journal, dropped
  std::vector<std::string> writers;  // whose bytes were refused
  auto refused = [&writers](const OpaqueAuth& cred) {
    std::string w = write_path_internal::WriterKey(cred);
    if (std::find(writers.begin(), writers.end(), w) == writers.end()) writers.push_back(w);
  };
  if (flight != nullptr) refused(flight->cred);
  // Whose bytes were refused: the pieces dropped, and what the refused
  // WRITE carried (bytes newer writes replaced since included) but for the
  // pieces kept for another try. (A write that came after the WRITE was
  // sent had none of its bytes in it.)
  std::vector<Span> dropped, kept_spans;  // in offset order
  if (journaled && !keep && status != NFS3ERR_STALE) {
    // Data answered UNSTABLE from the journal is about to be lost: the
    // journal's new verifier is queued before the removal of its records,
    // so that no disk holds the one without the other.
    bool answered = false;
    EachOf(f.pieces, which, [&](auto it) {
      answered |= it->second.acked && KeepsAcknowledged(it->second);
    });
    if (answered) {
      options_.journal->ChangeVerifier();
      stats_.verifier_changes++;
    }
  }
  EachOf(f.pieces, which, [&](auto it) {
    refused(it->second.cred);
    const bool acknowledged = journaled && KeepsAcknowledged(it->second);
    if (keep && acknowledged) {
      it->second.state = Piece::kDirty;
      it->second.commit = 0;
      it->second.refused = true;
      kept = true;
      kept_spans.push_back(Span{it->first, it->first + it->second.data.size(), it->second.seq, {}});
      return;
    }
    lost |= acknowledged;
    if (acknowledged && it->second.synced) {
      uncovered.push_back(write_path_internal::WriterKey(it->second.cred));
    }
    if (acknowledged) lost_bytes += it->second.data.size();
    // Bytes answered from the journal change the journal's verifier (see
    // above); those answered from the buffer alone, the file's.
    acked |= it->second.behind;
    // A write whose append is still on its way learns the error, also one
    // whose bytes a later write replaced (its record kept through the
    // later one's): none of them reached the upstream.
    for (uint64_t r : RecordsKeptBy(it->second)) {
      if (auto a = appending_.find(r); a != appending_.end()) a->second = status;
    }
    dropped.push_back(Span{it->first, it->first + it->second.data.size(), it->second.seq,
                           write_path_internal::WriterKey(it->second.cred)});
    Erase(f, it);
  });
  // Returns true iff [lo, hi) has bytes outside the pieces kept.
  auto not_kept = [&kept_spans](uint64_t lo, uint64_t hi) {
    for (const Span& k : kept_spans) {
      if (k.end <= lo) continue;
      if (k.off > lo) return true;
      lo = k.end;
      if (lo >= hi) return false;
    }
    return lo < hi;
  };
  // A gone file fails every write waiting on it. A COMMIT waiting is told
  // only its own caller's refusal (Waiter::writer).
  std::vector<std::string> told;  // writers told in their turn
  const std::string flight_writer =
      flight != nullptr ? write_path_internal::WriterKey(flight->cred) : std::string();
  for (Waiter& w : f.waiters) {
    if (w.stable) continue;  // the upstream took its bytes
    auto mine = [&w](const std::string& writer) { return !w.commit || w.writer == writer; };
    auto over = [&w](const Span& s) { return s.off < w.end && w.off < s.end && s.seq <= w.stamp; };
    bool theirs = status == NFS3ERR_STALE ||
                  std::any_of(dropped.begin(), dropped.end(),
                              [&](const Span& s) { return over(s) && mine(s.writer); });
    if (flight != nullptr && w.stamp <= flight->sent_stamp && mine(flight_writer)) {
      for (const Span& s : flight->spans) {
        theirs |= over(s) && not_kept(std::max(s.off, w.off), std::min(s.end, w.end));
      }
    }
    if (theirs && w.error == NFS3_OK) {
      w.error = status;
      told.push_back(w.writer);
    }
  }
  if (lost && status != NFS3ERR_STALE) {
    NFSEDGE_LOG(kError) << "write path: upstream error " << status << " on writes acknowledged "
                        << "from the edge journal, " << f.refusals
                        << " refusals in a row: given up, their data is lost";
  } else if (lost) {
    // Not always a removed file: a volume restored or moved at the head
    // office gives its files new handles.
    NFSEDGE_LOG(kWarn) << "write path: " << lost_bytes
                       << " bytes acknowledged from the edge journal answered NFS3ERR_STALE by "
                          "the upstream (the file is gone, or its handle changed): dropped";
  }
  if (give_up && f.pieces.empty()) {
    f.refusals = 0;
    f.refusal_counted = false;
  }
  Failed(f, status, writers, acked, kept, told, uncovered);
  if (kept) {
    // Counted once a round (several WRITEs of the file may be refused).
    if (!f.refusal_counted) {
      if (f.refusals == 0) f.refused_since = clock_.MonoNow();
      f.refusals++;
      f.refusal_counted = true;
    }
    const uint32_t doublings = std::min<uint32_t>(f.refusals - 1, 16);
    RetryLater(f, std::min<Duration>(kRetryDelay * (1u << doublings), kMaxKeptDelay));
  }
}

void WritePath::Failed(File& f, nfsstat3 status, const std::vector<std::string>& writers,
                       bool acknowledged, bool kept, const std::vector<std::string>& told,
                       const std::vector<std::string>& uncovered) {
  stats_.errors++;
  // Kept for each writer whose bytes were refused (a file gone answers
  // STALE to all: stale_). Bounded: a writer crowded out still sees the
  // file's new verifier, below, if its data was answered from the buffer.
  constexpr size_t kMaxErrors = 64;
  for (const std::string& w : writers) {
    if (status == NFS3ERR_STALE) break;
    if (std::find(told.begin(), told.end(), w) != told.end()) continue;
    const bool only_notice = std::find(uncovered.begin(), uncovered.end(), w) != uncovered.end();
    auto it = std::find_if(f.errors.begin(), f.errors.end(),
                           [&w](const KeptError& e) { return e.writer == w; });
    if (it != f.errors.end()) {
      it->status = status;
      it->uncovered |= only_notice;
      continue;
    }
    if (f.errors.size() >= kMaxErrors) {
      // Crowded out: one a verifier change also tells of, if there is one.
      auto out = std::find_if(f.errors.begin(), f.errors.end(),
                              [](const KeptError& e) { return !e.uncovered; });
      if (out == f.errors.end()) {
        out = f.errors.begin();
        NFSEDGE_LOG(kError) << "write path: more than " << kMaxErrors
                            << " writers of one file lost bytes answered stable from the edge "
                               "journal; one of them is no longer told";
      }
      f.errors.erase(out);
    }
    f.errors.push_back(KeptError{w, status, only_notice});
  }
  // (For bytes answered from the journal, DropAndFail changes the
  // journal's verifier: it is kept across restarts, which a change per file
  // could not be.)
  if (acknowledged && status != NFS3ERR_STALE) {
    // Data answered from the buffer is lost, and the error reaches only the
    // next WRITE or COMMIT of the file by its writers: every other client
    // that wrote it must learn it too. A new write verifier for the file does that, as a
    // server restart would: their COMMITs show it, and they send again what
    // they had not committed (and meet the error themselves, if it lasts).
    // Other files keep theirs (a writer over its quota must not have every
    // client resend).
    constexpr size_t kMaxLost = 4096;
    const uint64_t* lost = lost_.Peek(f.fh);
    lost_.Put(f.fh, lost ? *lost + 1 : 1);
    stats_.verifier_changes++;
    if (lost_.size() > kMaxLost) {
      // The file forgotten here would answer the shared verifier again:
      // that one changes (for every file, as at a restart).
      lost_.Erase(lost_.Oldest()->key);
      verifier_ = RandomVerifier();
    }
  }
  if (status == NFS3ERR_STALE) {
    // The file is gone (typically removed with writes still buffered): its
    // handle stays stale for good, so later WRITEs and COMMITs get STALE
    // at once, and the file's state need not be kept for them.
    constexpr size_t kMaxStale = 4096;
    stale_.Put(f.fh, true);
    while (stale_.size() > kMaxStale) {
      // Forgotten, the handle's next COMMIT would be answered with the
      // verifier its dropped bytes were acknowledged under, as stable: the
      // verifiers change (as at a restart), so that its writers send them
      // again and meet the STALE themselves.
      stale_.Erase(stale_.Oldest()->key);
      verifier_ = RandomVerifier();
      if (options_.journal) options_.journal->ChangeVerifier();
      stats_.verifier_changes++;
    }
    NFSEDGE_LOG(kDebug) << "write path: buffered writes of a removed file (NFS3ERR_STALE)";
    return;
  }
  if (kept) {
    NFSEDGE_LOG(kWarn) << "write path: upstream error " << status
                       << " on writes acknowledged from the edge journal (refusal " << f.refusals + 1
                       << " in a row): kept and sent again later; answered to the file's next "
                          "WRITE or COMMIT";
    return;
  }
  NFSEDGE_LOG(kWarn) << "write path: upstream error " << status
                     << " on a buffered write; answered to the file's next WRITE or COMMIT";
}

nfsstat3 WritePath::TakeError(File& f, const OpaqueAuth& cred) {
  if (f.errors.empty()) return NFS3_OK;
  const std::string w = write_path_internal::WriterKey(cred);
  auto it = std::find_if(f.errors.begin(), f.errors.end(),
                         [&w](const KeptError& e) { return e.writer == w; });
  if (it == f.errors.end()) return NFS3_OK;
  const nfsstat3 e = it->status;
  f.errors.erase(it);
  return e;
}

nfsstat3 WritePath::TakeOrphanedError(const std::string& fh, const OpaqueAuth& cred) {
  std::vector<KeptError>* kept = orphaned_errors_.Peek(fh);
  if (kept == nullptr) return NFS3_OK;
  const std::string w = write_path_internal::WriterKey(cred);
  auto it = std::find_if(kept->begin(), kept->end(),
                         [&w](const KeptError& e) { return e.writer == w; });
  if (it == kept->end()) return NFS3_OK;
  const nfsstat3 e = it->status;
  kept->erase(it);
  if (kept->empty()) orphaned_errors_.Erase(fh);
  return e;
}

void WritePath::RetryLater(File& f) { RetryLater(f, kRetryDelay); }

void WritePath::RetryLater(File& f, Duration delay) {
  if (f.retry_scheduled) return;
  f.retry_scheduled = true;
  const std::string fh = f.fh;
  schedule_(delay, [this, fh] {
    auto it = files_.find(fh);
    if (it == files_.end()) return;
    File& f = *it->second;
    f.retry_scheduled = false;
    f.refusal_counted = false;  // a new round
    // A flush that came meanwhile sent nothing: what it would have sent
    // goes now; otherwise the next flush sends the rest.
    if (f.waiters.empty()) {
      if (f.flush_all) {
        SendDirty(f, false, false);
      } else {
        ScheduleFlush(f);
      }
    }
    Pump(f);
  });
}

void WritePath::LearnFsinfo(std::string_view results) {
  XdrValue<FSINFO3res> res(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res));
  if (!res.Decode(results) || res->status != NFS3_OK) return;
  fsinfo_known_ = true;
  const FSINFO3resok& ok = res->FSINFO3res_u.resok;
  if (ok.wtmax) max_write_ = std::min(ok.wtmax, options_.max_transfer);
  if (options_.write_size != 0) {
    write_size_ = std::min(write_size_, max_write_);
    return;
  }
  uint32_t ws = ok.wtpref ? ok.wtpref : ok.wtmax;
  if (ws == 0) return;
  write_size_ = std::min(ws, max_write_);
}

void WritePath::AskFsinfo(const std::string& fh, const OpaqueAuth& cred) {
  // The proxy's own FSINFO, on the file about to be written: clients that
  // mounted before a restart do not ask again, and the journal is replayed
  // before any client does.
  // Not answered (an error, a refusal for this credential): asked again,
  // at the next write, only after kFsinfoRetry, not at every write.
  std::string wire;
  XdrWriter(&wire).WriteOpaque(fh);
  fsinfo_asked_ = true;
  std::weak_ptr<WritePath*> weak(self_);
  auto again = [weak] {
    if (auto self = weak.lock()) (*self)->fsinfo_asked_ = false;
  };
  Status s = upstream_.Call(kNfsProgram, kNfsVersion, NFSPROC3_FSINFO, cred, wire,
                            [this, weak, again](StatusOr<RpcReply> r) {
                              if (!weak.lock()) return;
                              if (Succeeded(r)) LearnFsinfo(r->results());
                              if (fsinfo_known_) {
                                fsinfo_asked_ = false;
                              } else {
                                schedule_(kFsinfoRetry, again);
                              }
                            });
  if (!s.ok()) schedule_(kFsinfoRetry, again);
}

bool WritePath::NoneRefused(const File& f) {
  return std::none_of(f.pieces.begin(), f.pieces.end(),
                      [](const auto& p) { return p.second.refused; });
}

}  // namespace nfsedge
