// proxy_badinput_test, part 2: a client that ignores FSINFO's rtmax and
// READs 4 MiB at once. ganesha answers with a 4 MiB record, more than
// nfsedge carries; nfsedge must still answer the client (a short read is
// legal) and must not disturb other clients' calls, least of all by sending
// non-idempotent calls twice. This suite has its own stack (other ports), so
// a failure here cannot spill into the other suites of the binary.

#include <gtest/gtest.h>

#include "harness/raw_rpc.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint32_t kFileSize = 5 << 20;
constexpr uint32_t kAskFor = 4 << 20;

struct State {
  std::unique_ptr<Testbed> testbed;
  std::string root, file, error;
};
State* g_state = nullptr;

class OversizedReplyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_state = new State();
    if (!SkipReason().empty()) return;
    Testbed::Options o;
    o.name = "oversized-reply";
    o.ganesha.nfs_port = 21490;
    o.ganesha.mount_port = 21048;
    o.proxy.nfs_port = 31490;
    o.proxy.mount_port = 31048;
    auto tb = Testbed::Start(o);
    if (!tb.ok()) {
      g_state->error = tb.status().message();
      return;
    }
    g_state->testbed = std::move(tb).value();
    // The file is written directly to ganesha: nothing of this reaches nfsedge.
    auto& g = g_state->testbed->ganesha();
    RawNfs::Options m;
    m.endpoint.port = g.mount_port();
    auto mnt = RawNfs::Connect(m);
    RawNfs::Options n;
    n.endpoint.port = g.nfs_port();
    auto nfs = RawNfs::Connect(n);
    if (!mnt.ok() || !nfs.ok()) {
      g_state->error = "cannot connect to ganesha";
      return;
    }
    MntResult root = (*mnt)->Mnt(g.export_path());
    CreateResult f = (*nfs)->Create(root.fh, "five-mib", Sattr());
    WriteResult w = (*nfs)->WriteAll(f.fh, 0, Pattern(kFileSize, 3), Stable::kFileSync);
    if (!root.ok() || !f.ok() || !w.ok()) g_state->error = "cannot create the test file";
  }

  static void TearDownTestSuite() {
    if (g_state->testbed) {
      ExitStatus s = g_state->testbed->Stop();
      EXPECT_TRUE(s.success()) << "nfsedge exit: " << s.ToString();
    }
    delete g_state;
    g_state = nullptr;
  }

  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    ASSERT_TRUE(g_state->error.empty()) << g_state->error;
    ProxyProcess& p = *g_state->testbed->proxy();
    mnt_ = ConnectOrFail(p.host(), p.mount_port());
    nfs_ = ConnectOrFail(p.host(), p.nfs_port());
    ASSERT_TRUE(mnt_ && nfs_);
    MntResult m = mnt_->Mnt(g_state->testbed->ganesha().export_path());
    ASSERT_TRUE(m.ok()) << MountStatName(m.status) << m.rpc_error;
    root_ = m.fh;
    LookupResult l = nfs_->Lookup(root_, "five-mib");
    ASSERT_TRUE(l.ok()) << l.StatusString();
    file_ = l.fh;
  }

  void TearDown() override {
    if (g_state->testbed) {
      EXPECT_TRUE(g_state->testbed->proxy()->IsRunning()) << "nfsedge died";
    }
    PrintLogsOnFailure(*this, g_state->testbed.get());
  }

  // Sends READ(file, 0, kAskFor) on a new raw connection and returns it.
  std::unique_ptr<RawConnection> SendBigRead(uint32_t xid) {
    TcpEndpoint ep;
    ep.port = g_state->testbed->proxy()->nfs_port();
    auto c = RawConnection::Connect(ep);
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return nullptr;
    RpcCall read;
    read.xid = xid;
    read.procedure = 6;
    read.args = XdrWriter().Opaque(file_).U64(0).U32(kAskFor).data();
    EXPECT_TRUE((*c)->Send(FrameRecord(EncodeCall(read))).ok());
    return std::move(c).value();
  }

  std::unique_ptr<RawNfs> mnt_, nfs_;
  std::string root_, file_;
};

TEST_F(OversizedReplyTest, ReadBeyondTransferSizeIsAnswered) {
  auto c = SendBigRead(77);
  ASSERT_TRUE(c);
  std::string record;
  ASSERT_EQ(c->ReadRecord(&record, Millis(10000)), RawConnection::Outcome::kRecord)
      << "no answer within 10 s to READ of " << kAskFor << " bytes";
  auto reply = ParseReply(record);
  ASSERT_TRUE(reply.ok()) << reply.status().message();
  EXPECT_EQ(reply->xid, 77u);
  ASSERT_EQ(reply->accept_stat, kAcceptSuccess) << reply->ToString();
  XdrReader r(reply->results);
  uint32_t status = 1, follows = 0, count = 0, eof = 0;
  std::string attrs, data;
  ASSERT_TRUE(r.U32(&status) && r.U32(&follows));
  ASSERT_EQ(status, kNfs3Ok) << NfsStatName(status);
  ASSERT_TRUE(!follows || r.Fixed(84, &attrs));
  ASSERT_TRUE(r.U32(&count) && r.U32(&eof) && r.Opaque(&data));
  EXPECT_GT(count, 0u);
  EXPECT_LE(count, kAskFor);
  EXPECT_EQ(data.size(), count);
  EXPECT_TRUE(data == Pattern(kFileSize, 3).substr(0, data.size())) << "wrong bytes";
}

TEST_F(OversizedReplyTest, OtherCallsAreNotReplayed) {
  auto big = SendBigRead(78);
  ASSERT_TRUE(big);
  // While that READ is in the works, another client makes and removes
  // directories: each call must be executed once (EXIST / NOENT would mean
  // nfsedge sent it upstream twice).
  for (int i = 0; i < 10; ++i) {
    const std::string name = "dir-" + std::to_string(i);
    CreateResult d = nfs_->Mkdir(root_, name, Sattr());
    EXPECT_TRUE(d.ok()) << "MKDIR " << name << ": " << d.StatusString();
    WccResult rm = nfs_->Rmdir(root_, name);
    EXPECT_TRUE(rm.ok()) << "RMDIR " << name << ": " << rm.StatusString();
  }
  std::string record;
  EXPECT_EQ(big->ReadRecord(&record, Millis(10000)), RawConnection::Outcome::kRecord)
      << "no answer within 10 s to READ of " << kAskFor << " bytes";
}

}  // namespace
}  // namespace nfsedge::itest
