// proxy_exports_test: nfsedge's export rules over real sockets, in front of
// a real ganesha. Client networks (a client at 127.0.0.2 outside
// 127.0.0.1/32), read-only exports (ROFS for every mutation, reads work),
// root squash (owner on disk is the anon uid/gid), forged file handles, and
// MNT of paths that are not exported.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "harness/files.h"
#include "harness/private_network.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint32_t kAnonUid = 4321;
constexpr uint32_t kAnonGid = 4322;
const std::string kOutside = PrivateNetwork::kSecondaryAddress;  // 127.0.0.2

Testbed* g_testbed = nullptr;
std::string* g_setup_error = nullptr;

class ExportsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g_setup_error = new std::string();
    if (!SkipReason().empty()) return;
    Testbed::Options o;
    o.name = "exports";
    auto tb = Testbed::Start(Configure(o));
    if (!tb.ok()) {
      *g_setup_error = tb.status().message();
      return;
    }
    g_testbed = std::move(tb).value().release();
    // Content for the read-only export, made directly on disk.
    const std::string ro = Upstream("ro");
    Status s = WriteFile(ro + "/file.txt", "read me");
    if (s.ok()) s = MakeDirs(ro + "/dir");
    if (s.ok()) s = WriteFile(ro + "/dir/inner", "x");
    if (s.ok() && symlink("file.txt", (ro + "/link").c_str()) != 0) s = Status::Error("symlink");
    if (!s.ok()) *g_setup_error = s.message();
  }

  // ganesha exports <tmp>/rw, <tmp>/ro and <tmp>/squash (relative paths
  // are resolved by Testbed); nfsedge exports them as /rw, /ro, /squash.
  static Testbed::Options Configure(Testbed::Options o) {
    for (const char* name : {"rw", "ro", "squash"}) {
      Ganesha::Export e;
      e.path = name;
      o.ganesha.exports.push_back(e);
    }
    ProxyExport rw;
    rw.path = "/rw";
    rw.upstream_path = "rw";
    rw.clients = {"127.0.0.1/32"};
    ProxyExport ro = rw;
    ro.path = "/ro";
    ro.upstream_path = "ro";
    ro.access = "ro";
    ProxyExport squash;
    squash.path = "/squash";
    squash.upstream_path = "squash";
    squash.clients = {"127.0.0.0/8"};
    squash.root_squash = true;
    squash.anon_uid = kAnonUid;
    squash.anon_gid = kAnonGid;
    o.proxy.exports = {rw, ro, squash};
    return o;
  }

  // The upstream directory behind proxy export `name` ("rw", "ro", "squash").
  static std::string Upstream(const std::string& name) { return g_testbed->dir().Sub(name); }

  static void TearDownTestSuite() {
    if (g_testbed != nullptr) {
      ExitStatus s = g_testbed->Stop();
      EXPECT_TRUE(s.success()) << "nfsedge exit: " << s.ToString();
    }
    delete g_testbed;
    g_testbed = nullptr;
    delete g_setup_error;
  }

  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    ASSERT_TRUE(g_setup_error->empty()) << *g_setup_error;
  }
  void TearDown() override {
    if (g_testbed != nullptr) {
      EXPECT_TRUE(g_testbed->proxy()->IsRunning()) << "nfsedge died";
    }
    PrintLogsOnFailure(*this, g_testbed);
  }

  ProxyProcess& proxy() { return *g_testbed->proxy(); }
  std::unique_ptr<RawNfs> Nfs(const Credential& cred = {}, const std::string& source = "") {
    return ConnectOrFail(proxy().host(), proxy().nfs_port(), cred, source);
  }
  std::unique_ptr<RawNfs> Mount(const std::string& source = "") {
    return ConnectOrFail(proxy().host(), proxy().mount_port(), {}, source);
  }
  // MNTs `path` from 127.0.0.1; fails the test unless it works.
  std::string Root(const std::string& path) {
    auto m = Mount();
    if (!m) return "";
    MntResult r = m->Mnt(path);
    EXPECT_TRUE(r.ok()) << "MNT " << path << ": " << MountStatName(r.status) << r.rpc_error;
    return r.fh;
  }
};

bool IsStaleOrBad(uint32_t status) {
  return status == kNfs3ErrStale || status == kNfs3ErrBadhandle;
}

TEST_F(ExportsTest, ClientOutsideNetworksIsRefused) {
  auto outside_mnt = Mount(kOutside);
  ASSERT_TRUE(outside_mnt);
  MntResult refused = outside_mnt->Mnt("/rw");
  ASSERT_TRUE(refused.rpc_ok) << refused.rpc_error;
  EXPECT_EQ(refused.status, kMnt3ErrAcces) << MountStatName(refused.status);
  // The same client may mount an export open to 127.0.0.0/8.
  MntResult allowed = outside_mnt->Mnt("/squash");
  EXPECT_TRUE(allowed.ok()) << MountStatName(allowed.status);

  const std::string root = Root("/rw");
  ASSERT_FALSE(root.empty());
  auto inside = Nfs();
  ASSERT_TRUE(inside->Getattr(root).ok());
  ASSERT_TRUE(inside->Create(root, "visible", Sattr()).ok());

  // A handle learnt elsewhere does not open the export to this client.
  auto outside = Nfs({}, kOutside);
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->Getattr(root).status, kNfs3ErrAcces);
  EXPECT_EQ(outside->Lookup(root, "visible").status, kNfs3ErrAcces);
  EXPECT_EQ(outside->Readdir(root, 0, "", 4096).status, kNfs3ErrAcces);
  EXPECT_EQ(outside->Create(root, "sneaky", Sattr()).status, kNfs3ErrAcces);
  EXPECT_EQ(outside->Fsinfo(root).status, kNfs3ErrAcces);
  EXPECT_TRUE(outside->Null().rpc_ok) << "NULL needs no export";
  EXPECT_TRUE(outside->Getattr(allowed.fh).ok()) << "other exports stay usable";
  EXPECT_NE(access((Upstream("rw") + "/sneaky").c_str(), F_OK), 0) << "CREATE went through";
}

TEST_F(ExportsTest, ReadOnlyExportRefusesMutations) {
  const std::string root = Root("/ro");
  ASSERT_FALSE(root.empty());
  auto nfs = Nfs();
  // Reads work.
  LookupResult file = nfs->Lookup(root, "file.txt");
  ASSERT_TRUE(file.ok()) << file.StatusString();
  LookupResult dir = nfs->Lookup(root, "dir");
  ASSERT_TRUE(dir.ok()) << dir.StatusString();
  LookupResult link = nfs->Lookup(root, "link");
  ASSERT_TRUE(link.ok()) << link.StatusString();
  EXPECT_TRUE(nfs->Getattr(file.fh).ok());
  EXPECT_EQ(nfs->Read(file.fh, 0, 100).data, "read me");
  EXPECT_EQ(nfs->Readlink(link.fh).target, "file.txt");
  ReaddirResult list = nfs->ReaddirAll(root, false);
  EXPECT_TRUE(list.ok()) << list.StatusString();
  EXPECT_EQ(list.entries.size(), 5u) << ". .. file.txt dir link";
  EXPECT_TRUE(nfs->ReaddirAll(root, true).ok());
  EXPECT_TRUE(nfs->Fsstat(root).ok());
  EXPECT_TRUE(nfs->Fsinfo(root).ok());
  EXPECT_TRUE(nfs->Pathconf(root).ok());
  AccessResult acc = nfs->Access(file.fh, kAccessRead);
  EXPECT_TRUE(acc.ok()) << acc.StatusString();
  EXPECT_TRUE(acc.access & kAccessRead);

  // Every mutation: ROFS.
  Sattr mode;
  mode.mode = 0600;
  EXPECT_EQ(nfs->Write(file.fh, 0, "overwrite", Stable::kFileSync).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Write(file.fh, 0, "overwrite", Stable::kUnstable).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Create(root, "new", mode).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Create(root, "new", mode, /*guarded=*/true).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->CreateExclusive(root, "new", Verifier('v')).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Mkdir(root, "newdir", mode).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Symlink(root, "newlink", "x").status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Mknod(root, "fifo", FileType::kFifo, mode).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Setattr(file.fh, mode).status, kNfs3ErrRofs);
  Sattr truncate;
  truncate.size = 0;
  EXPECT_EQ(nfs->Setattr(file.fh, truncate).status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Remove(root, "file.txt").status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Rmdir(root, "dir").status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Rename(root, "file.txt", root, "moved").status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Link(file.fh, root, "hard").status, kNfs3ErrRofs);
  EXPECT_EQ(nfs->Commit(file.fh, 0, 0).status, kNfs3ErrRofs) << "a COMMIT asks for writing";

  // Nothing changed on disk.
  const std::string ro = Upstream("ro");
  EXPECT_EQ(ReadFile(ro + "/file.txt"), "read me");
  struct stat st;
  ASSERT_EQ(stat((ro + "/file.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  for (const char* name : {"new", "newdir", "newlink", "fifo", "moved", "hard"}) {
    EXPECT_NE(access((ro + "/" + name).c_str(), F_OK), 0) << name << " was created";
  }
  EXPECT_EQ(access((ro + "/dir/inner").c_str(), F_OK), 0);
}

// ACCESS must not promise what the export refuses (Linux knfsd clears the
// write bits on read-only exports; a client trusting them opens for writing
// and fails later).
TEST_F(ExportsTest, ReadOnlyExportAccessGrantsNoWriteBits) {
  const std::string root = Root("/ro");
  ASSERT_FALSE(root.empty());
  auto nfs = Nfs();
  const uint32_t kWriteBits = kAccessModify | kAccessExtend | kAccessDelete;
  LookupResult file = nfs->Lookup(root, "file.txt");
  ASSERT_TRUE(file.ok()) << file.StatusString();
  AccessResult f = nfs->Access(file.fh, kAccessAll);
  ASSERT_TRUE(f.ok()) << f.StatusString();
  EXPECT_TRUE(f.access & kAccessRead);
  EXPECT_EQ(f.access & kWriteBits, 0u) << "ACCESS on a file of a ro export granted " << f.access;
  AccessResult d = nfs->Access(root, kAccessAll);
  ASSERT_TRUE(d.ok()) << d.StatusString();
  EXPECT_TRUE(d.access & kAccessLookup);
  EXPECT_EQ(d.access & kWriteBits, 0u) << "ACCESS on the ro export's root granted " << d.access;
}

TEST_F(ExportsTest, RootSquashMapsRootToAnon) {
  const std::string root = Root("/squash");
  ASSERT_FALSE(root.empty());
  const std::string disk = Upstream("squash");
  struct stat st;

  auto as_root = Nfs();
  ASSERT_TRUE(as_root->Create(root, "by-root", Sattr()).ok());
  ASSERT_EQ(stat((disk + "/by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kAnonUid);
  EXPECT_EQ(st.st_gid, kAnonGid);
  ASSERT_TRUE(as_root->Mkdir(root, "dir-by-root", Sattr()).ok());
  ASSERT_EQ(stat((disk + "/dir-by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kAnonUid);
  EXPECT_EQ(st.st_gid, kAnonGid);

  Credential user;
  user.uid = 1000;
  user.gid = 1000;
  auto as_user = Nfs(user);
  ASSERT_TRUE(as_user->Create(root, "by-user", Sattr()).ok());
  ASSERT_EQ(stat((disk + "/by-user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u) << "only root is squashed";
  EXPECT_EQ(st.st_gid, 1000u);

  Credential group_root;
  group_root.uid = 1001;
  group_root.gid = 0;
  auto as_gid0 = Nfs(group_root);
  ASSERT_TRUE(as_gid0->Create(root, "by-gid0", Sattr()).ok());
  ASSERT_EQ(stat((disk + "/by-gid0").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1001u);
  EXPECT_EQ(st.st_gid, kAnonGid) << "gid 0 is squashed too";

  // A root-owned 0600 file on disk is out of reach for a squashed root.
  ASSERT_TRUE(WriteFile(disk + "/secret", "s").ok());
  ASSERT_EQ(chmod((disk + "/secret").c_str(), 0600), 0);
  LookupResult secret = as_root->Lookup(root, "secret");
  ASSERT_TRUE(secret.ok()) << secret.StatusString();
  EXPECT_EQ(as_root->Read(secret.fh, 0, 10).status, kNfs3ErrAcces);

  // Control: the /rw export does not squash.
  const std::string rw = Root("/rw");
  ASSERT_TRUE(as_root->Create(rw, "root-owned", Sattr()).ok());
  ASSERT_EQ(stat((Upstream("rw") + "/root-owned").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
}

TEST_F(ExportsTest, ForgedHandlesAreStale) {
  const std::string root = Root("/rw");
  ASSERT_FALSE(root.empty());
  auto nfs = Nfs();
  CreateResult f = nfs->Create(root, "real", Sattr());
  ASSERT_TRUE(f.ok()) << f.StatusString();

  std::vector<std::pair<std::string, std::string>> forged = {
      {"random 32 bytes", Pattern(32, 99)},
      {"random 64 bytes", Pattern(64, 98)},
      {"8 zero bytes", std::string(8, '\0')},
      {"empty", ""},
  };
  std::string flipped = f.fh;
  flipped.back() = static_cast<char>(flipped.back() ^ 0x5a);
  forged.emplace_back("real handle, last byte flipped", flipped);
  flipped = f.fh;
  flipped.front() = static_cast<char>(flipped.front() ^ 0x5a);
  forged.emplace_back("real handle, first byte flipped", flipped);
  forged.emplace_back("real handle, truncated", f.fh.substr(0, f.fh.size() / 2));

  for (const auto& [what, fh] : forged) {
    GetattrResult g = nfs->Getattr(fh);
    ASSERT_TRUE(g.rpc_ok) << what << ": " << g.rpc_error;
    EXPECT_TRUE(IsStaleOrBad(g.status)) << what << ": GETATTR " << g.StatusString();
    LookupResult l = nfs->Lookup(fh, "real");
    EXPECT_TRUE(IsStaleOrBad(l.status)) << what << ": LOOKUP " << l.StatusString();
    WriteResult w = nfs->Write(fh, 0, "x", Stable::kFileSync);
    EXPECT_TRUE(IsStaleOrBad(w.status)) << what << ": WRITE " << w.StatusString();
  }
  EXPECT_TRUE(nfs->Getattr(f.fh).ok()) << "the real handle still works";

  // A handle of a removed file is stale too.
  ASSERT_TRUE(nfs->Remove(root, "real").ok());
  EXPECT_EQ(nfs->Getattr(f.fh).status, kNfs3ErrStale);
}

// LOOKUP ".." at an export's root must not leave the export (the upstream
// directory above it is not exported by nfsedge).
TEST_F(ExportsTest, DotDotAtExportRootStaysInside) {
  const std::string root = Root("/rw");
  ASSERT_FALSE(root.empty());
  auto nfs = Nfs();
  GetattrResult r = nfs->Getattr(root);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  LookupResult up = nfs->Lookup(root, "..");
  ASSERT_TRUE(up.rpc_ok) << up.rpc_error;
  if (up.ok()) {
    GetattrResult g = nfs->Getattr(up.fh);
    ASSERT_TRUE(g.ok()) << g.StatusString();
    EXPECT_EQ(g.attr.fileid, r.attr.fileid) << "LOOKUP .. at the root of /rw left the export";
    ReaddirResult list = nfs->ReaddirAll(up.fh, false);
    for (const DirEntry& e : list.entries) {
      EXPECT_NE(e.name, "ro") << "the parent of /rw is visible through LOOKUP ..";
    }
  }
  ReaddirResult plus = nfs->ReaddirAll(root, true);
  ASSERT_TRUE(plus.ok()) << plus.StatusString();
  for (const DirEntry& e : plus.entries) {
    if (e.name != ".." || e.fh.empty()) continue;
    GetattrResult g = nfs->Getattr(e.fh);
    EXPECT_TRUE(!g.ok() || g.attr.fileid == r.attr.fileid)
        << "READDIRPLUS .. at the root of /rw hands out the parent's handle";
  }
}

// A subdirectory of an export mounts as the upstream would mount it.
TEST_F(ExportsTest, MntOfSubdirectoryMatchesUpstream) {
  ASSERT_TRUE(MakeDirs(Upstream("rw") + "/sub/deeper").ok());
  auto direct = ConnectOrFail(g_testbed->ganesha().host(), g_testbed->ganesha().mount_port());
  auto m = Mount();
  ASSERT_TRUE(direct && m);
  MntResult want = direct->Mnt(Upstream("rw") + "/sub/deeper");
  MntResult got = m->Mnt("/rw/sub/deeper");
  ASSERT_TRUE(want.rpc_ok && got.rpc_ok) << want.rpc_error << got.rpc_error;
  EXPECT_EQ(MountStatName(got.status), MountStatName(want.status));
  if (got.ok()) {
    auto nfs = Nfs();
    GetattrResult g = nfs->Getattr(got.fh);
    EXPECT_EQ(g.attr.type, static_cast<uint32_t>(FileType::kDir)) << g.StatusString();
  }
}

TEST_F(ExportsTest, MntOfUnexportedPaths) {
  auto m = Mount();
  ASSERT_TRUE(m);
  for (const std::string& path :
       {std::string("/nope"), Upstream("rw"), std::string("/"), std::string("/rw/../ro"),
        std::string("rw"), std::string("/rwx"), std::string("")}) {
    MntResult r = m->Mnt(path);
    ASSERT_TRUE(r.rpc_ok) << path << ": " << r.rpc_error;
    EXPECT_TRUE(r.status == kMnt3ErrNoent || r.status == kMnt3ErrAcces)
        << "MNT \"" << path << "\": " << MountStatName(r.status);
  }
  ExportResult ex = m->Export();
  ASSERT_TRUE(ex.rpc_ok) << ex.rpc_error;
  std::set<std::string> dirs;
  for (const ExportEntry& e : ex.exports) {
    dirs.insert(e.dir);
    std::string groups;
    for (const std::string& g : e.groups) groups += g + " ";
    std::printf("EXPORT %s: %s\n", e.dir.c_str(), groups.c_str());
  }
  EXPECT_EQ(dirs, (std::set<std::string>{"/rw", "/ro", "/squash"}));
}

}  // namespace
}  // namespace nfsedge::itest
