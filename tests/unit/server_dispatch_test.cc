// The client-facing server and the proxy's programs over a real loopback
// socket, with an in-memory upstream: bad input gets its standard answer,
// export rules hold, calls go upstream with the right credential and come
// back with the client's XID.
#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>
#include <set>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_service.h"
#include "rpc/auth_sys.h"
#include "rpc/record_marking.h"
#include "rpc/rpc_server.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

constexpr char kRootFh[] = "ROOT-HANDLE-0001";
constexpr char kRoRootFh[] = "RO-ROOT-HANDLE-1";

std::string FhArgs(const std::string& fh) {
  std::string out;
  XdrWriter(&out).WriteOpaque(fh);
  return out;
}

std::string DirpathArgs(const std::string& path) {
  std::string out;
  XdrWriter(&out).WriteOpaque(path);
  return out;
}

// The upstream's MNT answer: `fh`, and the flavors of an export with
// sec=krb5:sys.
std::string MntOk(const std::string& fh) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(MNT3_OK);
  w.WriteOpaque(fh);
  w.WriteU32(2);
  w.WriteU32(390003);  // RPCSEC_GSS krb5
  w.WriteU32(kAuthSys);
  return out;
}

std::string GetattrOk() {
  GETATTR3res res{};
  res.status = NFS3_OK;
  res.GETATTR3res_u.resok.obj_attributes.type = NF3DIR;
  res.GETATTR3res_u.resok.obj_attributes.mode = 0755;
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), &res, &out);
  return out;
}

class ServerDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ExportConfig rw;
    rw.path = "/data";
    rw.upstream_path = "/srv/data";
    rw.clients.push_back(*Network::Parse("127.0.0.0/8"));
    rw.anon_uid = 4000;
    rw.anon_gid = 4001;
    ExportConfig ro = rw;
    ro.path = "/ro";
    ro.upstream_path = "/srv/ro";
    ro.read_only = true;
    ExportConfig far = rw;
    far.path = "/far";
    far.clients = {*Network::Parse("10.0.0.0/8")};
    exports_ = std::make_unique<ExportTable>(std::vector<ExportConfig>{rw, ro, far});
    registry_ = std::make_unique<HandleRegistry>(1000);
    nfs_up_ = std::make_unique<FakeUpstream>(loop_.base());
    mount_up_ = std::make_unique<FakeUpstream>(loop_.base());
    nfs_ = std::make_unique<NfsService>(*exports_, *registry_, *nfs_up_, NfsServiceOptions{},
                                        cache_.get());
    mount_ = std::make_unique<MountService>(*exports_, *registry_, *mount_up_);
    dispatcher_ = std::make_unique<Dispatcher>(std::vector<RpcProgram*>{nfs_.get(), mount_.get()});
    ServerOptions so;
    so.max_record_size = 64 * 1024;
    so.max_calls_per_connection = 4;
    server_ = std::make_unique<RpcServer>(loop_.base(), so, dispatcher_.get());
    port_ = *server_->Listen(*ResolveAddress("127.0.0.1", 0));
    mount_up_->set_responder([](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      return MntOk(s.args == DirpathArgs("/srv/ro") ? kRoRootFh : kRootFh);
    });
    nfs_up_->set_responder(
        [](const FakeUpstream::Seen&) -> std::optional<std::string> { return GetattrOk(); });
    loop_.Start();
  }

  void TearDown() override {
    loop_.RunSync([this] { server_.reset(); });
  }

  // Sends `record` on a new connection and returns the reply header.
  ReplyHeader Ask(const std::string& record, std::string* results = nullptr) {
    BlockingClient c(port_);
    c.SendRecord(record);
    std::optional<std::string> reply = c.ReadRecord();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return {};
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    EXPECT_TRUE(h.ok());
    if (results && h.ok()) *results = reply->substr(h->results_offset);
    return h.ok() ? *h : ReplyHeader{};
  }

  uint32_t NfsStatusOf(const std::string& record) {
    std::string results;
    ReplyHeader h = Ask(record, &results);
    EXPECT_EQ(h.accept_stat, kSuccess);
    return results.size() >= 4 ? LoadBE32(results.data()) : 0xffffffff;
  }

  // MNT `path` (AUTH_NONE): its status, and the handle and flavors of an OK.
  struct Mounted {
    uint32_t status = 0xffffffff;
    std::string fh;
    std::vector<int> flavors;
  };
  Mounted Mnt(const std::string& path) {
    std::string results;
    Ask(MakeCall(1, kMountProgram, 3, 1, DirpathArgs(path)), &results);
    XdrValue<mountres3> res(reinterpret_cast<xdrproc_t>(xdr_mountres3));
    Mounted m;
    if (!res.Decode(results)) return m;
    m.status = res->fhs_status;
    if (res->fhs_status != MNT3_OK) return m;
    const mountres3_ok& ok = res->mountres3_u.mountinfo;
    m.fh.assign(ok.fhandle.fhandle3_val, ok.fhandle.fhandle3_len);
    m.flavors.assign(ok.auth_flavors.auth_flavors_val,
                     ok.auth_flavors.auth_flavors_val + ok.auth_flavors.auth_flavors_len);
    return m;
  }

  void Mount(const std::string& path) {
    std::string results;
    Ask(MakeCall(1, kMountProgram, 3, 1, DirpathArgs(path), SysCred(0, 0)), &results);
    ASSERT_EQ(LoadBE32(results.data()), static_cast<uint32_t>(MNT3_OK));
  }

  size_t NfsCalls() {
    size_t n;
    loop_.RunSync([&] { n = nfs_up_->calls.size(); });
    return n;
  }

  LoopThread loop_;
  std::unique_ptr<ExportTable> exports_;
  std::unique_ptr<HandleRegistry> registry_;
  FakeClock clock_;
  std::unique_ptr<MetadataCache> cache_;  // set before SetUp() to serve from a cache
  std::unique_ptr<FakeUpstream> nfs_up_, mount_up_;
  std::unique_ptr<NfsService> nfs_;
  std::unique_ptr<MountService> mount_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

TEST_F(ServerDispatchTest, NullIsAnsweredLocally) {
  ReplyHeader h = Ask(MakeCall(11, kNfsProgram, 3, 0, ""));
  EXPECT_EQ(h.xid, 11u);
  EXPECT_EQ(h.reply_stat, kMsgAccepted);
  EXPECT_EQ(h.accept_stat, kSuccess);
  EXPECT_EQ(Ask(MakeCall(12, kMountProgram, 3, 0, "")).accept_stat, kSuccess);
  EXPECT_EQ(NfsCalls(), 0u);
}

TEST_F(ServerDispatchTest, UnknownProgramVersionProcedure) {
  EXPECT_EQ(Ask(MakeCall(1, 100099, 1, 0, "")).accept_stat, kProgUnavail);
  ReplyHeader h = Ask(MakeCall(2, kNfsProgram, 2, 0, ""));
  EXPECT_EQ(h.accept_stat, kProgMismatch);
  EXPECT_EQ(h.mismatch_low, 3u);
  EXPECT_EQ(h.mismatch_high, 3u);
  EXPECT_EQ(Ask(MakeCall(3, kNfsProgram, 3, 22, "")).accept_stat, kProcUnavail);
  EXPECT_EQ(Ask(MakeCall(4, kMountProgram, 3, 6, "")).accept_stat, kProcUnavail);
  h = Ask(MakeCall(5, kMountProgram, 4, 0, ""));
  EXPECT_EQ(h.accept_stat, kProgMismatch);
  EXPECT_EQ(h.mismatch_low, 1u);
  EXPECT_EQ(h.mismatch_high, 3u);
}

// showmount(8) asks MOUNT version 1 for EXPORT and DUMP (as Linux's mountd,
// the proxy serves versions 1 to 3); version 1 and 2 MNT answers an NFSv2
// handle, which the proxy has not.
TEST_F(ServerDispatchTest, MountVersionOneListsExportsAndMounts) {
  Mount("/data");
  for (uint32_t vers : {1u, 2u}) {
    EXPECT_EQ(Ask(MakeCall(1, kMountProgram, vers, 0, "")).accept_stat, kSuccess);
    std::string results;
    Ask(MakeCall(2, kMountProgram, vers, 5, ""), &results);
    XdrValue<exports> ex(reinterpret_cast<xdrproc_t>(xdr_exports));
    ASSERT_TRUE(ex.Decode(results)) << vers;
    ASSERT_NE(ex.get(), nullptr);
    EXPECT_STREQ(ex.get()->ex_dir, "/data");
    Ask(MakeCall(3, kMountProgram, vers, 2, ""), &results);
    XdrValue<mountlist> ml(reinterpret_cast<xdrproc_t>(xdr_mountlist));
    ASSERT_TRUE(ml.Decode(results)) << vers;
    ASSERT_NE(ml.get(), nullptr);
    EXPECT_STREQ(ml.get()->ml_directory, "/data");
    EXPECT_EQ(Ask(MakeCall(4, kMountProgram, vers, 1, DirpathArgs("/data"))).accept_stat,
              kProcUnavail);
  }
  loop_.RunSync([&] { EXPECT_EQ(mount_up_->calls.size(), 1u); });
}

// A path as a client may write it (`mount proxy:/data/`) mounts what
// realpath(3) makes of it, as Linux's mountd does; "." and ".." do not.
TEST_F(ServerDispatchTest, MountTakesTrailingAndRepeatedSlashes) {
  for (const char* path : {"/data/", "//data", "/data//"}) {
    const Mounted m = Mnt(path);
    ASSERT_EQ(m.status, static_cast<uint32_t>(MNT3_OK)) << path;
    EXPECT_EQ(m.fh, kRootFh);
  }
  EXPECT_EQ(Mnt("/data/.").status, static_cast<uint32_t>(MNT3ERR_ACCES));
  std::string results;
  // UMNT of the path as written removes the mount of what it names.
  EXPECT_EQ(Ask(MakeCall(3, kMountProgram, 3, 3, DirpathArgs("/data/"))).accept_stat, kSuccess);
  Ask(MakeCall(4, kMountProgram, 3, 2, ""), &results);
  EXPECT_EQ(results, std::string(4, '\0'));
}

// While the upstream's mountd cannot be asked (a WAN outage), a MNT of an
// export mounted before gets the root handle that MNT got; one never mounted
// cannot be answered.
TEST_F(ServerDispatchTest, MountDuringAnOutageAnswersAKnownRoot) {
  Mount("/data");
  loop_.RunSync([&] { mount_up_->set_fail_with(Timeout("the WAN is down")); });
  const Mounted m = Mnt("/data");
  ASSERT_EQ(m.status, static_cast<uint32_t>(MNT3_OK));
  EXPECT_EQ(m.fh, kRootFh);
  EXPECT_EQ(Mnt("/ro").status, static_cast<uint32_t>(MNT3ERR_SERVERFAULT));
  // With the outage known, at once: not after the upstream MNT's deadline.
  size_t asked = 0;
  loop_.RunSync([&] {
    asked = mount_up_->calls.size();
    mount_up_->set_fail_with(std::nullopt);
    mount_up_->set_responder(nullptr);  // never answers
    mount_->SetUpstreamOut([] { return true; });
  });
  EXPECT_EQ(Mnt("/data").fh, kRootFh);
  loop_.RunSync([&] { EXPECT_EQ(mount_up_->calls.size(), asked) << "not asked while out"; });
}

// The flavors a client is offered are the ones the proxy takes (AUTH_SYS),
// not the upstream's: a Linux client would try krb5 first against a proxy
// that refuses it.
TEST_F(ServerDispatchTest, MountListsTheProxysOwnFlavors) {
  const Mounted m = Mnt("/data");
  ASSERT_EQ(m.status, static_cast<uint32_t>(MNT3_OK));
  EXPECT_EQ(m.flavors, std::vector<int>{static_cast<int>(kAuthSys)});
}

TEST_F(ServerDispatchTest, UndecodableArgumentsAreGarbageArgs) {
  EXPECT_EQ(Ask(MakeCall(1, kNfsProgram, 3, 1, "\x00\x00")).accept_stat, kGarbageArgs);
  EXPECT_EQ(Ask(MakeCall(2, kNfsProgram, 3, 6, FhArgs("x"))).accept_stat, kGarbageArgs);
  EXPECT_EQ(Ask(MakeCall(3, kMountProgram, 3, 1, "\xff\xff\xff\xff")).accept_stat, kGarbageArgs);
  EXPECT_EQ(NfsCalls(), 0u);
}

TEST_F(ServerDispatchTest, BadAuthAndRpcVersionAreDenied) {
  ReplyHeader h = Ask(MakeCall(1, kNfsProgram, 3, 0, "", OpaqueAuth{3, "dh-cred"}));
  EXPECT_EQ(h.reply_stat, kMsgDenied);
  EXPECT_EQ(h.reject_stat, kAuthError);
  EXPECT_EQ(h.auth_stat, kAuthBadCred);
  OpaqueAuth truncated = SysCred(1, 1);
  truncated.body.resize(8);
  h = Ask(MakeCall(2, kNfsProgram, 3, 0, "", truncated));
  EXPECT_EQ(h.reject_stat, kAuthError);

  CallHeader v3;
  v3.xid = 3;
  v3.rpcvers = 3;
  v3.prog = kNfsProgram;
  v3.vers = 3;
  h = Ask(EncodeCallHeader(v3));
  EXPECT_EQ(h.reply_stat, kMsgDenied);
  EXPECT_EQ(h.reject_stat, kRpcMismatch);
  CallHeader bad_verf;
  bad_verf.xid = 4;
  bad_verf.prog = kNfsProgram;
  bad_verf.vers = 3;
  bad_verf.verf.body = std::string(kMaxAuthBytes + 4, 'v');
  h = Ask(EncodeCallHeader(bad_verf));
  EXPECT_EQ(h.reject_stat, kAuthError);
  EXPECT_EQ(h.auth_stat, kAuthBadVerf);
}

TEST_F(ServerDispatchTest, OversizedOrMalformedRecordClosesOnlyThatConnection) {
  BlockingClient other(port_);
  BlockingClient big(port_);
  std::string mark(4, '\0');
  StoreBE32(mark.data(), kLastFragment | (1u << 20));
  big.SendRaw(mark);
  EXPECT_TRUE(big.WaitClosed());

  BlockingClient junk(port_);
  junk.SendRecord("xyz");  // shorter than a call header
  EXPECT_TRUE(junk.WaitClosed());

  other.SendRecord(MakeCall(9, kNfsProgram, 3, 0, ""));
  std::optional<std::string> r = other.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 9u);
}

TEST_F(ServerDispatchTest, UnknownHandleIsStaleAndNeverReachesUpstream) {
  EXPECT_EQ(NfsStatusOf(MakeCall(1, kNfsProgram, 3, 1, FhArgs("forged-handle"))),
            static_cast<uint32_t>(NFS3ERR_STALE));
  EXPECT_EQ(NfsStatusOf(MakeCall(2, kNfsProgram, 3, 1, FhArgs(""))),
            static_cast<uint32_t>(NFS3ERR_BADHANDLE));
  EXPECT_EQ(NfsCalls(), 0u);
}

TEST_F(ServerDispatchTest, MountThenGetattrIsForwardedWithClientXidAndCredential) {
  Mount("/data");
  std::string results;
  ReplyHeader h = Ask(MakeCall(0xabcdef, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(1000, 100)),
                      &results);
  EXPECT_EQ(h.xid, 0xabcdefu);
  EXPECT_EQ(results, GetattrOk());
  loop_.RunSync([&] {
    ASSERT_EQ(mount_up_->calls.size(), 1u);
    EXPECT_EQ(mount_up_->calls[0].args, DirpathArgs("/srv/data"));
    ASSERT_EQ(nfs_up_->calls.size(), 1u);
    EXPECT_EQ(nfs_up_->calls[0].proc, 1u);
    EXPECT_EQ(nfs_up_->calls[0].args, FhArgs(kRootFh));
    EXPECT_EQ(DecodeAuthSys(nfs_up_->calls[0].cred.body)->uid, 1000u);
  });
}

TEST_F(ServerDispatchTest, RootIsSquashed) {
  Mount("/data");
  Ask(MakeCall(1, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(0, 0)));
  loop_.RunSync([&] {
    ASSERT_EQ(nfs_up_->calls.size(), 1u);
    std::optional<AuthSys> sent = DecodeAuthSys(nfs_up_->calls[0].cred.body);
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->uid, 4000u);
    EXPECT_EQ(sent->gid, 4001u);
  });
}

// RFC 5531 allows AUTH_SYS 16 groups; a longer list goes upstream as the
// client sent it, and root_squash rewrites only the ids it maps.
TEST_F(ServerDispatchTest, MoreThanSixteenGroupsGoUpstreamAsSent) {
  Mount("/data");
  std::vector<uint32_t> groups;
  for (uint32_t g = 0; g < 20; ++g) groups.push_back(500 + g);
  std::vector<uint32_t> with_zero = groups;
  with_zero[5] = 0;
  const OpaqueAuth user = SysCred(1000, 100, groups);
  const OpaqueAuth user_in_group_0 = SysCred(1000, 100, with_zero);
  const OpaqueAuth root = SysCred(0, 0, with_zero);
  for (const OpaqueAuth* cred : {&user, &user_in_group_0, &root}) {
    EXPECT_EQ(NfsStatusOf(MakeCall(1, kNfsProgram, 3, 1, FhArgs(kRootFh), *cred)),
              static_cast<uint32_t>(NFS3_OK));
  }
  // What root_squash makes of the credentials: anon_gid 4001 for the group
  // 0, anon_uid 4000 / anon_gid 4001 for root; nothing else changes.
  AuthSys squashed_group = *DecodeAuthSys(user_in_group_0.body);
  squashed_group.gids[5] = 4001;
  AuthSys squashed_root = *DecodeAuthSys(root.body);
  squashed_root.uid = 4000;
  squashed_root.gid = 4001;
  squashed_root.gids[5] = 4001;
  loop_.RunSync([&] {
    ASSERT_EQ(nfs_up_->calls.size(), 3u);
    for (const FakeUpstream::Seen& seen : nfs_up_->calls) EXPECT_EQ(seen.cred.flavor, kAuthSys);
    EXPECT_EQ(nfs_up_->calls[0].cred.body, user.body) << "byte for byte";
    EXPECT_EQ(nfs_up_->calls[1].cred.body, EncodeAuthSys(squashed_group));
    EXPECT_EQ(nfs_up_->calls[2].cred.body, EncodeAuthSys(squashed_root));
    std::optional<AuthSys> sent = DecodeAuthSys(nfs_up_->calls[2].cred.body);
    ASSERT_TRUE(sent);
    EXPECT_EQ(sent->gids.size(), 20u);
  });
}

TEST_F(ServerDispatchTest, MountRules) {
  std::string results;
  // A path no export covers: MNT3ERR_ACCES, as Linux's mountd answers.
  Ask(MakeCall(1, kMountProgram, 3, 1, DirpathArgs("/elsewhere")), &results);
  EXPECT_EQ(LoadBE32(results.data()), static_cast<uint32_t>(MNT3ERR_ACCES));
  Ask(MakeCall(2, kMountProgram, 3, 1, DirpathArgs("/data/../etc")), &results);
  EXPECT_EQ(LoadBE32(results.data()), static_cast<uint32_t>(MNT3ERR_ACCES));
  Ask(MakeCall(3, kMountProgram, 3, 1, DirpathArgs("/far")), &results);
  EXPECT_EQ(LoadBE32(results.data()), static_cast<uint32_t>(MNT3ERR_ACCES));
  loop_.RunSync([&] { EXPECT_EQ(mount_up_->calls.size(), 0u); });
}

// "/data" maps to "/srv/data": a client path of MNTPATHLEN bytes maps to an
// upstream path MOUNTv3 cannot carry; the client is told so, and nothing
// (in particular no empty MNT) goes upstream.
TEST_F(ServerDispatchTest, MountOfAPathTooLongUpstreamIsNameTooLong) {
  std::string path = "/data/" + std::string(MNTPATHLEN - 6, 'n');
  std::string results;
  Ask(MakeCall(1, kMountProgram, 3, 1, DirpathArgs(path)), &results);
  EXPECT_EQ(LoadBE32(results.data()), static_cast<uint32_t>(MNT3ERR_NAMETOOLONG));
  loop_.RunSync([&] { EXPECT_EQ(mount_up_->calls.size(), 0u); });
}

TEST_F(ServerDispatchTest, ReadOnlyExportRefusesMutations) {
  Mount("/ro");
  std::string write_args = FhArgs(kRoRootFh);
  XdrWriter w(&write_args);
  w.WriteU64(0);
  w.WriteU32(3);
  w.WriteU32(FILE_SYNC);
  w.WriteOpaque("abc");
  EXPECT_EQ(NfsStatusOf(MakeCall(1, kNfsProgram, 3, 7, write_args)),
            static_cast<uint32_t>(NFS3ERR_ROFS));
  std::string remove_args = FhArgs(kRoRootFh);
  XdrWriter(&remove_args).WriteOpaque("f");
  EXPECT_EQ(NfsStatusOf(MakeCall(2, kNfsProgram, 3, 12, remove_args)),
            static_cast<uint32_t>(NFS3ERR_ROFS));
  std::string commit_args = FhArgs(kRoRootFh);
  XdrWriter c(&commit_args);
  c.WriteU64(0);
  c.WriteU32(0);
  EXPECT_EQ(NfsStatusOf(MakeCall(4, kNfsProgram, 3, 21, commit_args)),
            static_cast<uint32_t>(NFS3ERR_ROFS));
  EXPECT_EQ(NfsCalls(), 0u);
  EXPECT_EQ(NfsStatusOf(MakeCall(3, kNfsProgram, 3, 1, FhArgs(kRoRootFh))),
            static_cast<uint32_t>(NFS3_OK));
}

TEST_F(ServerDispatchTest, ExportListsConfiguredPaths) {
  std::string results;
  Ask(MakeCall(1, kMountProgram, 3, 5, ""), &results);
  XdrValue<exports> ex(reinterpret_cast<xdrproc_t>(xdr_exports));
  ASSERT_TRUE(ex.Decode(results));
  std::vector<std::string> paths;
  for (exportnode* n = ex.get(); n; n = n->ex_next) paths.push_back(n->ex_dir);
  EXPECT_EQ(paths, (std::vector<std::string>{"/data", "/ro", "/far"}));
}

TEST_F(ServerDispatchTest, DumpAndUmnt) {
  Mount("/data");
  std::string results;
  Ask(MakeCall(1, kMountProgram, 3, 2, ""), &results);
  XdrValue<mountlist> ml(reinterpret_cast<xdrproc_t>(xdr_mountlist));
  ASSERT_TRUE(ml.Decode(results));
  ASSERT_NE(ml.get(), nullptr);
  EXPECT_STREQ(ml.get()->ml_directory, "/data");
  EXPECT_STREQ(ml.get()->ml_hostname, "127.0.0.1");
  EXPECT_EQ(Ask(MakeCall(2, kMountProgram, 3, 3, DirpathArgs("/data"))).accept_stat, kSuccess);
  Ask(MakeCall(3, kMountProgram, 3, 2, ""), &results);
  EXPECT_EQ(results, std::string(4, '\0'));  // empty list
}

TEST_F(ServerDispatchTest, UpstreamFailureIsJukebox) {
  Mount("/data");
  loop_.RunSync([&] { nfs_up_->set_fail_with(Timeout("test")); });
  EXPECT_EQ(NfsStatusOf(MakeCall(1, kNfsProgram, 3, 1, FhArgs(kRootFh))),
            static_cast<uint32_t>(NFS3ERR_JUKEBOX));
}

TEST_F(ServerDispatchTest, RepliesLeaveOutOfOrderAndBackPressureHolds) {
  Mount("/data");
  loop_.RunSync([&] { nfs_up_->set_responder(nullptr); });  // hold every call
  BlockingClient c(port_);
  for (uint32_t xid = 1; xid <= 6; ++xid) {
    // Distinct credentials: identical calls would share one upstream call.
    c.SendRecord(MakeCall(xid, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(1000 + xid, 100)));
  }
  // max_calls_per_connection = 4: only four reach the upstream.
  for (int i = 0; i < 1000 && NfsCalls() < 4; ++i) usleep(10000);
  usleep(50000);
  EXPECT_EQ(NfsCalls(), 4u);
  loop_.RunSync([&] { nfs_up_->Answer(3, GetattrOk()); });
  std::optional<std::string> r = c.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 4u);  // the fourth call, answered first
  for (int i = 0; i < 1000 && NfsCalls() < 5; ++i) usleep(10000);
  EXPECT_EQ(NfsCalls(), 5u);  // a slot freed: one more call read
  loop_.RunSync([&] {
    // From now on answer at once, and answer the calls still held.
    nfs_up_->set_responder(
        [](const FakeUpstream::Seen&) -> std::optional<std::string> { return GetattrOk(); });
    for (size_t i = 0; i < nfs_up_->calls.size(); ++i) {
      if (i != 3) nfs_up_->Answer(i, GetattrOk());
    }
  });
  std::set<uint32_t> xids;
  for (int i = 0; i < 5; ++i) {
    r = c.ReadRecord();
    ASSERT_TRUE(r);
    xids.insert(ParseReply(*r)->xid);
  }
  EXPECT_EQ(xids, (std::set<uint32_t>{1, 2, 3, 5, 6}));
}

TEST_F(ServerDispatchTest, IdenticalReadOnlyCallsShareOneUpstreamCall) {
  Mount("/data");
  loop_.RunSync([&] { nfs_up_->set_responder(nullptr); });  // hold
  BlockingClient a(port_), b(port_), other(port_);
  a.SendRecord(MakeCall(101, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(1000, 100)));
  for (int i = 0; i < 1000 && NfsCalls() < 1; ++i) usleep(10000);
  b.SendRecord(MakeCall(202, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(1000, 100)));
  other.SendRecord(MakeCall(303, kNfsProgram, 3, 1, FhArgs(kRootFh), SysCred(2000, 100)));
  for (int i = 0; i < 1000 && NfsCalls() < 2; ++i) usleep(10000);
  usleep(50000);
  EXPECT_EQ(NfsCalls(), 2u);  // a and b share one; another user's goes on its own
  loop_.RunSync([&] {
    for (size_t i = 0; i < nfs_up_->calls.size(); ++i) nfs_up_->Answer(i, GetattrOk());
  });
  for (auto [client, xid] : {std::pair{&a, 101u}, {&b, 202u}, {&other, 303u}}) {
    std::optional<std::string> r = client->ReadRecord();
    ASSERT_TRUE(r) << xid;
    EXPECT_EQ(ParseReply(*r)->xid, xid);
    EXPECT_EQ(r->substr(ParseReply(*r)->results_offset), GetattrOk());
  }
  // Mutations are never shared.
  std::string args = FhArgs(kRootFh);
  XdrWriter(&args).WriteOpaque("x");
  a.SendRecord(MakeCall(1, kNfsProgram, 3, 12, args, SysCred(1000, 100)));
  b.SendRecord(MakeCall(2, kNfsProgram, 3, 12, args, SysCred(1000, 100)));
  for (int i = 0; i < 1000 && NfsCalls() < 4; ++i) usleep(10000);
  EXPECT_EQ(NfsCalls(), 4u);
}

// REMOVE3res NFS3_OK with empty wcc data.
std::string RemoveOk() { return std::string(12, '\0'); }

// DESIGN rule 7: a mutation retransmitted with the same XID, over a new
// connection as clients do after a reconnect, gets the first reply and does
// not run twice upstream; a new XID or other arguments are a new call.
TEST_F(ServerDispatchTest, RetransmittedMutationGetsTheFirstReplyAndRunsOnce) {
  Mount("/data");
  loop_.RunSync([&] {
    nfs_up_->set_responder(
        [](const FakeUpstream::Seen&) -> std::optional<std::string> { return RemoveOk(); });
  });
  std::string args = FhArgs(kRootFh);
  XdrWriter(&args).WriteOpaque("x");
  const std::string call = MakeCall(77, kNfsProgram, 3, NFSPROC3_REMOVE, args, SysCred(1000, 100));
  std::optional<std::string> first, again;
  {
    BlockingClient a(port_);
    a.SendRecord(call);
    first = a.ReadRecord();
  }
  BlockingClient b(port_);
  b.SendRecord(call);
  again = b.ReadRecord();
  ASSERT_TRUE(first && again);
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(ParseReply(*again)->xid, 77u);
  EXPECT_EQ(NfsCalls(), 1u);

  b.SendRecord(MakeCall(78, kNfsProgram, 3, NFSPROC3_REMOVE, args, SysCred(1000, 100)));
  ASSERT_TRUE(b.ReadRecord());
  std::string other = FhArgs(kRootFh);
  XdrWriter(&other).WriteOpaque("y");
  b.SendRecord(MakeCall(77, kNfsProgram, 3, NFSPROC3_REMOVE, other, SysCred(1000, 100)));
  ASSERT_TRUE(b.ReadRecord());
  EXPECT_EQ(NfsCalls(), 3u);
  DrcStats st;
  loop_.RunSync([&] { st = nfs_->drc_stats(); });
  EXPECT_EQ(st.replayed, 1u);
  EXPECT_EQ(st.recorded, 3u);
}

// The caller is part of a call's identity: another user of the same host
// whose call has the same XID and arguments is a new call, and runs; the same
// user's retransmission with a new AUTH_SYS stamp is the same call.
TEST_F(ServerDispatchTest, SameXidFromAnotherUserOfTheHostIsANewCall) {
  Mount("/data");
  loop_.RunSync([&] {
    nfs_up_->set_responder(
        [](const FakeUpstream::Seen&) -> std::optional<std::string> { return RemoveOk(); });
  });
  std::string args = FhArgs(kRootFh);
  XdrWriter(&args).WriteOpaque("x");
  BlockingClient c(port_);
  c.SendRecord(MakeCall(5, kNfsProgram, 3, NFSPROC3_REMOVE, args, SysCred(1000, 100)));
  ASSERT_TRUE(c.ReadRecord());
  c.SendRecord(MakeCall(5, kNfsProgram, 3, NFSPROC3_REMOVE, args, SysCred(2000, 100)));
  ASSERT_TRUE(c.ReadRecord());
  EXPECT_EQ(NfsCalls(), 2u);

  OpaqueAuth restamped{kAuthSys, EncodeAuthSys(AuthSys{8, "testhost", 1000, 100, {}})};
  c.SendRecord(MakeCall(5, kNfsProgram, 3, NFSPROC3_REMOVE, args, restamped));
  ASSERT_TRUE(c.ReadRecord());
  EXPECT_EQ(NfsCalls(), 2u);
  DrcStats st;
  loop_.RunSync([&] { st = nfs_->drc_stats(); });
  EXPECT_EQ(st.replayed, 1u);
}

// A retransmission that arrives while the first call is still upstream waits
// for it, and both get its reply.
TEST_F(ServerDispatchTest, RetransmissionOfACallInProgressWaitsForItsReply) {
  Mount("/data");
  loop_.RunSync([&] { nfs_up_->set_responder(nullptr); });  // hold
  std::string args = FhArgs(kRootFh);
  XdrWriter(&args).WriteOpaque("d");
  const std::string call = MakeCall(91, kNfsProgram, 3, NFSPROC3_RMDIR, args, SysCred(1000, 100));
  BlockingClient a(port_), b(port_);
  a.SendRecord(call);
  for (int i = 0; i < 1000 && NfsCalls() < 1; ++i) usleep(10000);
  b.SendRecord(call);
  usleep(50000);
  EXPECT_EQ(NfsCalls(), 1u);
  loop_.RunSync([&] { nfs_up_->Answer(0, RemoveOk()); });
  for (BlockingClient* c : {&a, &b}) {
    std::optional<std::string> r = c->ReadRecord();
    ASSERT_TRUE(r);
    EXPECT_EQ(ParseReply(*r)->xid, 91u);
    EXPECT_EQ(r->substr(ParseReply(*r)->results_offset), RemoveOk());
  }
  EXPECT_EQ(NfsCalls(), 1u);
}

std::string AccessArgs(const std::string& fh, uint32_t mask) {
  std::string out = FhArgs(fh);
  XdrWriter(&out).WriteU32(mask);
  return out;
}

// Grants every bit asked for, with the attributes of GetattrOk().
std::string AccessOk(const std::string& args) {
  ACCESS3res res{};
  res.status = NFS3_OK;
  ACCESS3resok& ok = res.ACCESS3res_u.resok;
  ok.obj_attributes.attributes_follow = TRUE;
  ok.obj_attributes.post_op_attr_u.attributes.type = NF3DIR;
  ok.obj_attributes.post_op_attr_u.attributes.mode = 0755;
  ok.access = args.size() >= 4 ? LoadBE32(args.data() + args.size() - 4) : 0;
  std::string out;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), &res, &out);
  return out;
}

// The dispatch fixture with a metadata cache (no data cache): which calls
// the cache answers, seen from the upstream's side.
class CachedDispatchTest : public ServerDispatchTest {
 protected:
  void SetUp() override {
    cache_ = std::make_unique<MetadataCache>(clock_, CacheConfig{});
    ServerDispatchTest::SetUp();
    loop_.RunSync([this] {
      nfs_up_->set_responder([](const FakeUpstream::Seen& s) -> std::optional<std::string> {
        return s.proc == NFSPROC3_ACCESS ? AccessOk(s.args) : GetattrOk();
      });
    });
  }
  uint32_t Access(uint32_t xid, const OpaqueAuth& cred) {
    return NfsStatusOf(
        MakeCall(xid, kNfsProgram, 3, NFSPROC3_ACCESS, AccessArgs(kRootFh, 0x3f), cred));
  }
  uint32_t Getattr(uint32_t xid, const OpaqueAuth& cred) {
    return NfsStatusOf(MakeCall(xid, kNfsProgram, 3, NFSPROC3_GETATTR, FhArgs(kRootFh), cred));
  }
};

// A credential with more than 16 groups is never answered from the caches:
// every call goes upstream, which decides (docs/security.md).
TEST_F(CachedDispatchTest, MoreThanSixteenGroupsAreNeverAnsweredFromCache) {
  Mount("/data");
  const std::vector<uint32_t> few = {501, 502, 503};
  std::vector<uint32_t> many = few;
  for (uint32_t g = 0; many.size() < 17; ++g) many.push_back(600 + g);
  const OpaqueAuth user = SysCred(1000, 100, few);
  const OpaqueAuth user_many = SysCred(1000, 100, many);
  ASSERT_EQ(Access(1, user), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(NfsCalls(), 1u);
  // The control: the cache answers the credential that filled it.
  ASSERT_EQ(Access(2, user), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Getattr(3, user), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(NfsCalls(), 1u) << "ACCESS and GETATTR from cache";
  // The same uid and groups, and more: every call goes upstream.
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(Access(10 + i, user_many), static_cast<uint32_t>(NFS3_OK));
    EXPECT_EQ(Getattr(20 + i, user_many), static_cast<uint32_t>(NFS3_OK));
  }
  EXPECT_EQ(NfsCalls(), 5u);
  loop_.RunSync([&] {
    for (size_t i = 1; i < nfs_up_->calls.size(); ++i) {
      EXPECT_EQ(nfs_up_->calls[i].cred.body, user_many.body);
    }
  });
}

// Nor is anything learned for such a credential: 17 groups of which two are
// equal have the groups of a 16-group credential, yet an ACCESS answer
// given to the first is no evidence for the second.
TEST_F(CachedDispatchTest, NothingIsLearnedForACredentialWithMoreThanSixteenGroups) {
  Mount("/data");
  std::vector<uint32_t> sixteen;
  for (uint32_t g = 1; g <= 16; ++g) sixteen.push_back(700 + g);
  std::vector<uint32_t> seventeen = sixteen;
  seventeen.insert(seventeen.begin(), sixteen.front());
  ASSERT_EQ(Access(1, SysCred(1000, 100, seventeen)), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(NfsCalls(), 1u);
  EXPECT_EQ(Access(2, SysCred(1000, 100, sixteen)), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(NfsCalls(), 2u) << "answered from what the 17-group credential was told";
  // The 16-group credential's own answer is evidence for it.
  EXPECT_EQ(Access(3, SysCred(1000, 100, sixteen)), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(NfsCalls(), 2u);
}

// FSINFO and PATHCONF answered from cache to any credential while the
// object's attributes are fresh; an FSINFO from cache is clamped to the
// proxy's transfer size as the upstream's reply was.
TEST_F(CachedDispatchTest, FsinfoAndPathconfComeFromCacheClampedAsTheUpstreamsWere) {
  Mount("/data");
  loop_.RunSync([this] {
    nfs_up_->set_responder([](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      fattr3 a{};
      a.type = NF3DIR;
      a.mode = 0755;
      a.nlink = 2;
      a.mtime.seconds = a.ctime.seconds = 1;
      if (s.proc == NFSPROC3_FSINFO) {
        FSINFO3res res{};
        res.status = NFS3_OK;
        FSINFO3resok& ok = res.FSINFO3res_u.resok;
        ok.obj_attributes.attributes_follow = TRUE;
        ok.obj_attributes.post_op_attr_u.attributes = a;
        ok.rtmax = ok.wtmax = 4u << 20;  // more than the proxy takes
        ok.rtpref = ok.wtpref = 4u << 20;
        ok.dtpref = 8192;
        ok.maxfilesize = 1ull << 40;
        ok.properties = FSF3_SYMLINK | FSF3_HOMOGENEOUS;
        return test_xdr::Xdr(test_xdr::Proc(xdr_FSINFO3res), res);
      }
      PATHCONF3res res{};
      res.status = NFS3_OK;
      PATHCONF3resok& ok = res.PATHCONF3res_u.resok;
      ok.obj_attributes.attributes_follow = TRUE;
      ok.obj_attributes.post_op_attr_u.attributes = a;
      ok.linkmax = 65000;
      ok.name_max = 255;
      ok.no_trunc = TRUE;
      return test_xdr::Xdr(test_xdr::Proc(xdr_PATHCONF3res), res);
    });
  });
  auto fsinfo = [&](uint32_t xid, const OpaqueAuth& cred) {
    std::string results;
    Ask(MakeCall(xid, kNfsProgram, 3, NFSPROC3_FSINFO, FhArgs(kRootFh), cred), &results);
    XdrValue<FSINFO3res> res(test_xdr::Proc(xdr_FSINFO3res));
    EXPECT_TRUE(res.Decode(results));
    EXPECT_EQ(res->status, NFS3_OK);
    return res->FSINFO3res_u.resok;
  };
  const FSINFO3resok first = fsinfo(1, SysCred(1000, 100));
  EXPECT_LE(first.rtmax, 1u << 20) << "clamped";
  EXPECT_EQ(NfsCalls(), 1u);
  const FSINFO3resok again = fsinfo(2, SysCred(2000, 200));  // another user
  EXPECT_EQ(NfsCalls(), 1u) << "from cache";
  EXPECT_EQ(again.rtmax, first.rtmax);
  EXPECT_EQ(again.wtmax, first.wtmax);
  EXPECT_EQ(again.rtpref, first.rtpref);
  EXPECT_EQ(again.wtpref, first.wtpref);
  EXPECT_EQ(again.maxfilesize, first.maxfilesize);
  EXPECT_EQ(again.properties, first.properties);
  EXPECT_TRUE(again.obj_attributes.attributes_follow);
  for (uint32_t xid : {3u, 4u}) {
    std::string results;
    Ask(MakeCall(xid, kNfsProgram, 3, NFSPROC3_PATHCONF, FhArgs(kRootFh), SysCred(1000, 100)),
        &results);
    XdrValue<PATHCONF3res> res(test_xdr::Proc(xdr_PATHCONF3res));
    ASSERT_TRUE(res.Decode(results));
    EXPECT_EQ(res->PATHCONF3res_u.resok.linkmax, 65000u);
    EXPECT_EQ(res->PATHCONF3res_u.resok.name_max, 255u);
  }
  EXPECT_EQ(NfsCalls(), 2u) << "one PATHCONF upstream";
}

}  // namespace
}  // namespace nfsedge
