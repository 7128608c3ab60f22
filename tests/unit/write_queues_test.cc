// Writes of several callers through the queue of writes waiting for buffer
// room, the refusal of bytes a parked write waited for, and WRITEs
// retransmitted by clients while the first call still waits in the write
// path (write_path_test).
#include <rpc/xdr/nfs3.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_service.h"
#include "rpc/auth_sys.h"
#include "rpc/rpc_message.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"
#include "write_path_fixture.h"
#include "nfs_xdr_builders.h"

namespace nfsedge::write_path_test {
namespace {

using test_xdr::Fh;
using test_xdr::Xdr;

class WriteQueuesTest : public JournalTest {
 protected:
  // The file handle a WRITE3args or COMMIT3args begins with.
  static std::string FhOf(const std::string& args) {
    uint32_t n = 0;
    for (int k = 0; k < 4; ++k) n = (n << 8) | static_cast<uint8_t>(args[k]);
    return args.substr(4, n);
  }
  // Answers (as AnswerOne) the calls of up_ and bg_ that `which` picks,
  // and those their answers bring that it picks, until none is left.
  void AnswerWhere(const std::function<bool(const HeldUpstream::Held&)>& which) {
    for (bool any = true; any;) {
      any = false;
      for (HeldUpstream* u : {&up_, &bg_}) {
        for (size_t i = 0; i < u->calls.size(); ++i) {
          if (!u->calls[i].answered && which(u->calls[i])) {
            AnswerOne(*u, i);
            any = true;
          }
        }
      }
    }
  }
  // Users X and Y write file F, UNSTABLE (tags 1 and 2: X's 1000 bytes at
  // 0, Y's 10 at 5000), without the journal; the flush delay sends them.
  void TwoWritersFlushed() {
    options_.journal = nullptr;
    Make();
    fh_ = "F";
    cred_ = Cred("uid-X");
    Write(1, 0, std::string(1000, 'x'), UNSTABLE);
    cred_ = Cred("uid-Y");
    Write(2, 5000, std::string(10, 'y'), UNSTABLE);
    Advance(options_.flush_delay);
  }
  // How many upstream WRITEs (both callers) carried `data`.
  size_t SentWrites(const std::string& data) const {
    size_t n = 0;
    for (const HeldUpstream* u : {&up_, &bg_}) {
      for (const auto& c : u->calls) {
        n += c.proc == NFSPROC3_WRITE && DecodeWriteArgs(c.args).data == data;
      }
    }
    return n;
  }
};

// Area 1, the queue of writes waiting for room (blocked_). The buffer is
// full of user C's acknowledged bytes of file Z. User B's FILE_SYNC write
// of X [0, 4096) waits for room; then user A's FILE_SYNC write of the same
// bytes, which finds none of B's bytes in X's buffer yet (they wait in the
// queue), waits behind it. Room comes: both are taken, in order, into one
// gathering window. A's bytes must not replace B's in the buffer (no
// caller's bytes replace another's: each caller's own bytes are judged by
// the upstream, and a refusal reaches only its writer). The upstream
// refuses A's WRITE (A is over quota): B, whose write came first and whose
// own bytes the upstream would take, must be answered NFS3_OK, not A's
// NFS3ERR_DQUOT, and its bytes must have gone upstream.
TEST_F(WriteQueuesTest, AWriteTakenFromTheRoomQueueDoesNotReplaceAnotherCallersBytes) {
  options_.journal = nullptr;
  options_.lone_after = 0;  // the file gathers (a window opens)
  options_.max_bytes = 8192;
  Make();
  fh_ = "Z";
  cred_ = Cred("uid-C");
  Write(1, 0, std::string(8192, 'z'), UNSTABLE);
  ASSERT_NE(ReplyOf(1), nullptr);
  fh_ = "X";
  cred_ = Cred("uid-B");
  Write(2, 0, std::string(4096, 'b'), FILE_SYNC);
  cred_ = Cred("uid-A");
  Write(3, 0, std::string(4096, 'a'), FILE_SYNC);
  ASSERT_EQ(ReplyOf(2), nullptr);
  ASSERT_EQ(ReplyOf(3), nullptr);
  ASSERT_EQ(wp_->stats().blocked, 2u) << "(both wait for room)";
  for (int round = 0; round < 20 && (ReplyOf(2) == nullptr || ReplyOf(3) == nullptr); ++round) {
    while (AnswerAllBut(up_, 'a', NFS3ERR_DQUOT) + AnswerAllBut(bg_, 'a', NFS3ERR_DQUOT) > 0) {
    }
    Advance(std::chrono::milliseconds(10));
  }
  ASSERT_NE(ReplyOf(2), nullptr);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3ERR_DQUOT) << "A's own bytes were refused";
  EXPECT_GE(SentWrites(std::string(4096, 'b')), 1u)
      << "B's bytes never went upstream: A's replaced them in the buffer";
  EXPECT_EQ(ReplyOf(2)->status, NFS3_OK) << "B is told A's refusal (status "
                                          << ReplyOf(2)->status << ") and its data is lost";
}

// Area 1, refusal of the bytes a write was parked for. User A's UNSTABLE
// write of X is answered from the buffer; user B's write of the same
// bytes is parked (they are A's). A's bytes go upstream and are refused
// NFS3ERR_DQUOT (A's quota). B's write came before that refusal and its own
// bytes were never sent: the upstream never judged them. It is not
// answered with A's refusal and dropped (architecture.md: "a refusal
// reaches only its writer"; "one user's quota is not another's").
TEST_F(WriteQueuesTest, AParkedWriteIsNotAnsweredTheRefusalOfTheBytesItWaitedFor) {
  options_.journal = nullptr;
  Make();
  fh_ = "X";
  cred_ = Cred("uid-A");
  Write(1, 0, std::string(4096, 'a'), UNSTABLE);
  ASSERT_NE(ReplyOf(1), nullptr);
  cred_ = Cred("uid-B");
  Write(2, 0, std::string(4096, 'b'), UNSTABLE);
  ASSERT_EQ(ReplyOf(2), nullptr) << "(parked over A's bytes)";
  ASSERT_EQ(wp_->stats().parked, 1u);
  for (int round = 0; round < 20 && ReplyOf(2) == nullptr; ++round) {
    while (AnswerAllBut(up_, 'a', NFS3ERR_DQUOT) + AnswerAllBut(bg_, 'a', NFS3ERR_DQUOT) > 0) {
    }
    Advance(std::chrono::milliseconds(10));
  }
  ASSERT_NE(ReplyOf(2), nullptr);
  EXPECT_EQ(ReplyOf(2)->status, NFS3_OK)
      << "B's write, never sent upstream, is answered A's refusal and its data dropped";
  for (int round = 0; round < 20; ++round) {
    while (AnswerAllBut(up_, 'a', NFS3ERR_DQUOT) + AnswerAllBut(bg_, 'a', NFS3ERR_DQUOT) > 0) {
    }
    Advance(std::chrono::milliseconds(60));
  }
  EXPECT_GE(SentWrites(std::string(4096, 'b')), 1u) << "B's bytes never reach the upstream";
}

// Area 1: a file at its own limit holds its own later writes, not other
// files'. File f1 is full (max_file_bytes) and its upstream WRITE is not
// answered (a slow or JUKEBOX-answering server); a write to f2 is taken at
// once, f1's next write waits behind f1's first waiting one, and both go,
// in order, once f1's bytes are stable.
TEST_F(WriteQueuesTest, AFileAtItsLimitDoesNotHoldOtherFilesWrites) {
  options_.journal = nullptr;
  options_.max_file_bytes = 8192;
  options_.max_bytes = 1 << 20;
  Make();
  fh_ = "f1";
  Write(1, 0, std::string(8192, 'a'), UNSTABLE);
  Write(2, 8192, std::string(8192, 'b'), UNSTABLE);
  fh_ = "f2";
  Write(3, 0, std::string(10, 'c'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 3})) << "f2's write waited for room in f1";
  fh_ = "f1";
  Write(4, 16384, std::string(10, 'd'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 3})) << "f1's later write passed its waiting one";
  while (AnswerAll(bg_)) {
  }
  EXPECT_EQ(Tags(), (std::vector<int>{1, 3, 2, 4}));
}

// Area 1: a write waiting for room in all is passed by no later write, of
// any file, even one that would fit (else small writes could keep a large
// one waiting for ever).
TEST_F(WriteQueuesTest, AWriteWaitingForRoomInAllIsNotPassed) {
  options_.journal = nullptr;
  options_.max_file_bytes = 1 << 20;
  options_.max_bytes = 8192;
  Make();
  fh_ = "f1";
  Write(1, 0, std::string(8000, 'a'), UNSTABLE);
  fh_ = "f2";
  Write(2, 0, std::string(1000, 'b'), UNSTABLE);
  fh_ = "f3";
  Write(3, 0, std::string(100, 'c'), UNSTABLE);
  EXPECT_EQ(Tags(), (std::vector<int>{1}));
  while (AnswerAll(bg_)) {
  }
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3}));
}

// Area 1: a write taken from the room queue and parked (over another
// caller's bytes on their way) comes back when those bytes have left; with
// a later write of another file waiting for room in all, it went back to
// the room queue at once, was taken again, parked, and so on: the event
// loop never came back. Room queue: f0's 10 bytes (f0 at its own bound)
// then f0's 25 (no room in all); A's write of f1 is parked over B's bytes.
TEST_F(WriteQueuesTest, AParkedWriteBackFromTheRoomQueueDoesNotSpin) {
  options_.journal = nullptr;
  options_.max_bytes = 100;
  options_.max_file_bytes = 40;
  Make();
  auto write = [&](const std::string& fh, const char* who, int tag, uint64_t off, size_t n) {
    fh_ = fh;
    cred_ = Cred(who);
    Write(tag, off, std::string(n, static_cast<char>('a' + tag)), UNSTABLE);
  };
  write("f0", "uid-A", 1, 0, 40);    // f0 at its own bound
  write("f1", "uid-B", 2, 0, 10);    // B's bytes of f1
  write("f1", "uid-B", 3, 100, 10);
  write("f1", "uid-A", 4, 0, 5);     // over B's: parked (B's bytes sent)
  write("f1", "uid-A", 5, 100, 5);   // parked behind it
  write("f2", "uid-C", 6, 0, 30);    // 90 of 100 in all
  write("f0", "uid-A", 7, 40, 10);   // waits for f0's room
  write("f0", "uid-A", 8, 50, 25);   // waits; no room in all for it
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 6}));
  // B's first bytes of f1 are stable upstream: A's first write of f1 may
  // go in.
  bool answered = false;
  for (HeldUpstream* u : {&up_, &bg_}) {
    for (size_t i = 0; i < u->calls.size() && !answered; ++i) {
      const auto& c = u->calls[i];
      if (c.answered || c.proc != NFSPROC3_WRITE || FhOf(c.args) != "f1") continue;
      SentWrite w = DecodeWriteArgs(c.args);
      if (w.offset != 0) continue;
      answered = true;
      u->Answer(i, WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1, Attr(110, 3)));
    }
  }
  ASSERT_TRUE(answered) << "B's bytes of f1 were sent when A's write parked over them";
  Settle();
  std::vector<int> tags = Tags();
  std::sort(tags.begin(), tags.end());
  EXPECT_EQ(tags, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8})) << "every write answered";
}

// Area 1: a writer's writes are taken in the order they came when the first
// waits for room in all and the second is over another caller's bytes: the
// second waits behind the first. (It used to be parked at once; room made
// by another file then took the first from the room queue while the second
// was still parked, parked it behind the second, and the second was taken
// first.)
TEST_F(WriteQueuesTest, AWriteOverAnotherCallersBytesWaitsBehindItsWriterWaitingForRoom) {
  options_.journal = nullptr;
  options_.max_bytes = 8192;
  Make();
  fh_ = "Z";
  cred_ = Cred("uid-C");
  Write(1, 0, std::string(8000, 'z'), UNSTABLE);
  fh_ = "X";
  cred_ = Cred("uid-B");
  Write(2, 0, std::string(100, 'b'), UNSTABLE);
  cred_ = Cred("uid-A");
  Write(3, 8192, std::string(200, 'a'), UNSTABLE);  // no room in all
  Write(4, 0, std::string(100, 'A'), UNSTABLE);     // over B's bytes
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  // Z's bytes become stable first: room for A's writes.
  AnswerWhere([](const HeldUpstream::Held& c) { return FhOf(c.args) == "Z"; });
  for (int round = 0; round < 20 && Tags().size() < 4; ++round) {
    while (AnswerAll(bg_) || AnswerAll(up_)) {
    }
    Advance(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4}));
}

// Area 1: a writer's writes of a file are taken in the order they came,
// whichever queue each waited in. B's W1 (64 KiB over A's bytes) and W2
// (newer bytes of its start) are parked; A's bytes become stable while
// B's earlier far write is still on its way, so W1 finds no room in the
// file and waits for it, while W2 would fit: it must not be taken first
// (W1's older bytes would then land over W2's, both acknowledged).
TEST_F(WriteQueuesTest, AWritersParkedWritesKeepTheirOrderWhenTheFirstWaitsForRoom) {
  options_.journal = nullptr;
  options_.max_file_bytes = 65536;
  Make();
  fh_ = "F";
  cred_ = Cred("uid-A");
  Write(1, 0, std::string(40000, 'a'), UNSTABLE);  // over half the file's room: committed at once
  cred_ = Cred("uid-B");
  Write(2, 100000, std::string(4096, 'f'), UNSTABLE);
  Write(3, 0, std::string(65536, 'B'), UNSTABLE);  // over A's bytes: parked
  Write(4, 0, std::string(4096, 'C'), UNSTABLE);   // behind it
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  // A's WRITE and the COMMIT are answered; B's far WRITE stays on its way.
  AnswerWhere([](const HeldUpstream::Held& c) {
    return c.proc == NFSPROC3_COMMIT || DecodeWriteArgs(c.args).data == std::string(40000, 'a');
  });
  for (int round = 0; round < 20 && Tags().size() < 4; ++round) {
    while (AnswerAll(bg_) || AnswerAll(up_)) {
    }
    Advance(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2, 3, 4})) << "W2 was taken before W1";
}

// Area 1: one writer's refusal is not another's COMMIT. X's and Y's
// buffered bytes of one file go upstream; Y's COMMIT of the whole file
// waits; X's WRITE is refused NOSPC (X's quota). Y's COMMIT is answered OK
// once Y's bytes are stable, and X is told at its next WRITE.
TEST_F(WriteQueuesTest, AWritersRefusalIsNotAnotherWritersCommits) {
  TwoWritersFlushed();
  Commit(3);
  EXPECT_EQ(Tags(), (std::vector<int>{1, 2}));
  for (int round = 0; round < 20 && Tags().size() < 3; ++round) {
    while (AnswerAllBut(up_, 'x', NFS3ERR_NOSPC) + AnswerAllBut(bg_, 'x', NFS3ERR_NOSPC) > 0) {
    }
    Advance(std::chrono::milliseconds(10));
  }
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3_OK) << "Y's COMMIT was told X's refusal";
  EXPECT_GE(SentWrites(std::string(10, 'y')), 1u);
  cred_ = Cred("uid-X");
  Write(4, 2000, std::string(10, 'x'), UNSTABLE);
  ASSERT_NE(ReplyOf(4), nullptr);
  EXPECT_EQ(ReplyOf(4)->status, NFS3ERR_NOSPC) << "X is told at its next WRITE";
}

// Area 1: a COMMIT goes as one of the file's writers. Refused for that
// caller (ACCES: the mode changed since its WRITE), it fails that caller's
// bytes only; the other writer's are committed by a COMMIT of its own, and
// its next WRITE is taken.
TEST_F(WriteQueuesTest, ACommitRefusedForItsCallerFailsOnlyThatCallersBytes) {
  TwoWritersFlushed();
  for (size_t i = 0; i < bg_.calls.size(); ++i) {  // the WRITEs, not the COMMIT
    if (!bg_.calls[i].answered && bg_.calls[i].proc == NFSPROC3_WRITE) AnswerOne(bg_, i);
  }
  ASSERT_EQ(bg_.Count(NFSPROC3_COMMIT), 1u);
  const size_t c = bg_.calls.size() - 1;
  ASSERT_EQ(bg_.calls[c].proc, NFSPROC3_COMMIT);
  const OpaqueAuth refused = bg_.calls[c].cred;
  COMMIT3res res{};
  res.status = NFS3ERR_ACCES;
  const size_t learned = learned_.size();
  bg_.Answer(c, Xdr(Proc(xdr_COMMIT3res), res));
  // The caches learn the refusal as the refused caller's: its ACCESS
  // result, which let its writes be buffered, goes.
  ASSERT_GT(learned_.size(), learned);
  EXPECT_EQ(learned_[learned], static_cast<uint32_t>(NFSPROC3_COMMIT));
  EXPECT_EQ(learned_creds_[learned].body, refused.body) << "learned as another caller";
  for (int round = 0; round < 20 && bg_.Count(NFSPROC3_COMMIT) < 2; ++round) {
    Advance(options_.flush_delay);
  }
  ASSERT_EQ(bg_.Count(NFSPROC3_COMMIT), 2u) << "the other writer's bytes were dropped too";
  EXPECT_NE(bg_.calls.back().cred.body, refused.body) << "sent as the other writer";
  AnswerAll(bg_);
  EXPECT_EQ(wp_->stats().buffered_bytes, 0u);
  const bool x_refused = refused.body == Cred("uid-X").body;
  cred_ = x_refused ? Cred("uid-Y") : Cred("uid-X");
  Write(3, 9000, std::string(10, 'o'), UNSTABLE);
  ASSERT_NE(ReplyOf(3), nullptr);
  EXPECT_EQ(ReplyOf(3)->status, NFS3_OK) << "told the other caller's refusal";
  cred_ = refused;
  Write(4, 9100, std::string(10, 'r'), UNSTABLE);
  ASSERT_NE(ReplyOf(4), nullptr);
  EXPECT_EQ(ReplyOf(4)->status, NFS3ERR_ACCES);
}

// ---- Area 2: retransmissions, through the NFS program (NfsService with
// its duplicate request cache on, the metadata cache and the write path).

constexpr uint32_t kUidA = 1000;
constexpr uint32_t kUidB = 1001;

class Service {
 public:
  Service(FakeClock& clock, HeldUpstream& up, HeldUpstream& bg,
                   std::multimap<MonoTime, std::function<void()>>& timers)
      : exports_(Exports()),
        registry_(1000),
        cache_(clock, CacheConfig{}),
        nfs_(exports_, registry_, up, NfsServiceOptions{}, &cache_) {
    registry_.Add(file_, 0);
    WritePathOptions wo;
    wo.write_size = 64 << 10;
    wo.flush_delay = std::chrono::milliseconds(50);
    wo.verifier = Verf{'p', 'r', 'o', 'x', 'y'};
    wp_ = std::make_unique<WritePath>(
        clock, up, bg,
        [&clock, &timers](Duration d, std::function<void()> fn) {
          timers.emplace(clock.MonoNow() + d, std::move(fn));
        },
        [this](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
               const OpaqueAuth& cred) { nfs_.LearnReply(p, args, reply, exp, cred); },
        wo);
    wp_->LearnFsinfo(FsinfoResults());  // as a client's mount tells it
    nfs_.SetWritePath(wp_.get());
  }
  ~Service() { nfs_.SetWritePath(nullptr); }

  static std::vector<ExportConfig> Exports() {
    ExportConfig e = MakeExport(0);
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    return {e};
  }

  // A client call with `xid` from `host`, credential uid `uid`; returns
  // the call (answered or not).
  std::shared_ptr<IncomingCall> Send(uint32_t xid, const std::string& host, uint32_t uid,
                                     uint32_t proc, const std::string& args) {
    CallHeader h;
    h.xid = xid;
    h.prog = kNfsProgram;
    h.vers = kNfsVersion;
    h.proc = proc;
    h.cred = OpaqueAuth{kAuthSys, EncodeAuthSys(AuthSys{7, "client-" + host, uid, 100, {}})};
    const std::string record = EncodeCallHeader(h) + args;
    ParsedCall parsed = ParseCall(record);
    EXPECT_EQ(parsed.error, CallError::kNone);
    auto call = std::make_shared<IncomingCall>(std::weak_ptr<ServerConnection>(), record, parsed,
                                               *ResolveAddress(host, 700));
    calls_.push_back(call);
    nfs_.Handle(call);
    return call;
  }

  std::string FileSyncWrite(const std::string& data) const {
    WRITE3args a{};
    a.file = Fh(file_);
    a.offset = 0;
    a.count = static_cast<count3>(data.size());
    a.stable = FILE_SYNC;
    a.data.data_val = const_cast<char*>(data.data());
    a.data.data_len = static_cast<u_int>(data.size());
    return Xdr(Proc(xdr_WRITE3args), a);
  }

  ExportTable exports_;
  HandleRegistry registry_;
  MetadataCache cache_;
  NfsService nfs_;
  std::unique_ptr<WritePath> wp_;
  std::vector<std::shared_ptr<IncomingCall>> calls_;
  const std::string file_ = "FILE-HANDLE-0001";
};

// Client A's FILE_SYNC WRITE (xid 100) of [0, 4096) goes upstream. Client
// B then writes the same bytes (parked behind A's). A's client, which saw
// no reply yet (lost connection, timeout), sends xid 100 again. The
// upstream takes A's WRITE, then B's: A and B are answered, in that order,
// and the file holds B's bytes, the later write. The retransmission of a
// call still in progress does not run again (DESIGN rule 7, "Retries are
// not repeated mutations"; the duplicate request cache joins it to the
// first call's reply): run again, it would write A's old bytes over B's,
// after B was told its write is stable.
TEST_F(WriteQueuesTest, AWriteRetransmittedWhileParkedDoesNotUndoALaterWriteOfAnotherClient) {
  Service s(clock_, up_, bg_, timers_);
  const std::string a(4096, 'a'), b(4096, 'b');
  auto first = s.Send(100, "127.0.0.1", kUidA, NFSPROC3_WRITE, s.FileSyncWrite(a));
  auto other = s.Send(200, "127.0.0.2", kUidB, NFSPROC3_WRITE, s.FileSyncWrite(b));
  auto again = s.Send(100, "127.0.0.1", kUidA, NFSPROC3_WRITE, s.FileSyncWrite(a));
  ASSERT_FALSE(first->replied());
  ASSERT_FALSE(other->replied());
  // The upstream answers every WRITE FILE_SYNC, in order; other calls
  // (speculative ACCESS) are left alone.
  std::vector<std::string> order;  // upstream WRITEs' data, as answered
  for (int round = 0; round < 10; ++round) {
    bool any = false;
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (size_t i = 0; i < u->calls.size(); ++i) {
        if (u->calls[i].answered || u->calls[i].proc != NFSPROC3_WRITE) continue;
        SentWrite w = DecodeWriteArgs(u->calls[i].args);
        order.push_back(w.data);
        AnswerRecord(*u, i,
                     WriteOk(static_cast<uint32_t>(w.data.size()), FILE_SYNC, kV1,
                             Attr(4096, 10 + static_cast<uint32_t>(order.size()))));
        any = true;
      }
    }
    Advance(std::chrono::milliseconds(10));
    if (!any && round > 2) break;
  }
  ASSERT_TRUE(first->replied());
  ASSERT_TRUE(other->replied()) << "B's write is answered";
  ASSERT_FALSE(order.empty());
  std::string log;
  for (const std::string& d : order) log += d.substr(0, 1);
  EXPECT_TRUE(order.back() == b) << "upstream WRITEs in order: " << log
                             << ": A's retransmission ran again after B's write was answered, "
                                "and put A's old bytes over B's";
}

// Through the export of `table` (write-behind on): an UNSTABLE write
// answered from the buffer, and one behind it waiting for room (the file's
// limit); then `reload` changes the export's rules, and the first write is
// flushed and committed, which makes room for the second.
template <class Base>
class WaitsThroughAReload : public Base {
 protected:
  void WriteThenWaitThroughAReload(ExportTable* table, const ExportConfig& reload) {
    this->options_.max_file_bytes = 8192;
    this->options_.max_bytes = 16384;
    this->Make();
    const Export* e = &table->all()[0];
    this->Write(1, 0, std::string(8192, 'a'), UNSTABLE, true, e);
    this->Write(2, 8192, std::string(8192, 'b'), UNSTABLE, true, e);
    ASSERT_EQ(this->Tags(), (std::vector<int>{1}));
    ASSERT_EQ(this->wp_->stats().blocked, 1u);
    ASSERT_TRUE(table->Update({reload}).ok());
    ASSERT_EQ(this->bg_.calls.size(), 1u);
    this->bg_.Answer(0, WriteOk(8192, UNSTABLE, kV1, Attr(8192, 1)));
    ASSERT_EQ(this->bg_.calls.size(), 2u);
    this->bg_.Answer(1, CommitOk(kV1, Attr(8192, 2)));
  }
};
using WriteReloadTest = WaitsThroughAReload<WritePathTest>;
using JournalReloadTest = WaitsThroughAReload<JournalTest>;

// A reload turned write-behind off while an UNSTABLE write waited for
// room: it is taken as the rules are now, answered only once its bytes are
// stable upstream (it could not be forwarded as it came any more), not
// from the buffer with the upstream's own verifier, which a restart of the
// proxy would not change.
TEST_F(WriteReloadTest, AWriteThatWaitedThroughAReloadIsTakenAsTheRulesAreNow) {
  ExportTable table({MakeExport(5)});
  ExportConfig off = MakeExport(5);
  off.write_behind = false;
  ASSERT_NO_FATAL_FAILURE(WriteThenWaitThroughAReload(&table, off));
  Advance(std::chrono::milliseconds(5));
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "not answered before its bytes are stable upstream";
  ASSERT_EQ(up_.calls.size(), 1u);
  SentWrite w = DecodeWriteArgs(up_.calls[0].args);
  EXPECT_EQ(w.offset, 8192u);
  EXPECT_EQ(w.stable, FILE_SYNC);
  up_.Answer(0, WriteOk(8192, FILE_SYNC, kV1, Attr(16384, 3)));
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.committed, FILE_SYNC);
}

// The same with the edge journal turned on for the export: the waiting
// UNSTABLE write (the ACCESS cache proved it may write) is answered from
// the journal once its record is on disk, not before with the journal's
// verifier, which a crash would not change.
TEST_F(JournalReloadTest, AWriteThatWaitedThroughAReloadToWriteBackIsAnsweredOnceJournaled) {
  ExportTable table({MakeExport(5)});
  ExportConfig on = MakeExport(5);
  on.write_back = true;
  ASSERT_NO_FATAL_FAILURE(WriteThenWaitThroughAReload(&table, on));
  EXPECT_EQ(Tags(), (std::vector<int>{1})) << "not before its record is on disk";
  ASSERT_EQ(journal_.records.size(), 1u);
  EXPECT_EQ(journal_.records[0].data, std::string(8192, 'b'));
  journal_.Complete();
  ASSERT_EQ(Tags(), (std::vector<int>{1, 2}));
  EXPECT_EQ(replies_[1].second.verf, journal_.verifier());
}

}  // namespace
}  // namespace nfsedge::write_path_test
