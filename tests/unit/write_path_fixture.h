// The fixture of the WritePath tests (write_path_test): a fake upstream
// that holds every call until the test answers it, a fake clock and timers
// run by hand, and a fake edge journal.
#ifndef NFSEDGE_TESTS_UNIT_WRITE_PATH_FIXTURE_H_
#define NFSEDGE_TESTS_UNIT_WRITE_PATH_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/clock.h"
#include "proxy/nfs_procs.h"
#include "proxy/write_path.h"
#include "rpc/rpc_message.h"
#include "rpc/xdr_codec.h"
#include "xdr_test_util.h"
#include "nfs_xdr_builders.h"

namespace nfsedge::write_path_test {

using test_xdr::Proc;

using Verf = std::array<char, 8>;
constexpr Verf kV1{'v', '1'};
constexpr Verf kV2{'v', '2'};

// Moves `clock` by `d`, running the `timers` (by due time) that fall due.
inline void AdvanceRunning(FakeClock& clock,
                           std::multimap<MonoTime, std::function<void()>>& timers, Duration d) {
  const MonoTime until = clock.MonoNow() + d;
  while (!timers.empty() && timers.begin()->first <= until) {
    auto it = timers.begin();
    clock.Advance(it->first - clock.MonoNow());
    auto fn = std::move(it->second);
    timers.erase(it);
    fn();
  }
  clock.Advance(until - clock.MonoNow());
}

// An upstream that keeps every call until the test answers it.
class HeldUpstream : public RpcCaller {
 public:
  struct Held {
    uint32_t proc;
    std::string args;
    ReplyCallback done;
    bool answered = false;
    OpaqueAuth cred;
    std::chrono::steady_clock::time_point sent_at = std::chrono::steady_clock::now();
  };
  Status Call(uint32_t, uint32_t, uint32_t proc, const OpaqueAuth& cred, std::string_view args,
              ReplyCallback done) override {
    if (refuse) return Status(StatusCode::kResourceExhausted, "full");
    calls.push_back(Held{proc, std::string(args), std::move(done), false, cred});
    return Status::Ok();
  }
  size_t Count(uint32_t proc) const {
    size_t n = 0;
    for (const Held& h : calls) n += h.proc == proc;
    return n;
  }
  // Index of the first unanswered call, or -1.
  int Pending() const {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (!calls[i].answered) return static_cast<int>(i);
    }
    return -1;
  }
  void Answer(size_t i, const std::string& results) {
    RpcReply r;
    r.header.reply_stat = kMsgAccepted;
    r.header.accept_stat = kSuccess;
    r.record = results;
    r.header.results_offset = 0;
    Run(i, std::move(r));
  }
  // An accepted reply to call `i` that did not run it (`stat`: SYSTEM_ERR,
  // GARBAGE_ARGS, PROC_UNAVAIL, ...).
  void NotRun(size_t i, AcceptStat stat) {
    RpcReply r;
    r.header.reply_stat = kMsgAccepted;
    r.header.accept_stat = stat;
    Run(i, std::move(r));
  }
  // An RPC-level refusal of call `i` (MSG_DENIED, AUTH_ERROR).
  void Deny(size_t i) {
    RpcReply r;
    r.header.reply_stat = kMsgDenied;
    Run(i, std::move(r));
  }
  // Marks call `i` answered and runs its callback with `r`, moved out of
  // `calls` first: the callback may make calls, which grow the vector.
  void Run(size_t i, RpcReply r) {
    calls[i].answered = true;
    ReplyCallback done = std::move(calls[i].done);
    done(std::move(r));
  }
  std::vector<Held> calls;
  bool refuse = false;
};

// Answers held call `i` of `u` with a whole reply record (RPC header and
// `results`), as an upstream channel does: the proxy passes forwarded
// replies on as records, with the client's xid put in.
// `transmissions` is how many times the call was written (more than one:
// sent again after a reconnect, and `sent_at` is the last time).
inline void AnswerRecord(HeldUpstream& u, size_t i, const std::string& results,
                         uint32_t transmissions = 1) {
  RpcReply r;
  r.record = EncodeAcceptedReply(4242, kSuccess) + results;
  StatusOr<ReplyHeader> h = ParseReply(r.record);
  ASSERT_TRUE(h.ok());
  r.header = *h;
  r.sent_at = u.calls[i].sent_at;
  r.transmissions = transmissions;
  u.Run(i, std::move(r));
}

struct SentWrite {
  uint64_t offset;
  stable_how stable;
  std::string data;
};

inline SentWrite DecodeWriteArgs(const std::string& wire) {
  XdrValue<WRITE3args> a(Proc(xdr_WRITE3args));
  EXPECT_TRUE(a.Decode(wire));
  std::string canonical;  // the proxy encodes WRITE3args by hand: byte for byte
  EXPECT_TRUE(XdrEncode(Proc(xdr_WRITE3args), &a.get(), &canonical) && canonical == wire);
  return SentWrite{a->offset, a->stable, std::string(a->data.data_val, a->data.data_len)};
}

inline fattr3 Attr(uint64_t size, uint32_t ctime) {
  fattr3 a{};
  a.type = NF3REG;
  a.size = size;
  a.ctime.seconds = ctime;
  a.mtime.seconds = ctime;
  return a;
}

// The count of seeds a model-based test runs: `fixed`, or the one the
// environment variable NFSEDGE_MODEL_SEEDS sets (a long run).
inline uint32_t SeedCount(uint32_t fixed) {
  const char* env = std::getenv("NFSEDGE_MODEL_SEEDS");
  if (env == nullptr) return fixed;
  char* end = nullptr;
  const unsigned long n = std::strtoul(env, &end, 10);
  return end != env && *end == '\0' && n > 0 ? static_cast<uint32_t>(n) : fixed;
}

inline std::string CommitFail(nfsstat3 status) {
  COMMIT3res res{};
  res.status = status;
  std::string out;
  EXPECT_TRUE(XdrEncode(Proc(xdr_COMMIT3res), &res, &out));
  return out;
}

inline std::string WriteOk(uint32_t count, stable_how committed, const Verf& verf,
                           const fattr3& after) {
  WRITE3res res{};
  res.status = NFS3_OK;
  WRITE3resok& ok = res.WRITE3res_u.resok;
  ok.count = count;
  ok.committed = committed;
  std::copy(verf.begin(), verf.end(), ok.verf);
  ok.file_wcc.after.attributes_follow = TRUE;
  ok.file_wcc.after.post_op_attr_u.attributes = after;
  std::string out;
  EXPECT_TRUE(XdrEncode(Proc(xdr_WRITE3res), &res, &out));
  return out;
}

inline std::string WriteFail(nfsstat3 status) {
  WRITE3res res{};
  res.status = status;
  std::string out;
  EXPECT_TRUE(XdrEncode(Proc(xdr_WRITE3res), &res, &out));
  return out;
}

inline std::string CommitOk(const Verf& verf, const fattr3& after) {
  COMMIT3res res{};
  res.status = NFS3_OK;
  std::copy(verf.begin(), verf.end(), res.COMMIT3res_u.resok.verf);
  res.COMMIT3res_u.resok.file_wcc.after.attributes_follow = TRUE;
  res.COMMIT3res_u.resok.file_wcc.after.post_op_attr_u.attributes = after;
  std::string out;
  EXPECT_TRUE(XdrEncode(Proc(xdr_COMMIT3res), &res, &out));
  return out;
}

// What a client got.
struct ClientReply {
  nfsstat3 status = NFS3ERR_IO;
  uint32_t count = 0;
  stable_how committed = UNSTABLE;
  Verf verf{};
  std::optional<fattr3> after;
};

inline ClientReply DecodeWriteReply(const std::string& r) {
  XdrValue<WRITE3res> res(Proc(xdr_WRITE3res));
  EXPECT_TRUE(res.Decode(r));
  ClientReply c;
  c.status = res->status;
  if (res->status == NFS3_OK) {
    const WRITE3resok& ok = res->WRITE3res_u.resok;
    c.count = ok.count;
    c.committed = ok.committed;
    std::copy(ok.verf, ok.verf + 8, c.verf.begin());
    if (ok.file_wcc.after.attributes_follow) c.after = ok.file_wcc.after.post_op_attr_u.attributes;
  }
  return c;
}

inline ClientReply DecodeCommitReply(const std::string& r) {
  XdrValue<COMMIT3res> res(Proc(xdr_COMMIT3res));
  EXPECT_TRUE(res.Decode(r));
  ClientReply c;
  c.status = res->status;
  if (res->status == NFS3_OK) {
    std::copy(res->COMMIT3res_u.resok.verf, res->COMMIT3res_u.resok.verf + 8, c.verf.begin());
  }
  return c;
}

// A credential told apart from others by `who` alone.
inline OpaqueAuth Cred(const std::string& who) {
  OpaqueAuth c;
  c.flavor = 0;
  c.body = who;
  return c;
}

inline ExportConfig MakeExport(uint32_t window_ms) {
  ExportConfig c;
  c.path = "/e";
  c.upstream_path = "/e";
  c.gather_window_ms = window_ms;
  c.write_behind = true;
  return c;
}

// A journal whose appends and syncs reach the disk when the test says.
class FakeJournal : public JournalSink {
 public:
  const std::array<char, 8>& verifier() const override { return verf_; }
  uint64_t NextSeq() override { return next_++; }
  void Append(JournalRecord r, std::function<void(Status)> done) override {
    events.push_back("+" + std::to_string(r.seq));
    pending_.push_back({r.seq, std::move(done)});
    records.push_back(std::move(r));
  }
  void Sync(std::function<void(Status)> done) override { pending_.push_back({0, std::move(done)}); }
  void Remove(uint64_t seq, std::function<void(Status)> done) override {
    removed.push_back(seq);
    events.push_back("-" + std::to_string(seq));
    if (done) pending_.push_back({0, std::move(done)});
  }
  void ChangeVerifier() override { verf_[7]++; }
  // The disk answers every pending append and sync, in order, with `s`.
  void Complete(const Status& s = Status::Ok()) {
    std::vector<std::pair<uint64_t, std::function<void(Status)>>> p = std::move(pending_);
    pending_.clear();
    for (auto& [seq, done] : p) {
      if (seq != 0) events.push_back((s.ok() ? "ok" : "fail") + std::to_string(seq));
      done(s);
    }
  }
  // The disk answers the oldest pending append or sync only, with `s`.
  void CompleteFirst(const Status& s) {
    if (pending_.empty()) return;
    auto [seq, done] = std::move(pending_.front());
    pending_.erase(pending_.begin());
    if (seq != 0) events.push_back((s.ok() ? "ok" : "fail") + std::to_string(seq));
    done(s);
  }
  std::vector<JournalRecord> records;
  std::vector<uint64_t> removed;
  // In order: "+N" record N appended (queued), "okN" / "failN" the disk
  // took it / refused it, "-N" record N removed (queued).
  std::vector<std::string> events;

 private:
  std::array<char, 8> verf_{'j', 'o', 'u', 'r', 'n', 'a', 'l'};
  uint64_t next_ = 1;
  std::vector<std::pair<uint64_t, std::function<void(Status)>>> pending_;  // seq 0: a Sync
};

class WritePathTest : public ::testing::Test {
 protected:
  WritePathTest() : exp_(0, MakeExport(5)), nowait_(1, MakeExport(0)) {
    options_.write_size = 64 << 10;
    options_.max_transfer = 1 << 20;
    options_.verifier = Verf{'p', 'r', 'o', 'x', 'y'};
    Make();
  }

  // A write path as after a client's mount (the server's sizes learned),
  // or, with `learned` false, as after a restart.
  void Make(bool learned = true) {
    wp_ = std::make_unique<WritePath>(
        clock_, up_, bg_,
        [this](Duration d, std::function<void()> fn) {
          timers_.emplace(clock_.MonoNow() + d, std::move(fn));
        },
        [this](const NfsProc& p, const void*, RpcReply*, const Export&, const OpaqueAuth& cred) {
          learned_.push_back(p.proc);
          learned_creds_.push_back(cred);
        },
        options_);
    if (learned) wp_->LearnFsinfo(FsinfoResults());
  }

  // Two stable writes far apart (tags 1 and 2, at 0 and 65536) on a file
  // that gathers: sent as two WRITEs, answered UNSTABLE with `v1` and `v2`;
  // the COMMIT that follows is call 2, unanswered.
  void TwoApartAnsweredUnstable(const std::string& a, const std::string& b, const Verf& v1,
                                const Verf& v2) {
    options_.lone_after = 0;
    Make();
    Write(1, 0, a, FILE_SYNC);
    Write(2, 65536, b, FILE_SYNC);
    ASSERT_EQ(up_.calls.size(), 2u);
    up_.Answer(0, WriteOk(static_cast<uint32_t>(a.size()), UNSTABLE, v1, Attr(1, 1)));
    up_.Answer(1, WriteOk(static_cast<uint32_t>(b.size()), UNSTABLE, v2, Attr(1, 2)));
    ASSERT_EQ(up_.calls.size(), 3u);
  }

  // Moves the clock by `d`, running the timers that fall due.
  void Advance(Duration d) { AdvanceRunning(clock_, timers_, d); }

  // Sends a client WRITE of `data` at `offset` of `fh` to the write path.
  void SendWrite(const std::string& fh, uint64_t offset, const std::string& data,
                 stable_how how, const OpaqueAuth& cred, bool may_buffer, const Export& exp,
                 WritePath::ReplyFn reply, WritePath::ForwardFn forward) {
    WRITE3args a{};
    a.file = FhView(fh);
    a.offset = offset;
    a.count = static_cast<count3>(data.size());
    a.stable = how;
    a.data.data_val = const_cast<char*>(data.data());
    a.data.data_len = static_cast<u_int>(data.size());
    wp_->Write(a, exp, cred, may_buffer, std::move(reply), std::move(forward));
  }
  // Sends a client COMMIT of [offset, offset + count) of `fh` (0, 0: all).
  void SendCommit(const std::string& fh, uint64_t offset, uint32_t count, const OpaqueAuth& cred,
                  const Export& exp, WritePath::ReplyFn reply, WritePath::ForwardFn forward) {
    COMMIT3args a{};
    a.file = FhView(fh);
    a.offset = offset;
    a.count = count;
    wp_->Commit(a, exp, cred, std::move(reply), std::move(forward));
  }
  // Sends a client WRITE; its replies are appended to `replies_` tagged.
  void Write(int tag, uint64_t offset, const std::string& data, stable_how how,
             bool may_buffer = true, const Export* exp = nullptr) {
    SendWrite(
        fh_, offset, data, how, cred_, may_buffer, exp ? *exp : exp_,
        [this, tag](std::string r) { replies_.push_back({tag, DecodeWriteReply(r)}); },
        [this, tag] { forwarded_.push_back(tag); });
  }
  void Commit(int tag, const Export* exp = nullptr) {
    SendCommit(
        fh_, 0, 0, cred_, exp ? *exp : exp_,
        [this, tag](std::string r) { replies_.push_back({tag, DecodeCommitReply(r)}); },
        [this, tag] { forwarded_.push_back(tag); });
  }
  // Answers every call `u` holds, and those its answers bring: every WRITE
  // UNSTABLE with kV1, every COMMIT with kV1. Returns true iff it answered
  // any.
  bool AnswerAll(HeldUpstream& u) {
    bool any = false;
    for (int i = u.Pending(); i >= 0; i = u.Pending()) {
      any = true;
      AnswerOne(u, static_cast<size_t>(i));
    }
    return any;
  }
  // Answers call `i` of `u`: a WRITE UNSTABLE with kV1, a COMMIT with kV1.
  void AnswerOne(HeldUpstream& u, size_t i) {
    const auto& c = u.calls[i];
    if (c.proc == NFSPROC3_WRITE) {
      SentWrite w = DecodeWriteArgs(c.args);
      u.Answer(i, WriteOk(static_cast<uint32_t>(w.data.size()), UNSTABLE, kV1, Attr(0, 9)));
    } else {
      u.Answer(i, CommitOk(kV1, Attr(0, 10)));
    }
  }
  // Answers every pending call of `u`: WRITEs whose data is all `refused`
  // bytes with `refusal`, other WRITEs UNSTABLE with kV1, COMMITs with kV1.
  // Returns how many it answered.
  size_t AnswerAllBut(HeldUpstream& u, char refused, nfsstat3 refusal) {
    size_t n = 0;
    for (int i = u.Pending(); i >= 0; i = u.Pending(), ++n) {
      const auto& c = u.calls[static_cast<size_t>(i)];
      if (c.proc == NFSPROC3_WRITE) {
        SentWrite w = DecodeWriteArgs(c.args);
        const bool theirs = !w.data.empty() && w.data == std::string(w.data.size(), refused);
        u.Answer(static_cast<size_t>(i),
                 theirs ? WriteFail(refusal)
                        : WriteOk(static_cast<uint32_t>(w.data.size()), UNSTABLE, kV1,
                                  Attr(0, 9)));
      } else {
        u.Answer(static_cast<size_t>(i), CommitOk(kV1, Attr(0, 10)));
      }
    }
    return n;
  }
  // Flushes and answers both upstreams until nothing is left to answer or
  // to run.
  void Settle() {
    for (int round = 0; round < 100; ++round) {
      Advance(options_.flush_delay);
      const bool up = AnswerAll(up_);
      const bool bg = AnswerAll(bg_);
      if (!up && !bg && timers_.empty()) return;
    }
    ADD_FAILURE() << "the write path keeps calling the upstream";
  }
  std::vector<int> Tags() const {
    std::vector<int> t;
    for (const auto& [tag, r] : replies_) t.push_back(tag);
    return t;
  }

  FakeClock clock_;
  HeldUpstream up_, bg_;
  Export exp_, nowait_;
  WritePathOptions options_;
  std::unique_ptr<WritePath> wp_;
  std::multimap<MonoTime, std::function<void()>> timers_;
  std::vector<uint32_t> learned_;
  std::vector<OpaqueAuth> learned_creds_;  // the credential each was learned for
  std::vector<std::pair<int, ClientReply>> replies_;
  std::vector<int> forwarded_;
  std::string fh_ = "file-handle-1";
  OpaqueAuth cred_;
};

// The write path with an edge journal (FakeJournal) and a write_back
// export.
class JournalTest : public WritePathTest {
 protected:
  JournalTest() : back_(2, WriteBackExport()) {
    options_.journal = &journal_;
    Make();
  }
  static ExportConfig WriteBackExport() {
    ExportConfig c = MakeExport(5);
    c.write_back = true;
    return c;
  }
  // The client write on the write_back export.
  void WriteBack(int tag, uint64_t offset, const std::string& data, stable_how how,
                 bool may_buffer = true) {
    Write(tag, offset, data, how, may_buffer, &back_);
  }
  void CommitBack(int tag) { Commit(tag, &back_); }
  // The reply to the client call tagged `tag`, or null.
  const ClientReply* ReplyOf(int tag) const {
    for (const auto& [t, r] : replies_) {
      if (t == tag) return &r;
    }
    return nullptr;
  }
  // The background upstream refuses every WRITE with `status`, round after
  // round, until nothing is buffered (the data is given up on) or 40 rounds.
  void RefuseUntilGivenUp(nfsstat3 status) {
    for (int round = 0; round < 40 && wp_->stats().buffered_bytes > 0; ++round) {
      Advance(std::chrono::seconds(31));
      for (int i = bg_.Pending(); i >= 0; i = bg_.Pending()) {
        bg_.Answer(static_cast<size_t>(i), WriteFail(status));
      }
    }
  }
  // Flushes what is buffered and answers the background upstream.
  void FlushAndAnswer() {
    Advance(options_.flush_delay);
    AnswerAll(bg_);
  }

  FakeJournal journal_;
  Export back_;
};

}  // namespace nfsedge::write_path_test

#endif  // NFSEDGE_TESTS_UNIT_WRITE_PATH_FIXTURE_H_
