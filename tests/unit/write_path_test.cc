// WritePath as a state machine: a fake upstream that holds every call until
// the test answers it, a fake clock and timers run by hand. Checks DESIGN
// rules 1-4 and 8 on the write path: FIFO replies, no reply before the data
// is stable upstream, resend on a verifier change, lone writers not
// delayed, bounded buffers, flush errors reported, reads held for writes.
#include "proxy/write_path.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "proxy/nfs_procs.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

template <typename F>
xdrproc_t Proc(F f) {
  return reinterpret_cast<xdrproc_t>(f);
}

using Verf = std::array<char, 8>;
constexpr Verf kV1{'v', '1'};
constexpr Verf kV2{'v', '2'};

// An upstream that keeps every call until the test answers it.
class HeldUpstream : public RpcCaller {
 public:
  struct Held {
    uint32_t proc;
    std::string args;
    ReplyCallback done;
    bool answered = false;
  };
  Status Call(uint32_t, uint32_t, uint32_t proc, const OpaqueAuth&, std::string_view args,
              ReplyCallback done) override {
    if (refuse) return Status(StatusCode::kResourceExhausted, "full");
    calls.push_back(Held{proc, std::string(args), std::move(done)});
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
    calls[i].answered = true;
    calls[i].done(std::move(r));
  }
  std::vector<Held> calls;
  bool refuse = false;
};

struct SentWrite {
  uint64_t offset;
  stable_how stable;
  std::string data;
};

SentWrite DecodeWriteArgs(const std::string& wire) {
  XdrValue<WRITE3args> a(Proc(xdr_WRITE3args));
  EXPECT_TRUE(a.Decode(wire));
  std::string canonical;  // the proxy encodes WRITE3args by hand: byte for byte
  EXPECT_TRUE(XdrEncode(Proc(xdr_WRITE3args), &a.get(), &canonical) && canonical == wire);
  return SentWrite{a->offset, a->stable, std::string(a->data.data_val, a->data.data_len)};
}

fattr3 Attr(uint64_t size, uint32_t ctime) {
  fattr3 a{};
  a.type = NF3REG;
  a.size = size;
  a.ctime.seconds = ctime;
  a.mtime.seconds = ctime;
  return a;
}

std::string WriteOk(uint32_t count, stable_how committed, const Verf& verf, const fattr3& after) {
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

std::string WriteFail(nfsstat3 status) {
  WRITE3res res{};
  res.status = status;
  std::string out;
  EXPECT_TRUE(XdrEncode(Proc(xdr_WRITE3res), &res, &out));
  return out;
}

std::string CommitOk(const Verf& verf, const fattr3& after) {
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

ClientReply DecodeWriteReply(const std::string& r) {
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

ClientReply DecodeCommitReply(const std::string& r) {
  XdrValue<COMMIT3res> res(Proc(xdr_COMMIT3res));
  EXPECT_TRUE(res.Decode(r));
  ClientReply c;
  c.status = res->status;
  if (res->status == NFS3_OK) {
    std::copy(res->COMMIT3res_u.resok.verf, res->COMMIT3res_u.resok.verf + 8, c.verf.begin());
  }
  return c;
}

ExportConfig MakeExport(uint32_t window_ms) {
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
    records.push_back(std::move(r));
    pending_.push_back(std::move(done));
  }
  void Sync(std::function<void(Status)> done) override { pending_.push_back(std::move(done)); }
  void Remove(uint64_t seq) override { removed.push_back(seq); }
  // The disk answers every pending append and sync, in order.
  void Complete(const Status& s = Status::Ok()) {
    std::vector<std::function<void(Status)>> p = std::move(pending_);
    pending_.clear();
    for (auto& d : p) d(s);
  }
  std::vector<JournalRecord> records;
  std::vector<uint64_t> removed;

 private:
  std::array<char, 8> verf_{'j', 'o', 'u', 'r', 'n', 'a', 'l'};
  uint64_t next_ = 1;
  std::vector<std::function<void(Status)>> pending_;
};

class WritePathTest : public ::testing::Test {
 protected:
  WritePathTest() : exp_(0, MakeExport(5)), nowait_(1, MakeExport(0)) {
    options_.write_size = 64 << 10;
    options_.max_transfer = 1 << 20;
    options_.verifier = Verf{'p', 'r', 'o', 'x', 'y'};
    Make();
  }

  void Make() {
    wp_ = std::make_unique<WritePath>(
        clock_, up_, bg_,
        [this](Duration d, std::function<void()> fn) {
          timers_.emplace(clock_.MonoNow() + d, std::move(fn));
        },
        [this](const NfsProc& p, const void*, RpcReply*, const Export&, const OpaqueAuth&) {
          learned_.push_back(p.proc);
        },
        options_);
  }

  // Moves the clock by `d`, running the timers that fall due.
  void Advance(Duration d) {
    const MonoTime until = clock_.MonoNow() + d;
    while (!timers_.empty() && timers_.begin()->first <= until) {
      auto it = timers_.begin();
      clock_.Advance(it->first - clock_.MonoNow());
      auto fn = std::move(it->second);
      timers_.erase(it);
      fn();
    }
    clock_.Advance(until - clock_.MonoNow());
  }

  // Sends a client WRITE; its replies are appended to `replies_` tagged.
  void Write(int tag, uint64_t offset, const std::string& data, stable_how how,
             bool may_buffer = true, const Export* exp = nullptr) {
    WRITE3args a{};
    a.file = FhView(fh_);
    a.offset = offset;
    a.count = static_cast<count3>(data.size());
    a.stable = how;
    a.data.data_val = const_cast<char*>(data.data());
    a.data.data_len = static_cast<u_int>(data.size());
    wp_->Write(
        a, exp ? *exp : exp_, cred_, may_buffer,
        [this, tag](std::string r) { replies_.push_back({tag, DecodeWriteReply(r)}); },
        [this, tag] { forwarded_.push_back(tag); });
  }
  void Commit(int tag) {
    COMMIT3args a{};
    a.file = FhView(fh_);
    wp_->Commit(
        a, exp_, cred_, [this, tag](std::string r) { replies_.push_back({tag, DecodeCommitReply(r)}); },
        [this, tag] { forwarded_.push_back(tag); });
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
  std::vector<std::pair<int, ClientReply>> replies_;
  std::vector<int> forwarded_;
  std::string fh_ = "file-handle-1";
  OpaqueAuth cred_;
};

TEST_F(WritePathTest, GatheredStableWritesGoAsOneFileSyncWriteAndAreAnsweredInOrder) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c'), d(4096, 'd');
  Write(1, 0, a, FILE_SYNC);  // a new file's first write goes at once
  ASSERT_EQ(up_.calls.size(), 1u);
  Write(2, 4096, b, DATA_SYNC);  // a write is upstream: these wait (a window)
  Write(3, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_TRUE(replies_.empty()) << "no reply before the upstream made the data stable";

  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 77)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  // The answered writer's next write is awaited (a window), then the batch
  // of three contiguous writes goes as one FILE_SYNC WRITE.
  EXPECT_EQ(up_.calls.size(), 1u);
  Write(4, 12288, d, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 2u);
  SentWrite w = DecodeWriteArgs(up_.calls[1].args);
  EXPECT_EQ(w.offset, 4096u);
  EXPECT_EQ(w.stable, FILE_SYNC);
  EXPECT_EQ(w.data, b + c + d);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  up_.Answer(1, WriteOk(12288, FILE_SYNC, kV1, Attr(16384, 78)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4}));
  for (const auto& [tag, r] : replies_) {
    EXPECT_EQ(r.status, NFS3_OK);
    EXPECT_EQ(r.committed, FILE_SYNC);
    EXPECT_EQ(r.count, 4096u);
    ASSERT_TRUE(r.after.has_value());
  }
  EXPECT_EQ(replies_[3].second.after->size, 16384u)
      << "post-op attributes are the ones after the commit";
  EXPECT_EQ(wp_->stats().sync_writes, 2u);
  EXPECT_EQ(wp_->stats().gathered, 4u);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_TRUE(bg_.calls.empty());
}

TEST_F(WritePathTest, RepliesStayInArrivalOrderWhenLaterDataIsStableFirst) {
  options_.lone_after = 0;  // every batch opens a window
  Make();
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 65536, a, FILE_SYNC);
  Write(2, 0, b, FILE_SYNC);  // not contiguous: UNSTABLE writes, then COMMIT
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).stable, UNSTABLE);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).stable, UNSTABLE);
  up_.Answer(1, WriteOk(4096, UNSTABLE, kV1, Attr(1, 1)));
  up_.Answer(0, WriteOk(4096, UNSTABLE, kV1, Attr(1, 2)));
  EXPECT_TRUE(replies_.empty()) << "UNSTABLE upstream replies are not stability";
  ASSERT_EQ(up_.calls.size(), 3u);
  ASSERT_EQ(up_.calls[2].proc, NFSPROC3_COMMIT);
  up_.Answer(2, CommitOk(kV1, Attr(69632, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().upstream_commits, 1u);
}

TEST_F(WritePathTest, VerifierMismatchResendsAndHoldsTheReply) {
  options_.lone_after = 0;
  Make();
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 0, a, FILE_SYNC);
  Write(2, 65536, b, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 2u);
  up_.Answer(0, WriteOk(4096, UNSTABLE, kV1, Attr(1, 1)));
  up_.Answer(1, WriteOk(4096, UNSTABLE, kV1, Attr(1, 1)));
  ASSERT_EQ(up_.calls.size(), 3u);
  // The server restarted between the writes and the commit.
  up_.Answer(2, CommitOk(kV2, Attr(1, 2)));
  EXPECT_TRUE(replies_.empty()) << "a COMMIT with another verifier proves nothing";
  ASSERT_EQ(up_.calls.size(), 5u) << "both writes sent again";
  EXPECT_EQ(DecodeWriteArgs(up_.calls[3].args).data, a);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[4].args).data, b);
  up_.Answer(3, WriteOk(4096, UNSTABLE, kV2, Attr(1, 3)));
  up_.Answer(4, WriteOk(4096, UNSTABLE, kV2, Attr(1, 3)));
  ASSERT_EQ(up_.calls.size(), 6u);
  EXPECT_TRUE(replies_.empty());
  up_.Answer(5, CommitOk(kV2, Attr(1, 4)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().resent, 8192u);
}

TEST_F(WritePathTest, LoneWriterIsNotDelayed) {
  const std::string d(4096, 'x');
  for (int i = 0; i < 3; ++i) {
    Write(i, i * 4096, d, FILE_SYNC);
    ASSERT_EQ(up_.calls.size(), static_cast<size_t>(i + 1)) << "sent at once";
    up_.Answer(i, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  }
  EXPECT_EQ(Tags(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(wp_->stats().windows, 0u);
  EXPECT_EQ(wp_->stats().procrastination_us, 0u);
  // A write that finds company makes the file wait for writers again.
  Write(3, 12288, d, FILE_SYNC);
  Write(4, 16384, d, FILE_SYNC);
  up_.Answer(3, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  EXPECT_EQ(up_.calls.size(), 4u) << "waits for the answered writer's next write";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 5u);
  up_.Answer(4, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  // Alone again: that window and the next found no company; then no more
  // waiting.
  Write(5, 5 * 4096, d, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 5u) << "held by a window";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 6u);
  up_.Answer(5, WriteOk(4096, FILE_SYNC, kV1, Attr(1, 1)));
  Write(6, 6 * 4096, d, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 7u);
  // Write 4's company window (ended by write 3's answer), the window after
  // that answer, and write 5's.
  EXPECT_EQ(wp_->stats().windows, 3u);
}

TEST_F(WritePathTest, WritesBehindALoneWriteDoNotWaitForIt) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c');
  Write(1, 0, a, FILE_SYNC);  // a new file is lone: sent at once
  ASSERT_EQ(up_.calls.size(), 1u);
  // A pipelining writer's other writes: they gather for a window, not for
  // the lone write's round trip.
  Write(2, 4096, b, FILE_SYNC);
  Write(3, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 1u);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 2u) << "sent while the lone write is upstream";
  SentWrite w = DecodeWriteArgs(up_.calls[1].args);
  EXPECT_EQ(w.offset, 4096u);
  EXPECT_EQ(w.stable, FILE_SYNC) << "a contiguous batch: one FILE_SYNC WRITE, no COMMIT";
  EXPECT_EQ(w.data, b + c);
  // Replies stay in arrival order: the batch answered first waits.
  up_.Answer(1, WriteOk(8192, FILE_SYNC, kV1, Attr(12288, 2)));
  EXPECT_TRUE(replies_.empty());
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  for (const auto& [tag, r] : replies_) EXPECT_EQ(r.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().upstream_commits, 0u);
  // The file is no longer lone: the next write waits for its writers.
  Write(4, 12288, a, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 2u);
  Write(5, 16384, b, FILE_SYNC);
  Write(6, 20480, c, FILE_SYNC);
  ASSERT_EQ(up_.calls.size(), 3u) << "the window closes once the last batch's writers are in";
  EXPECT_EQ(DecodeWriteArgs(up_.calls[2].args).data, a + b + c);
}

TEST_F(WritePathTest, AWriterWhoseWritesFoundCompanyGathersFromANewFilesFirstWrite) {
  const std::string a(4096, 'a'), b(4096, 'b'), c(4096, 'c');
  // First file: lone at first, then company.
  Write(1, 0, a, FILE_SYNC);
  Write(2, 4096, b, FILE_SYNC);
  Write(3, 8192, c, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 2u);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  up_.Answer(1, WriteOk(8192, FILE_SYNC, kV1, Attr(12288, 2)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  // The same writer's next file: its first write waits for the others (the
  // whole window: how many come is not known yet), and all go as one.
  fh_ = "second-file";
  Write(4, 0, a, FILE_SYNC);
  Write(5, 4096, b, FILE_SYNC);
  Write(6, 8192, c, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 2u) << "held by the first window";
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 3u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[2].args).data, a + b + c);
  up_.Answer(2, WriteOk(12288, FILE_SYNC, kV1, Attr(12288, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  // The writer goes on alone, one write a file: two windows that find no
  // company (lone_after), then its files start lone.
  for (int i = 0; i < 3; ++i) {
    fh_ = "single-" + std::to_string(i);
    Write(7 + i, 0, a, FILE_SYNC);
    EXPECT_EQ(up_.calls.size(), static_cast<size_t>(i < 2 ? 3 + i : 4 + i)) << "file " << i;
    Advance(std::chrono::milliseconds(5));
    ASSERT_EQ(up_.calls.size(), static_cast<size_t>(4 + i));
    up_.Answer(3 + i, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 4)));
  }
  // Another writer (credential) has no history: its new file is lone.
  cred_.body = std::string(4, '\0') + "another writer";
  fh_ = "other-file";
  Write(10, 0, a, FILE_SYNC);
  EXPECT_EQ(up_.calls.size(), 7u) << "sent at once";
}

TEST_F(WritePathTest, GatheringStableWritesAreNotFlushedInTheBackground) {
  options_.lone_after = 0;  // every batch opens a window
  Make();
  const std::string a(4096, 'a'), b(4096, 'b');
  Write(1, 0, a, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(4096, FILE_SYNC, kV1, Attr(4096, 1)));
  // The next window spans the end of a flush delay from the first write.
  Advance(options_.flush_delay - std::chrono::milliseconds(7));
  Write(2, 4096, b, FILE_SYNC);
  Advance(std::chrono::milliseconds(5));
  EXPECT_TRUE(bg_.calls.empty()) << "a waiting batch's data is its own";
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[1].args).stable, FILE_SYNC);
  up_.Answer(1, WriteOk(4096, FILE_SYNC, kV1, Attr(8192, 2)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().upstream_commits, 0u);
  EXPECT_EQ(wp_->stats().sync_writes, 2u);
}

TEST_F(WritePathTest, ZeroWindowNeverWaits) {
  Write(1, 0, std::string(100, 'x'), FILE_SYNC, true, &nowait_);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(wp_->stats().windows, 0u);
}

TEST_F(WritePathTest, UnstableWritesAreBufferedMergedAndCommittedForTheClient) {
  const std::string a(32768, 'a'), b(32768, 'b'), c(1000, 'c');
  Write(1, 0, a, UNSTABLE);
  Write(2, 32768, b, UNSTABLE);  // a whole upstream WRITE (64 KiB): sent at once
  Write(3, 65536, c, UNSTABLE);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  for (const auto& [tag, r] : replies_) {
    EXPECT_EQ(r.committed, UNSTABLE);
    EXPECT_EQ(r.verf, wp_->verifier());
  }
  EXPECT_TRUE(up_.calls.empty()) << "write-behind uses the background caller";
  ASSERT_EQ(bg_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, a + b);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).stable, UNSTABLE);
  bg_.Answer(0, WriteOk(65536, UNSTABLE, kV1, Attr(65536, 1)));

  replies_.clear();
  Commit(9);
  EXPECT_TRUE(replies_.empty()) << "COMMIT waits for the buffered data";
  // The client's COMMIT sends the rest, then commits.
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).data, c);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(66536, 2)));
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(up_.calls[1].proc, NFSPROC3_COMMIT);
  up_.Answer(1, CommitOk(kV1, Attr(66536, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{9}));
  EXPECT_EQ(replies_[0].second.status, NFS3_OK);
  EXPECT_EQ(replies_[0].second.verf, wp_->verifier()) << "the proxy's verifier, not the server's";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  // Nothing held: the next COMMIT is answered at once.
  Commit(10);
  EXPECT_EQ(Tags(), (std::vector<int>{9, 10}));
}

TEST_F(WritePathTest, FlushDelaySendsPartialDataAndCommits) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  EXPECT_TRUE(bg_.calls.empty());
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  bg_.Answer(1, CommitOk(kV1, Attr(1000, 2)));
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
}

TEST_F(WritePathTest, WithoutWriteEvidenceAnUnstableWriteIsAnsweredOnceStable) {
  Write(1, 0, std::string(10, 'a'), UNSTABLE, /*may_buffer=*/false, &nowait_);
  EXPECT_TRUE(replies_.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(10, FILE_SYNC, kV1, Attr(10, 1)));
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC) << "committed tells what was done";
}

TEST_F(WritePathTest, BufferLimitsMakeWritersWait) {
  options_.max_file_bytes = 8192;
  options_.max_bytes = 16384;
  Make();
  Write(1, 0, std::string(8192, 'a'), UNSTABLE);
  Write(2, 8192, std::string(8192, 'b'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "the second write is beyond the file's limit";
  EXPECT_EQ(wp_->stats().blocked, 1u);
  EXPECT_LE(wp_->stats().max_buffered_bytes, 8192u);
  // Pressure flushes and commits the file.
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteOk(8192, UNSTABLE, kV1, Attr(8192, 1)));
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  bg_.Answer(1, CommitOk(kV1, Attr(8192, 2)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(wp_->stats().buffered_bytes, 8192u);
}

TEST_F(WritePathTest, RaisedLimitsAdmitWaitingWriters) {
  options_.max_file_bytes = 8192;
  options_.max_bytes = 16384;
  Make();
  Write(1, 0, std::string(8192, 'a'), UNSTABLE);
  Write(2, 8192, std::string(8192, 'b'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  wp_->SetLimits(1 << 20, 1 << 20, options_.flush_delay, options_.max_background);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2})) << "room now: the waiting write goes in";
  // A lower bound makes the next write wait.
  wp_->SetLimits(16384, 8192, options_.flush_delay, options_.max_background);
  Write(3, 16384, std::string(100, 'c'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
}

TEST_F(WritePathTest, FlushErrorIsReturnedAtTheNextWriteOnce) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_NOSPC));
  Write(2, 1000, std::string(10, 'b'), UNSTABLE);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_NOSPC);
  Write(3, 1000, std::string(10, 'b'), UNSTABLE);
  EXPECT_EQ(replies_[2].second.status, NFS3_OK) << "reported once";
}

// A file removed with writes still buffered: the flush meets STALE, which
// every later WRITE or COMMIT of the handle gets at once; nothing of the
// file is kept for it.
TEST_F(WritePathTest, StaleFlushMakesTheHandleStaleForGood) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  bg_.Answer(0, WriteFail(NFS3ERR_STALE));
  EXPECT_EQ(wp_->buffered_files(), 0u);
  Write(2, 1000, std::string(10, 'b'), UNSTABLE);
  Write(3, 0, std::string(10, 'c'), FILE_SYNC);
  Commit(4);
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4}));
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(replies_[i].second.status, NFS3ERR_STALE);
  EXPECT_EQ(bg_.calls.size() + up_.calls.size(), 1u) << "nothing more sent upstream";
}

TEST_F(WritePathTest, CommitErrorReachesTheWaitingClient) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Commit(2);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(up_.calls.size(), 2u);
  COMMIT3res fail{};
  fail.status = NFS3ERR_IO;
  std::string out;
  ASSERT_TRUE(XdrEncode(Proc(xdr_COMMIT3res), &fail, &out));
  up_.Answer(1, out);
  ASSERT_EQ(replies_.size(), 2u);
  EXPECT_EQ(replies_[1].first, 2);
  EXPECT_EQ(replies_[1].second.status, NFS3ERR_IO);
}

TEST_F(WritePathTest, ReadsAreHeldUntilBufferedDataIsUpstream) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  int ran = 0;
  EXPECT_TRUE(wp_->Hold(fh_, false, [&] { ran++; }));
  EXPECT_EQ(ran, 0);
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  EXPECT_EQ(ran, 1) << "the upstream has the bytes: the READ may go";
  EXPECT_EQ(learned_.back(), static_cast<uint32_t>(NFSPROC3_WRITE)) << "caches learn the wcc";
  EXPECT_FALSE(wp_->Hold(fh_, false, [&] { ran++; }));
  // A SETATTR waits until the data is stable.
  EXPECT_TRUE(wp_->Hold(fh_, true, [&] { ran++; }));
  ASSERT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(up_.calls[1].proc, NFSPROC3_COMMIT);
  up_.Answer(1, CommitOk(kV1, Attr(1000, 2)));
  EXPECT_EQ(ran, 2);
  EXPECT_FALSE(wp_->Hold("other", true, [&] { ran++; }));
}

TEST_F(WritePathTest, NewerDataIsNotOverwrittenByAWriteInFlight) {
  Write(1, 0, std::string(1000, 'a'), UNSTABLE);
  Advance(options_.flush_delay);
  ASSERT_EQ(bg_.calls.size(), 1u);
  Write(2, 0, std::string(1000, 'b'), UNSTABLE);
  Commit(3);
  EXPECT_TRUE(up_.calls.empty()) << "the newer data waits for the WRITE in flight";
  bg_.Answer(0, WriteOk(1000, UNSTABLE, kV1, Attr(1000, 1)));
  ASSERT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(DecodeWriteArgs(up_.calls[0].args).data, std::string(1000, 'b'));
}

TEST_F(WritePathTest, UnreachableUpstreamIsRetried) {
  up_.refuse = true;
  Write(1, 0, std::string(10, 'a'), FILE_SYNC, true, &nowait_);
  EXPECT_TRUE(up_.calls.empty());
  up_.refuse = false;
  Advance(std::chrono::milliseconds(100));
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(10, FILE_SYNC, kV1, Attr(10, 1)));
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
}

}  // namespace

namespace {

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
  void CommitBack(int tag) {
    COMMIT3args a{};
    a.file = FhView(fh_);
    wp_->Commit(
        a, back_, cred_,
        [this, tag](std::string r) { replies_.push_back({tag, DecodeCommitReply(r)}); },
        [this, tag] { forwarded_.push_back(tag); });
  }
  // Flushes what is buffered and answers the upstream: every WRITE UNSTABLE
  // with kV1, every COMMIT with kV1.
  void FlushAndAnswer() {
    Advance(options_.flush_delay);
    for (int i = bg_.Pending(); i >= 0; i = bg_.Pending()) {
      const auto& c = bg_.calls[static_cast<size_t>(i)];
      if (c.proc == NFSPROC3_WRITE) {
        SentWrite w = DecodeWriteArgs(c.args);
        bg_.Answer(static_cast<size_t>(i),
                   WriteOk(static_cast<uint32_t>(w.data.size()), UNSTABLE, kV1, Attr(0, 9)));
      } else {
        bg_.Answer(static_cast<size_t>(i), CommitOk(kV1, Attr(0, 10)));
      }
    }
  }

  FakeJournal journal_;
  Export back_;
};

TEST_F(JournalTest, WritesAreAnsweredOnceInTheJournalThenGoUpstream) {
  const std::string a(3000, 'a');
  WriteBack(1, 0, a, FILE_SYNC);
  EXPECT_TRUE(replies_.empty()) << "not before the journal has it on disk";
  ASSERT_EQ(journal_.records.size(), 1u);
  EXPECT_EQ(journal_.records[0].data, a);
  EXPECT_EQ(journal_.records[0].export_path, "/e");
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(replies_[0].second.verf, journal_.verifier()) << "the journal's verifier";
  EXPECT_FALSE(replies_[0].second.after) << "no attributes: the upstream has not the data";
  EXPECT_TRUE(up_.calls.empty() && bg_.calls.empty()) << "the upstream is not waited for";

  WriteBack(2, 3000, std::string(100, 'b'), UNSTABLE);
  journal_.Complete();
  CommitBack(3);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2})) << "the COMMIT waits for the journal";
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(replies_[2].second.verf, journal_.verifier());
  EXPECT_TRUE(journal_.removed.empty());

  FlushAndAnswer();
  ASSERT_GE(bg_.calls.size(), 2u);
  EXPECT_EQ(DecodeWriteArgs(bg_.calls[0].args).data, a + std::string(100, 'b'));
  EXPECT_EQ(bg_.calls.back().proc, NFSPROC3_COMMIT);
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2})) << "stable upstream: removed";
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  EXPECT_EQ(wp_->stats().journaled, 2u);
}

TEST_F(JournalTest, RecordsAreRemovedInOrderOnceNothingRefersToThem) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);     // record 1
  WriteBack(2, 5000, std::string(1000, 'b'), FILE_SYNC);  // record 2
  WriteBack(3, 5000, std::string(1000, 'c'), FILE_SYNC);  // record 3 replaces 2
  journal_.Complete();
  EXPECT_TRUE(journal_.removed.empty()) << "2 is dead but 1 is not: a replay needs the order";
  WriteBack(4, 0, std::string(1000, 'd'), FILE_SYNC);  // record 4 replaces 1
  journal_.Complete();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2}));
  FlushAndAnswer();
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST_F(JournalTest, BytesNotJournaledKeepTheRecordsTheyOverwroteUntilStable) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);
  journal_.Complete();
  // No ACCESS evidence: this write is not journaled and waits for the
  // upstream; until it is stable there, record 1 must stay.
  WriteBack(2, 0, std::string(1000, 'b'), FILE_SYNC, /*may_buffer=*/false);
  EXPECT_EQ(journal_.records.size(), 1u);
  EXPECT_TRUE(journal_.removed.empty());
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 3)));
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
}

TEST_F(JournalTest, AFailedAppendIsAnsweredOnceStableUpstream) {
  WriteBack(1, 0, std::string(1000, 'a'), FILE_SYNC);
  journal_.Complete(Status(StatusCode::kIoError, "disk"));
  EXPECT_TRUE(replies_.empty()) << "not durable anywhere yet";
  ASSERT_EQ(up_.calls.size(), 1u);
  up_.Answer(0, WriteOk(1000, FILE_SYNC, kV1, Attr(1000, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{1}));
  EXPECT_EQ(replies_[0].second.committed, FILE_SYNC);
  EXPECT_EQ(wp_->stats().journal_failed, 1u);
}

TEST_F(JournalTest, RecoveredRecordsGoUpstreamAtOnceAndHoldReads) {
  JournalRecord r{7, fh_, "/e", cred_, 100, std::string(500, 'r')};
  wp_->Recover(r, back_);
  wp_->FlushAll();
  int ran = 0;
  EXPECT_TRUE(wp_->Hold(fh_, false, [&] { ran++; })) << "reads wait for the replay";
  ASSERT_EQ(bg_.calls.size(), 1u) << "sent without waiting for the flush delay";
  SentWrite w = DecodeWriteArgs(bg_.calls[0].args);
  EXPECT_EQ(w.offset, 100u);
  EXPECT_EQ(w.data, r.data);
  bg_.Answer(0, WriteOk(500, UNSTABLE, kV1, Attr(600, 4)));
  EXPECT_EQ(ran, 1);
  ASSERT_EQ(bg_.calls.size(), 2u);
  EXPECT_EQ(bg_.calls[1].proc, NFSPROC3_COMMIT);
  bg_.Answer(1, CommitOk(kV1, Attr(600, 5)));
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{7}));
  EXPECT_EQ(wp_->stats().recovered, 1u);
}

}  // namespace
}  // namespace nfsedge
