// proxy_badinput_test: hand-built RPC records over real sockets. Unknown
// programs, versions and procedures, undecodable arguments, bad credentials,
// a wrong RPC version, oversized records and garbage bytes each get the
// answer RFC 5531 prescribes (or a closed connection), and after each of
// them nfsedge still serves another client on another connection.
// Also: fragmented records, pipelined calls and equal XIDs from two clients.

#include <gtest/gtest.h>

#include <set>

#include "harness/raw_rpc.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

Testbed* g_testbed = nullptr;
std::string* g_setup_error = nullptr;
std::string* g_root = nullptr;  // Export root handle (through nfsedge).

class BadInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_setup_error = new std::string();
    g_root = new std::string();
    if (!SkipReason().empty()) return;
    Testbed::Options o;
    o.name = "badinput";
    auto tb = Testbed::Start(o);
    if (!tb.ok()) {
      *g_setup_error = tb.status().message();
      return;
    }
    g_testbed = std::move(tb).value().release();
    RawNfs::Options m;
    m.endpoint.port = g_testbed->proxy()->mount_port();
    auto mnt = RawNfs::Connect(m);
    if (!mnt.ok()) {
      *g_setup_error = mnt.status().message();
      return;
    }
    MntResult r = (*mnt)->Mnt(g_testbed->ganesha().export_path());
    if (!r.ok()) *g_setup_error = "MNT failed: " + MountStatName(r.status) + r.rpc_error;
    *g_root = r.fh;
  }

  static void TearDownTestSuite() {
    if (g_testbed != nullptr) {
      ExitStatus s = g_testbed->Stop();
      EXPECT_TRUE(s.success()) << "nfsedge exit: " << s.ToString();
    }
    delete g_testbed;
    g_testbed = nullptr;
    delete g_setup_error;
    delete g_root;
  }

  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    ASSERT_TRUE(g_setup_error->empty()) << *g_setup_error;
  }

  // After every test: the proxy runs and serves a new client.
  void TearDown() override {
    if (g_testbed == nullptr || !g_setup_error->empty()) return;
    ASSERT_TRUE(g_testbed->proxy()->IsRunning()) << "nfsedge died";
    auto nfs = ConnectOrFail(proxy().host(), proxy().nfs_port());
    ASSERT_TRUE(nfs);
    NfsResult n = nfs->Null();
    EXPECT_TRUE(n.rpc_ok) << "NULL on a new connection: " << n.rpc_error;
    GetattrResult g = nfs->Getattr(*g_root);
    EXPECT_TRUE(g.ok()) << "GETATTR on a new connection: " << g.StatusString();
    PrintLogsOnFailure(*this, g_testbed);
  }

  ProxyProcess& proxy() { return *g_testbed->proxy(); }

  std::unique_ptr<RawConnection> Raw(uint16_t port = 0) {
    TcpEndpoint ep;
    ep.host = proxy().host();
    ep.port = port ? port : proxy().nfs_port();
    auto c = RawConnection::Connect(ep);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Sends `call` to nfsedge on a new connection. Returns true iff a
  // well-formed reply came back; else fails the test.
  bool CallProxy(const RpcCall& call, RpcReply* reply, uint16_t port = 0) {
    auto c = Raw(port);
    if (!c) return false;
    auto r = c->Call(call);
    EXPECT_TRUE(r.ok()) << r.status().message() << GaneshaSays(call, port);
    if (r.ok()) *reply = *r;
    return r.ok();
  }

  // What ganesha answers to the same call, for failure messages.
  std::string GaneshaSays(const RpcCall& call, uint16_t proxy_port = 0) {
    TcpEndpoint ep;
    ep.port = proxy_port == proxy().mount_port() ? g_testbed->ganesha().mount_port()
                                                 : g_testbed->ganesha().nfs_port();
    auto c = RawConnection::Connect(ep);
    if (!c.ok()) return " (ganesha: " + c.status().message() + ")";
    auto r = (*c)->Call(call, Millis(3000));
    return " (ganesha answers: " + (r.ok() ? r->ToString() : r.status().message()) + ")";
  }

  static RpcCall Getattr(const std::string& fh, uint32_t xid = 7) {
    RpcCall c;
    c.xid = xid;
    c.procedure = 1;
    c.args = XdrWriter().Opaque(fh).data();
    return c;
  }

  void ExpectAccepted(const RpcCall& call, uint32_t accept_stat, uint16_t port = 0) {
    RpcReply r;
    if (!CallProxy(call, &r, port)) return;
    EXPECT_EQ(r.xid, call.xid);
    EXPECT_EQ(r.reply_stat, kMsgAccepted) << r.ToString() << GaneshaSays(call, port);
    EXPECT_EQ(r.accept_stat, accept_stat) << r.ToString() << GaneshaSays(call, port);
  }

  void ExpectAuthError(const RpcCall& call) {
    RpcReply r;
    if (!CallProxy(call, &r)) return;
    EXPECT_EQ(r.xid, call.xid);
    EXPECT_EQ(r.reply_stat, kMsgDenied) << r.ToString() << GaneshaSays(call);
    EXPECT_EQ(r.reject_stat, kRejectAuthError) << r.ToString() << GaneshaSays(call);
    EXPECT_NE(r.auth_stat, 0u) << r.ToString();
  }

  // Sends `bytes` on a new connection; expects nfsedge to close it without
  // answering.
  void ExpectClosed(const std::string& bytes, uint16_t port = 0) {
    auto c = Raw(port);
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Send(bytes).ok());
    int replies = 0;
    EXPECT_TRUE(c->WaitForClose(Millis(5000), &replies)) << "connection still open after 5 s";
    EXPECT_EQ(replies, 0);
  }
};

TEST_F(BadInputTest, UnknownProgramIsProgUnavail) {
  RpcCall c;
  c.program = 100099;
  c.version = 1;
  ExpectAccepted(c, kAcceptProgUnavail);
  c.program = 100021;  // NLM: not served.
  c.version = 4;
  ExpectAccepted(c, kAcceptProgUnavail);
  c.program = 100099;
  ExpectAccepted(c, kAcceptProgUnavail, proxy().mount_port());
}

TEST_F(BadInputTest, WrongVersionIsProgMismatch) {
  for (uint32_t version : {2u, 4u}) {
    RpcCall c;
    c.version = version;
    RpcReply r;
    if (!CallProxy(c, &r)) continue;
    EXPECT_EQ(r.accept_stat, kAcceptProgMismatch) << "NFS v" << version << ": " << r.ToString();
    EXPECT_EQ(r.mismatch_low, 3u) << r.ToString();
    EXPECT_EQ(r.mismatch_high, 3u) << r.ToString();
  }
  RpcCall m;
  m.program = kMountProgram;
  m.version = 4;
  RpcReply r;
  ASSERT_TRUE(CallProxy(m, &r, proxy().mount_port()));
  EXPECT_EQ(r.accept_stat, kAcceptProgMismatch) << "MOUNT v4: " << r.ToString();
  EXPECT_LE(r.mismatch_low, 3u);
  EXPECT_GE(r.mismatch_high, 3u);
}

TEST_F(BadInputTest, UnknownProcedureIsProcUnavail) {
  RpcCall c;
  c.procedure = 22;  // NFSv3 has procedures 0..21.
  ExpectAccepted(c, kAcceptProcUnavail);
  c.procedure = 0x7fffffff;
  ExpectAccepted(c, kAcceptProcUnavail);
  RpcCall m;
  m.program = kMountProgram;
  m.procedure = 6;  // MOUNTv3 has 0..5.
  ExpectAccepted(m, kAcceptProcUnavail, proxy().mount_port());
}

TEST_F(BadInputTest, UndecodableArgumentsAreGarbageArgs) {
  RpcCall c = Getattr(*g_root);
  c.args = std::string("\0\0", 2);  // Half a length word.
  ExpectAccepted(c, kAcceptGarbageArgs);
  c.args = XdrWriter().U32(65).Fixed(std::string(65, 'h')).data();  // > NFS3_FHSIZE.
  ExpectAccepted(c, kAcceptGarbageArgs);
  c.args = XdrWriter().U32(40).data();  // Length without the bytes.
  ExpectAccepted(c, kAcceptGarbageArgs);
  RpcCall lookup;  // LOOKUP: name length far beyond the record.
  lookup.procedure = 3;
  lookup.args = XdrWriter().Opaque(*g_root).U32(0xfffffff0u).data();
  ExpectAccepted(lookup, kAcceptGarbageArgs);
  RpcCall write;  // WRITE: data shorter than its length word.
  write.procedure = 7;
  write.args = XdrWriter().Opaque(*g_root).U64(0).U32(100).U32(2).U32(100).Raw("short").data();
  ExpectAccepted(write, kAcceptGarbageArgs);
  RpcCall mnt;  // MNT: path longer than MNTPATHLEN (1024).
  mnt.program = kMountProgram;
  mnt.procedure = 1;
  mnt.args = XdrWriter().Opaque("/" + std::string(2000, 'p')).data();
  ExpectAccepted(mnt, kAcceptGarbageArgs, proxy().mount_port());
}

TEST_F(BadInputTest, BadCredentialsAreAuthErrors) {
  RpcCall c = Getattr(*g_root);
  c.cred_body = EncodeAuthSys({}).substr(0, 8);  // Truncated AUTH_SYS body.
  ExpectAuthError(c);
  c.cred_flavor = kAuthDh;  // AUTH_DH: not supported.
  c.cred_body = std::string(32, 'd');
  ExpectAuthError(c);
  AuthSysParams many;
  // 17 groups: the proxy passes them on as sent (docs/security.md); the
  // auth error is ganesha's refusal of such a credential, relayed.
  many.gids.assign(17, 100);
  c.cred_flavor = kAuthSys;
  c.cred_body = EncodeAuthSys(many);
  ExpectAuthError(c);
  AuthSysParams long_name;
  long_name.machine = std::string(300, 'm');  // At most 255 bytes.
  c.cred_body = EncodeAuthSys(long_name);
  ExpectAuthError(c);
}

// AUTH_NONE is fine for NULL; for a real call the export needs AUTH_SYS.
TEST_F(BadInputTest, AuthNoneOnlyForNull) {
  RpcCall null;
  null.cred_flavor = kAuthNone;
  null.cred_body = "";
  ExpectAccepted(null, kAcceptSuccess);
  RpcCall c = Getattr(*g_root);
  c.cred_flavor = kAuthNone;
  c.cred_body = "";
  ExpectAuthError(c);
}

TEST_F(BadInputTest, RpcVersion3IsRpcMismatch) {
  RpcCall c;
  c.rpc_version = 3;
  RpcReply r;
  ASSERT_TRUE(CallProxy(c, &r));
  EXPECT_EQ(r.xid, c.xid);
  EXPECT_EQ(r.reply_stat, kMsgDenied) << r.ToString() << GaneshaSays(c);
  EXPECT_EQ(r.reject_stat, kRejectRpcMismatch) << r.ToString();
  EXPECT_EQ(r.mismatch_low, 2u) << r.ToString();
  EXPECT_EQ(r.mismatch_high, 2u) << r.ToString();
}

TEST_F(BadInputTest, OversizedRecordClosesConnection) {
  // One fragment announced at 16 MiB (max_record_size is 1114112).
  std::string header = XdrWriter().U32(0x80000000u | (16u << 20)).data();
  ExpectClosed(header + EncodeCall(RpcCall()));
  ExpectClosed(header + EncodeCall(RpcCall()), proxy().mount_port());
  // Fragments of 64 KiB, none of them last, adding up past the limit.
  std::string many;
  std::string chunk(65536, 'z');
  for (int i = 0; i < 20; ++i) many += XdrWriter().U32(65536).data() + chunk;
  ExpectClosed(many);
}

TEST_F(BadInputTest, GarbageBytesCloseConnection) {
  ExpectClosed("GET / HTTP/1.1\r\nHost: nfsedge\r\n\r\n");
  ExpectClosed(FrameRecord(Pattern(64, 5)));            // Random message.
  ExpectClosed(FrameRecord(std::string("\0\0\0", 3)));  // Shorter than an XID.
  RpcCall reply;                                        // A REPLY sent to the server.
  reply.msg_type = kRpcReply;
  ExpectClosed(FrameRecord(EncodeCall(reply)));
}

TEST_F(BadInputTest, FragmentedRecordsAreReassembled) {
  auto c = Raw();
  ASSERT_TRUE(c);
  RpcCall call = Getattr(*g_root, 99);
  std::string msg = EncodeCall(call);
  // 8-byte fragments, then an empty non-last fragment before a last one.
  ASSERT_TRUE(c->Send(FrameRecord(msg, 8)).ok());
  std::string record;
  ASSERT_EQ(c->ReadRecord(&record), RawConnection::Outcome::kRecord);
  auto r = ParseReply(record);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->xid, 99u);
  EXPECT_EQ(r->accept_stat, kAcceptSuccess) << r->ToString();
  uint32_t status = 1;
  XdrReader(r->results).U32(&status);
  EXPECT_EQ(status, kNfs3Ok);
  call.xid = 100;
  std::string framed = XdrWriter().U32(0).data() + FrameRecord(EncodeCall(call));
  ASSERT_TRUE(c->Send(framed).ok());
  ASSERT_EQ(c->ReadRecord(&record), RawConnection::Outcome::kRecord);
  r = ParseReply(record);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->xid, 100u);
  EXPECT_EQ(r->accept_stat, kAcceptSuccess) << r->ToString();
}

// Reads the size from a GETATTR3res (status, then fattr3: type, mode, nlink,
// uid, gid, size).
uint64_t SizeFromGetattr(const std::string& results) {
  XdrReader r(results);
  uint32_t v = 0;
  for (int i = 0; i < 6; ++i) r.U32(&v);
  uint64_t size = 0;
  r.U64(&size);
  return size;
}

TEST_F(BadInputTest, PipelinedCallsAndEqualXidsFromTwoClients) {
  auto nfs = ConnectOrFail(proxy().host(), proxy().nfs_port());
  ASSERT_TRUE(nfs);
  CreateResult a = nfs->Create(*g_root, "xid-a", Sattr());
  CreateResult b = nfs->Create(*g_root, "xid-b", Sattr());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(nfs->Write(a.fh, 0, std::string(111, 'a'), Stable::kFileSync).ok());
  ASSERT_TRUE(nfs->Write(b.fh, 0, std::string(222, 'b'), Stable::kFileSync).ok());

  // Ten calls in one send: ten replies, XIDs preserved.
  auto c = Raw();
  ASSERT_TRUE(c);
  std::string burst;
  std::set<uint32_t> sent;
  for (uint32_t xid = 1000; xid < 1010; ++xid) {
    burst += FrameRecord(EncodeCall(Getattr(xid % 2 ? a.fh : b.fh, xid)));
    sent.insert(xid);
  }
  ASSERT_TRUE(c->Send(burst).ok());
  std::set<uint32_t> got;
  for (int i = 0; i < 10; ++i) {
    std::string record;
    ASSERT_EQ(c->ReadRecord(&record), RawConnection::Outcome::kRecord) << "reply " << i;
    auto r = ParseReply(record);
    ASSERT_TRUE(r.ok()) << r.status().message();
    got.insert(r->xid);
    EXPECT_EQ(SizeFromGetattr(r->results), r->xid % 2 ? 111u : 222u) << "xid " << r->xid;
  }
  EXPECT_EQ(got, sent);

  // Two clients, same XID, different files: each gets its own answer.
  auto c1 = Raw();
  auto c2 = Raw();
  ASSERT_TRUE(c1 && c2);
  ASSERT_TRUE(c1->Send(FrameRecord(EncodeCall(Getattr(a.fh, 42)))).ok());
  ASSERT_TRUE(c2->Send(FrameRecord(EncodeCall(Getattr(b.fh, 42)))).ok());
  std::string r1, r2;
  ASSERT_EQ(c1->ReadRecord(&r1), RawConnection::Outcome::kRecord);
  ASSERT_EQ(c2->ReadRecord(&r2), RawConnection::Outcome::kRecord);
  auto p1 = ParseReply(r1);
  auto p2 = ParseReply(r2);
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(p1->xid, 42u);
  EXPECT_EQ(p2->xid, 42u);
  EXPECT_EQ(SizeFromGetattr(p1->results), 111u);
  EXPECT_EQ(SizeFromGetattr(p2->results), 222u);
}

}  // namespace
}  // namespace nfsedge::itest
