// Single flight through the proxy's programs (real loopback sockets, an
// upstream that holds calls until the test answers them): an identical
// read-only call joins one already on its way upstream, but not one that
// left before a mutation was answered (its reply may not show it), nor one
// made under another export. Each joined call keeps room for its reply.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "client_calls.h"
#include "proxy/metadata_cache.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

using test_xdr::Fh;
using test_xdr::Proc;
using test_xdr::Xdr;

constexpr char kRootFh[] = "ROOT-HANDLE-0001";

ExportConfig ExportFor(const std::string& path, const std::string& client) {
  ExportConfig e;
  e.path = path;
  e.upstream_path = "/srv/data";
  e.clients.push_back(*Network::Parse(client));
  return e;
}

class SingleFlightTest : public ProgramsBed {
 protected:
  void SetUp() override {
    // Two exports of one upstream directory, each for one client address.
    StartPrograms({ExportFor("/a", "127.0.0.1/32"), ExportFor("/b", "127.0.0.2/32")}, nullptr,
                  1000, "0.0.0.0");
    mount_up_->set_responder([](const FakeUpstream::Seen& s) {
      return test_calls::MountdAnswer(s, {{"/srv/data", kRootFh}});
    });
    // GETATTRs are held; a SETATTR is answered at once.
    up_->set_responder([](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      if (s.proc != NFSPROC3_SETATTR) return std::nullopt;
      SETATTR3res res{};
      res.status = NFS3_OK;
      return Xdr(Proc(xdr_SETATTR3res), res);
    });
    loop_.Start();
  }

  void SendGetattr(BlockingClient& c, uint32_t xid, uint32_t uid = 1000) {
    GETATTR3args a{Fh(root_)};
    c.SendRecord(MakeCall(xid, kNfsProgram, 3, NFSPROC3_GETATTR, Xdr(Proc(xdr_GETATTR3args), a),
                          SysCred(uid, 100)));
  }
  size_t Count(uint32_t proc) {
    size_t n = 0;
    loop_.RunSync([&] {
      for (const auto& s : up_->calls) n += s.proc == proc;
    });
    return n;
  }
  // Waits until the upstream saw `n` calls of `proc` (within 5 s).
  bool WaitCount(uint32_t proc, size_t n) {
    for (int i = 0; i < 500 && Count(proc) < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Count(proc) == n;
  }
  uint64_t Coalesced() {
    uint64_t n = 0;
    loop_.RunSync([&] { n = nfs_->stats(NFSPROC3_GETATTR).coalesced; });
    return n;
  }
  // Answers every held GETATTR, the k-th (from 0) with size k.
  void AnswerGetattrs() {
    loop_.RunSync([&] {
      uint64_t k = 0;
      for (size_t i = 0; i < up_->calls.size(); ++i) {
        if (up_->calls[i].proc != NFSPROC3_GETATTR) continue;
        up_->Answer(i, DirAttrs(k, 0));
        k++;
      }
    });
  }
  // Answers the `nth` GETATTR (from 0) with a directory of `size` bytes
  // changed at `ctime`.
  void AnswerGetattr(size_t nth, uint64_t size, uint32_t ctime) {
    loop_.RunSync([&] {
      size_t k = 0;
      for (size_t i = 0; i < up_->calls.size(); ++i) {
        if (up_->calls[i].proc != NFSPROC3_GETATTR || k++ != nth) continue;
        up_->Answer(i, DirAttrs(size, ctime));
        return;
      }
      ADD_FAILURE() << "no GETATTR " << nth;
    });
  }
  static std::string DirAttrs(uint64_t size, uint32_t ctime) {
    GETATTR3res res{};
    res.status = NFS3_OK;
    fattr3& a = res.GETATTR3res_u.resok.obj_attributes;
    a.type = NF3DIR;
    a.mode = 0755;
    a.nlink = 2;
    a.size = size;
    a.ctime.seconds = a.mtime.seconds = ctime;
    return Xdr(Proc(xdr_GETATTR3res), res);
  }
  // The size in the GETATTR reply `c` reads next.
  uint64_t ReadSize(BlockingClient& c) {
    std::optional<std::string> reply = c.ReadRecord();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return ~0ull;
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    EXPECT_TRUE(h.ok());
    XdrValue<GETATTR3res> res(Proc(xdr_GETATTR3res));
    EXPECT_TRUE(res.Decode(reply->substr(h.ok() ? h->results_offset : 0)));
    EXPECT_EQ(res->status, NFS3_OK);
    return res->GETATTR3res_u.resok.obj_attributes.size;
  }

  const std::string root_ = kRootFh;  // outlives the handles viewing it
};

TEST_F(SingleFlightTest, AGetattrJoinsOneInFlightButNotOneThatLeftBeforeAMutationWasAnswered) {
  BlockingClient c1(port_), c2(port_), c3(port_);
  ASSERT_EQ(test_calls::MountPath(c1, 1, "/a").first, static_cast<uint32_t>(MNT3_OK));
  SendGetattr(c1, 10);
  ASSERT_TRUE(WaitCount(NFSPROC3_GETATTR, 1));
  SendGetattr(c2, 20);  // identical: joins
  for (int i = 0; i < 500 && Coalesced() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Coalesced(), 1u);
  // A SETATTR of the directory, answered: the GETATTR in flight may have
  // been answered upstream before it.
  SETATTR3args s{};
  s.object = Fh(root_);
  s.new_attributes.mode.set_it = TRUE;
  s.new_attributes.mode.set_mode3_u.mode = 0700;
  const std::string sr = test_calls::CallResults(c3, 30, kNfsProgram, NFSPROC3_SETATTR,
                                                 Xdr(Proc(xdr_SETATTR3args), s));
  ASSERT_GE(sr.size(), 4u);
  EXPECT_EQ(LoadBE32(sr.data()), static_cast<uint32_t>(NFS3_OK));
  SendGetattr(c3, 31);  // identical again, sent after the SETATTR's answer
  EXPECT_TRUE(WaitCount(NFSPROC3_GETATTR, 2)) << "a GETATTR after the SETATTR's reply joined "
                                                 "one the upstream may have answered before it";
  EXPECT_EQ(Coalesced(), 1u);
  AnswerGetattrs();
  EXPECT_EQ(ReadSize(c1), 0u);
  EXPECT_EQ(ReadSize(c2), 0u);
  EXPECT_EQ(ReadSize(c3), 1u) << "the answer to its own call";
}

TEST_F(SingleFlightTest, AGetattrUnderAnotherExportDoesNotJoin) {
  BlockingClient a(port_), b(port_, "127.0.0.2");
  ASSERT_EQ(test_calls::MountPath(a, 1, "/a").first, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(test_calls::MountPath(b, 1, "/b").first, static_cast<uint32_t>(MNT3_OK));
  SendGetattr(a, 10);
  ASSERT_TRUE(WaitCount(NFSPROC3_GETATTR, 1));
  SendGetattr(b, 10);  // the same bytes, but answered under /b's rules
  EXPECT_TRUE(WaitCount(NFSPROC3_GETATTR, 2));
  EXPECT_EQ(Coalesced(), 0u);
  AnswerGetattrs();
  EXPECT_EQ(ReadSize(a), 0u);
  EXPECT_EQ(ReadSize(b), 1u);
}

// Identical READs joined to one upstream READ are answered each with its
// own copy of the data: each keeps room for its reply in the bytes held for
// calls (server.max_held_call_bytes) until it is answered.
TEST_F(SingleFlightTest, JoinedReadsEachKeepRoomForTheirReplies) {
  BlockingClient c1(port_), c2(port_);
  ASSERT_EQ(test_calls::MountPath(c1, 1, "/a").first, static_cast<uint32_t>(MNT3_OK));
  READ3args a{};
  a.file = Fh(root_);
  a.count = 1 << 20;
  const std::string args = Xdr(Proc(xdr_READ3args), a);
  c1.SendRecord(MakeCall(10, kNfsProgram, 3, NFSPROC3_READ, args, SysCred(1000, 100)));
  ASSERT_TRUE(WaitCount(NFSPROC3_READ, 1));
  c2.SendRecord(MakeCall(20, kNfsProgram, 3, NFSPROC3_READ, args, SysCred(1000, 100)));
  size_t held = 0;
  for (int i = 0; i < 500 && held < 2 * a.count; ++i) {
    loop_.RunSync([&] { held = server_->held_call_bytes(); });
    if (held < 2 * a.count) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(held, 2 * a.count);
  EXPECT_EQ(Count(NFSPROC3_READ), 1u) << "joined";
  loop_.RunSync([&] {
    READ3res res{};
    res.status = NFS3ERR_ISDIR;
    up_->Answer(0, Xdr(Proc(xdr_READ3res), res));
  });
  ASSERT_TRUE(c1.ReadRecord());
  ASSERT_TRUE(c2.ReadRecord());
  loop_.RunSync([&] { held = server_->held_call_bytes(); });
  EXPECT_LT(held, 4096u) << "the room goes with the answers";
}

// With the metadata cache, on an export whose lifetimes are 0 (every
// GETATTR goes upstream): a GETATTR does not join one in flight once newer
// attributes of its object were learned from a faster call. User A's
// GETATTR leaves; user B's leaves after it and comes back first, showing
// the directory after a change at the head office (size 7), and B is
// answered; A's identical GETATTR, sent after that answer, would be given
// the first one's reply, made by the server before the change (size 3).
class SingleFlightCachedTest : public SingleFlightTest {
 protected:
  void SetUp() override {
    ExportConfig e = ExportFor("/a", "127.0.0.1/32");
    e.acregmin = e.acregmax = e.acdirmin = e.acdirmax = 0;
    cache_ = std::make_unique<MetadataCache>(clock_, CacheConfig{});
    StartPrograms({e}, cache_.get());
    mount_up_->set_responder([](const FakeUpstream::Seen& s) {
      return test_calls::MountdAnswer(s, {{"/srv/data", kRootFh}});
    });
    loop_.Start();
  }
  FakeClock clock_;
  std::unique_ptr<MetadataCache> cache_;
};

TEST_F(SingleFlightCachedTest, AGetattrDoesNotJoinAReplyNewerAttributesOvertook) {
  BlockingClient a1(port_), b(port_), a2(port_);
  ASSERT_EQ(test_calls::MountPath(a1, 1, "/a").first, static_cast<uint32_t>(MNT3_OK));
  SendGetattr(a1, 10, 1000);
  ASSERT_TRUE(WaitCount(NFSPROC3_GETATTR, 1));
  SendGetattr(b, 20, 2000);  // another user: its own call
  ASSERT_TRUE(WaitCount(NFSPROC3_GETATTR, 2));
  AnswerGetattr(1, 7, 10);
  EXPECT_EQ(ReadSize(b), 7u);
  SendGetattr(a2, 30, 1000);  // identical to A's first, sent after B's answer
  EXPECT_TRUE(WaitCount(NFSPROC3_GETATTR, 3)) << "it joined the first, which left before";
  AnswerGetattr(0, 3, 5);  // made by the server before the change
  EXPECT_EQ(ReadSize(a1), 3u);
  if (Count(NFSPROC3_GETATTR) == 3) AnswerGetattr(2, 7, 10);
  EXPECT_EQ(ReadSize(a2), 7u) << "shown a state older than one already answered";
}

}  // namespace
}  // namespace nfsedge
