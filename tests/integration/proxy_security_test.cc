// proxy_security_test: confinement of handles and credentials (docs/security.md)
// over real sockets, nfsedge in front of a real ganesha.
//
// - Handles: the persistent registry keeps handles valid across a proxy
//   restart; forged handles and handles of an upstream export the proxy does
//   not serve get STALE and never reach the upstream (the proxy's upstream
//   call counter does not move, and the upstream itself would have answered
//   them); handles of two exports in one call (RENAME, LINK) get XDEV and
//   never reach the upstream, a nested export and the one around it
//   included; nested exports: ".." of an export's root is not handed out.
// - Credentials: all_squash, secure (privileged source port).
// - DESIGN rule 6 on every cache path (LOOKUP, ACCESS, GETATTR, READ,
//   READDIR, READLINK): after the owner has filled the caches, another user
//   gets through the proxy exactly what the upstream gives it directly.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/files.h"
#include "harness/private_network.h"
#include "integration_env.h"
#include "proxy_counters.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint32_t kOwner = 1000;
constexpr uint32_t kOther = 2000;
constexpr uint32_t kAnon = 4444;
const std::string kOutside = PrivateNetwork::kSecondaryAddress;  // 127.0.0.2

class SecurityTest : public ::testing::Test {
 protected:
  // ganesha exports <tmp>/data and <tmp>/other; nfsedge exports
  //   /data          (127.0.0.1 only), the handle store under <tmp>/handles
  //   /data/sub      nested, open to 127.0.0.0/8
  //   /squash        all_squash to kAnon (upstream <tmp>/other)
  //   /secure        secure (upstream <tmp>/other/secure)
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    StartBed(/*handle_store=*/true);
  }
  void StartBed(bool handle_store) {
    bed_.reset();
    Testbed::Options o;
    o.name = "security";
    for (const char* name : {"data", "other"}) {
      o.ganesha.exports.emplace_back();
      o.ganesha.exports.back().path = name;
    }
    ProxyExport data;
    data.path = "/data";
    data.upstream_path = "data";
    data.clients = {"127.0.0.1/32"};
    ProxyExport sub;
    sub.path = "/data/sub";
    sub.upstream_path = "data/sub";
    ProxyExport squash;
    squash.path = "/squash";
    squash.upstream_path = "other";
    squash.anon_uid = kAnon;
    squash.anon_gid = kAnon;
    squash.extra_toml = "all_squash = true\n";
    ProxyExport secure;
    secure.path = "/secure";
    secure.upstream_path = "other/secure";
    secure.extra_toml = "secure = true\n";
    o.proxy.exports = {data, sub, squash, secure};
    if (!prefetch_at_defaults_) {
      o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n[prefetch]\nenabled = false\n";
    }
    if (handle_store) {
      // The bed's temporary directory is made by Start(): the store gets its own.
      char tmpl[] = "/tmp/nfsedge-security-handles-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      handle_dir_ = tmpl;
      o.proxy.extra_server_toml = "handle_store = \"" + handle_dir_ + "/store\"\n";
    }
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
    ASSERT_TRUE(MakeDirs(Disk(0) + "/sub").ok());
    ASSERT_TRUE(MakeDirs(Disk(1) + "/secure").ok());
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
    bed_.reset();
    if (!handle_dir_.empty()) std::filesystem::remove_all(handle_dir_);
  }

  std::string Disk(int i) { return bed_->ganesha().export_path(i); }
  std::unique_ptr<RawNfs> Proxy(uint32_t uid = 0, uint32_t gid = 0,
                                const std::string& source = "") {
    return ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{uid, gid, {}, "t"},
                         source);
  }
  std::unique_ptr<RawNfs> Direct(uint32_t uid = 0, uint32_t gid = 0) {
    return ConnectOrFail("127.0.0.1", bed_->ganesha().nfs_port(), Credential{uid, gid, {}, "t"});
  }
  std::string ProxyRoot(RawNfs& c, const std::string& path) {
    auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, "");
    if (!m) return "";
    MntResult r = m->Mnt(path);
    EXPECT_TRUE(r.ok()) << "MNT " << path << ": " << MountStatName(r.status) << r.rpc_error;
    (void)c;
    return r.fh;
  }
  std::string DirectRoot(int i) {
    auto m = ConnectOrFail("127.0.0.1", bed_->ganesha().mount_port(), {}, "");
    if (!m) return "";
    MntResult r = m->Mnt(Disk(i));
    EXPECT_TRUE(r.ok()) << "MNT " << Disk(i) << ": " << MountStatName(r.status) << r.rpc_error;
    return r.fh;
  }

  // The proxy's upstream call counter, from the stats it logs on SIGUSR1.
  uint64_t UpstreamCalls() {
    const std::string kKey = "stats upstream calls=";
    auto count_lines = [&] {
      std::ifstream in(bed_->proxy()->log_path());
      std::string line, last;
      size_t n = 0;
      while (std::getline(in, line)) {
        size_t at = line.find(kKey);
        if (at != std::string::npos) {
          n++;
          last = line.substr(at + kKey.size());
        }
      }
      return std::make_pair(n, last);
    };
    const size_t before = count_lines().first;
    kill(bed_->proxy()->pid(), SIGUSR1);
    for (int i = 0; i < 200; ++i) {
      auto [n, last] = count_lines();
      if (n > before) return std::stoull(last);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ADD_FAILURE() << "no stats line after SIGUSR1";
    return 0;
  }

  std::unique_ptr<Testbed> bed_;
  std::string handle_dir_;
  // Tree-walk prefetch and refresh-ahead as configured by default (else
  // off: only the client's calls reach the upstream).
  bool prefetch_at_defaults_ = false;
};

// ---- Handles ----

TEST_F(SecurityTest, HandlesIssuedBeforeARestartStayValidAfterIt) {
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", "hello").ok());
  auto c = Proxy();
  ASSERT_TRUE(c);
  const std::string root = ProxyRoot(*c, "/data");
  LookupResult f = c->Lookup(root, "f");
  ASSERT_TRUE(f.ok()) << f.StatusString();
  CreateResult d = c->Mkdir(root, "made", Sattr());
  ASSERT_TRUE(d.ok()) << d.StatusString();
  const size_t handle_bytes = f.fh.size();

  ASSERT_TRUE(bed_->RestartProxy().ok()) << bed_->LogTails();
  c = Proxy();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->Getattr(root).ok()) << "root handle after restart";
  ReadResult r = c->Read(f.fh, 0, 100);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  EXPECT_EQ(r.data, "hello");
  EXPECT_TRUE(c->Create(d.fh, "inside", Sattr()).ok()) << "directory made before the restart";
  EXPECT_EQ(f.fh.size(), handle_bytes);
  LookupResult again = c->Lookup(root, "f");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.fh, f.fh) << "handles go out as the upstream made them";
  EXPECT_NE(bed_->proxy()->LogTail(200).find("handle(s) loaded"), std::string::npos);
}

TEST_F(SecurityTest, WithoutAHandleStoreARestartForgetsHandles) {
  StartBed(/*handle_store=*/false);
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", "x").ok());
  auto c = Proxy();
  const std::string root = ProxyRoot(*c, "/data");
  LookupResult f = c->Lookup(root, "f");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(bed_->RestartProxy().ok());
  c = Proxy();
  EXPECT_EQ(c->Getattr(f.fh).status, kNfs3ErrStale);
}

// A warm after such a restart hands the export's tree out again: the root
// of the export it walks is that export's root, as after a MNT, so a client
// still holding its handle from before cannot step above it with "..".
TEST_F(SecurityTest, AWarmAfterARestartKeepsDotDotOfTheExportsRootShut) {
  StartBed(/*handle_store=*/false);
  ASSERT_TRUE(WriteFile(Disk(0) + "/sub/inner-file", "inner").ok());
  auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, kOutside);
  ASSERT_TRUE(m);
  MntResult sub = m->Mnt("/data/sub");
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(bed_->RestartProxy().ok());
  auto outside = Proxy(0, 0, kOutside);  // 127.0.0.2: /data/sub only
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->Getattr(sub.fh).status, kNfs3ErrStale);
  auto [code, out] =
      RunNfsedge("warm /data/sub --socket " + bed_->proxy()->control_socket_path());
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(outside->Getattr(sub.fh).ok()) << "the warm made the root's handle known again";
  EXPECT_TRUE(outside->Lookup(sub.fh, "inner-file").ok());
  EXPECT_EQ(outside->Lookup(sub.fh, "..").status, kNfs3ErrAcces);
}

TEST_F(SecurityTest, ForgedAndForeignHandlesNeverReachTheUpstream) {
  ASSERT_TRUE(WriteFile(Disk(1) + "/theirs", "not exported as such").ok());
  // Handles the upstream knows: the root of its export "other" (served by
  // the proxy only below other/secure and as /squash, never handed out
  // here) and a file in it, obtained by going around the proxy.
  auto direct = Direct();
  ASSERT_TRUE(direct);
  const std::string other_root = DirectRoot(1);
  LookupResult theirs = direct->Lookup(other_root, "theirs");
  ASSERT_TRUE(theirs.ok());
  ASSERT_TRUE(direct->Getattr(theirs.fh).ok()) << "the upstream would answer it";

  auto c = Proxy();
  ASSERT_TRUE(c);
  const std::string root = ProxyRoot(*c, "/data");
  ASSERT_TRUE(c->Getattr(root).ok());
  std::string forged = root;
  forged.back() = static_cast<char>(forged.back() ^ 0x5a);

  const uint64_t before = UpstreamCalls();
  for (const std::string& fh : {theirs.fh, forged, std::string(16, '\x01')}) {
    EXPECT_EQ(c->Getattr(fh).status, kNfs3ErrStale);
    EXPECT_EQ(c->Read(fh, 0, 10).status, kNfs3ErrStale);
    EXPECT_EQ(c->Lookup(fh, "x").status, kNfs3ErrStale);
    EXPECT_EQ(c->Access(fh, kAccessAll).status, kNfs3ErrStale);
    EXPECT_EQ(c->Create(fh, "x", Sattr()).status, kNfs3ErrStale);
    EXPECT_EQ(c->Rename(root, "a", fh, "b").status, kNfs3ErrStale);
  }
  EXPECT_EQ(c->Getattr("").status, kNfs3ErrBadhandle);
  EXPECT_EQ(UpstreamCalls(), before) << "a refused call reached the upstream";
  EXPECT_TRUE(c->Getattr(root).ok());
}

// Handles of two exports (two upstream file systems) in one call: the
// proxy answers NFS3ERR_XDEV itself, as a server does across file systems.
TEST_F(SecurityTest, RenameAndLinkAcrossExportsAreXdevAndNeverReachTheUpstream) {
  ASSERT_TRUE(WriteFile(Disk(0) + "/here", "stays").ok());
  auto c = Proxy();
  ASSERT_TRUE(c);
  const std::string data = ProxyRoot(*c, "/data");
  const std::string squash = ProxyRoot(*c, "/squash");
  LookupResult here = c->Lookup(data, "here");
  ASSERT_TRUE(here.ok()) << here.StatusString();
  ASSERT_TRUE(c->Getattr(squash).ok());

  const uint64_t before = UpstreamCalls();
  EXPECT_EQ(c->Rename(data, "here", squash, "moved").status, kNfs3ErrXdev);
  EXPECT_EQ(c->Rename(squash, "x", data, "y").status, kNfs3ErrXdev);
  EXPECT_EQ(c->Link(here.fh, squash, "linked").status, kNfs3ErrXdev);
  EXPECT_EQ(UpstreamCalls(), before) << "a cross-export call reached the upstream";
  EXPECT_EQ(ReadFile(Disk(0) + "/here"), "stays");
  EXPECT_NE(access((Disk(1) + "/moved").c_str(), F_OK), 0);
  EXPECT_NE(access((Disk(1) + "/linked").c_str(), F_OK), 0);
  // Within one export both work.
  EXPECT_TRUE(c->Link(here.fh, data, "linked").ok());
  EXPECT_TRUE(c->Rename(data, "linked", data, "renamed").ok());
}

TEST_F(SecurityTest, NestedExportsConfineHandles) {
  ASSERT_TRUE(WriteFile(Disk(0) + "/outer-file", "outer").ok());
  ASSERT_TRUE(WriteFile(Disk(0) + "/sub/inner-file", "inner").ok());
  auto inside = Proxy();                    // 127.0.0.1: both exports
  auto outside = Proxy(0, 0, kOutside);     // 127.0.0.2: /data/sub only
  ASSERT_TRUE(inside && outside);
  const std::string data_root = ProxyRoot(*inside, "/data");
  LookupResult outer = inside->Lookup(data_root, "outer-file");
  ASSERT_TRUE(outer.ok());
  // The outside client cannot mount /data, nor use its handles.
  auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, kOutside);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->Mnt("/data").status, kMnt3ErrAcces);
  MntResult sub = m->Mnt("/data/sub");
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(outside->Getattr(outer.fh).status, kNfs3ErrAcces);
  EXPECT_EQ(outside->Getattr(data_root).status, kNfs3ErrAcces);

  // ".." of its export's root leads out: refused, and not handed out in a
  // listing either.
  EXPECT_EQ(outside->Lookup(sub.fh, "..").status, kNfs3ErrAcces);
  ReaddirResult list = outside->ReaddirAll(sub.fh, /*plus=*/true);
  ASSERT_TRUE(list.ok()) << list.StatusString();
  bool saw_inner = false;
  for (const DirEntry& e : list.entries) {
    if (e.name == ".." && !e.fh.empty()) {
      EXPECT_FALSE(outside->Getattr(e.fh).ok()) << "the parent of the export's root";
    }
    if (e.name == "inner-file") {
      saw_inner = true;
      EXPECT_TRUE(outside->Getattr(e.fh).ok());
    }
  }
  EXPECT_TRUE(saw_inner);
  // Inside its export, everything works.
  LookupResult inner = outside->Lookup(sub.fh, "inner-file");
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(outside->Read(inner.fh, 0, 10).data, "inner");
  // The client allowed both may walk up from /data/sub once the handle was
  // handed out for /data too (by a LOOKUP through /data).
  EXPECT_EQ(inside->Lookup(sub.fh, "..").status, kNfs3ErrAcces);
  LookupResult via_data = inside->Lookup(data_root, "sub");
  ASSERT_TRUE(via_data.ok());
  ASSERT_EQ(via_data.fh, sub.fh);
  LookupResult up = inside->Lookup(sub.fh, "..");
  ASSERT_TRUE(up.ok()) << up.StatusString();
  EXPECT_EQ(up.fh, data_root);
}

// A RENAME or LINK between a nested export's tree and the tree around it
// (handles of /data/sub, also handed out for /data, and handles of /data
// alone) is across exports: XDEV, as a server answers, not the outer
// export's rules for both (which would drop the inner one's: read-only,
// squashing).
TEST_F(SecurityTest, RenameAndLinkOutOfANestedExportAreXdev) {
  ASSERT_TRUE(WriteFile(Disk(0) + "/outer-file", "outer").ok());
  ASSERT_TRUE(WriteFile(Disk(0) + "/sub/inner-file", "inner").ok());
  auto c = Proxy();  // 127.0.0.1: both exports
  ASSERT_TRUE(c);
  auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, "");
  ASSERT_TRUE(m);
  MntResult mounted = m->Mnt("/data/sub");
  ASSERT_TRUE(mounted.ok());
  const std::string data_root = ProxyRoot(*c, "/data");
  LookupResult sub = c->Lookup(data_root, "sub");  // now of /data and /data/sub
  ASSERT_TRUE(sub.ok()) << sub.StatusString();
  ASSERT_EQ(sub.fh, mounted.fh);
  LookupResult outer = c->Lookup(data_root, "outer-file");
  ASSERT_TRUE(outer.ok());

  const uint64_t before = UpstreamCalls();
  EXPECT_EQ(c->Rename(sub.fh, "inner-file", data_root, "escaped").status, kNfs3ErrXdev);
  EXPECT_EQ(c->Rename(data_root, "outer-file", sub.fh, "moved-in").status, kNfs3ErrXdev);
  EXPECT_EQ(c->Link(outer.fh, sub.fh, "linked").status, kNfs3ErrXdev);
  EXPECT_EQ(UpstreamCalls(), before) << "a call across the exports reached the upstream";
  EXPECT_EQ(ReadFile(Disk(0) + "/sub/inner-file"), "inner");
  EXPECT_NE(access((Disk(0) + "/escaped").c_str(), F_OK), 0);
  EXPECT_NE(access((Disk(0) + "/sub/linked").c_str(), F_OK), 0);
  // Within the nested export, both go.
  EXPECT_TRUE(c->Rename(sub.fh, "inner-file", sub.fh, "renamed").ok());
}

// ---- Credentials ----

TEST_F(SecurityTest, AllSquashMakesEveryUserAnonymous) {
  auto c = Proxy(kOwner, kOwner);
  ASSERT_TRUE(c);
  const std::string root = ProxyRoot(*c, "/squash");
  ASSERT_TRUE(c->Create(root, "by-user", Sattr()).ok());
  auto as_root = Proxy(0, 0);
  ASSERT_TRUE(as_root->Create(root, "by-root", Sattr()).ok());
  for (const char* name : {"/by-user", "/by-root"}) {
    struct stat st {};
    ASSERT_EQ(stat((Disk(1) + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, kAnon) << name;
    EXPECT_EQ(st.st_gid, kAnon) << name;
  }
}

TEST_F(SecurityTest, SecureExportRequiresAPrivilegedSourcePort) {
  auto connect = [&](uint16_t port, bool privileged) {
    RawNfs::Options o;
    o.endpoint.host = "127.0.0.1";
    o.endpoint.port = port;
    o.endpoint.privileged_port = privileged;
    auto c = RawNfs::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  };
  auto high_mnt = connect(bed_->proxy()->mount_port(), false);
  auto low_mnt = connect(bed_->proxy()->mount_port(), true);
  ASSERT_TRUE(high_mnt && low_mnt);
  ASSERT_GE(high_mnt->local_port(), 1024);
  ASSERT_LT(low_mnt->local_port(), 1024);
  EXPECT_EQ(high_mnt->Mnt("/secure").status, kMnt3ErrAcces);
  MntResult ok = low_mnt->Mnt("/secure");
  ASSERT_TRUE(ok.ok()) << MountStatName(ok.status);
  EXPECT_TRUE(high_mnt->Mnt("/squash").ok()) << "other exports do not require it";

  auto high = connect(bed_->proxy()->nfs_port(), false);
  auto low = connect(bed_->proxy()->nfs_port(), true);
  ASSERT_TRUE(high && low);
  EXPECT_EQ(high->Getattr(ok.fh).status, kNfs3ErrPerm);
  EXPECT_EQ(high->Create(ok.fh, "sneaky", Sattr()).status, kNfs3ErrPerm);
  EXPECT_TRUE(low->Getattr(ok.fh).ok());
  EXPECT_NE(access((Disk(1) + "/secure/sneaky").c_str(), F_OK), 0);
  EXPECT_NE(bed_->proxy()->LogTail(200).find("source port not privileged"), std::string::npos);
}

// ---- DESIGN rule 6 on every cache path ----

// A private tree of kOwner under /data: dir 0700 holding a 0600 file, a
// 0700 subdirectory (holding a 0600 file) and a symlink. The owner fills
// every cache through the proxy; then another user must get what the
// upstream gives it directly. Run twice: with prefetch and refresh-ahead off
// (only the owner's calls fill the caches), and at their defaults, where
// the owner's listing of the directory and then of the subdirectory starts
// a tree walk that lists and reads ahead with the owner's credential.
class CredentialPathsTest : public SecurityTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    prefetch_at_defaults_ = GetParam();
    SecurityTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const std::string p = Disk(0) + "/private";
    ASSERT_TRUE(MakeDirs(p + "/subdir").ok());
    ASSERT_TRUE(WriteFile(p + "/file", "secret data").ok());
    ASSERT_TRUE(WriteFile(p + "/subdir/inner", "inner secret").ok());
    ASSERT_TRUE(WriteFile(p + "/unread", "unread secret").ok());  // only a walk reads it
    ASSERT_EQ(symlink("file", (p + "/link").c_str()), 0);
    ASSERT_EQ(lchown((p + "/link").c_str(), kOwner, kOwner), 0);
    for (const char* f : {"", "/subdir", "/file", "/subdir/inner", "/unread"}) {
      ASSERT_EQ(chown((p + f).c_str(), kOwner, kOwner), 0);
    }
    ASSERT_EQ(chmod(p.c_str(), 0700), 0);
    ASSERT_EQ(chmod((p + "/subdir").c_str(), 0700), 0);
    ASSERT_EQ(chmod((p + "/file").c_str(), 0600), 0);
    ASSERT_EQ(chmod((p + "/subdir/inner").c_str(), 0600), 0);
    ASSERT_EQ(chmod((p + "/unread").c_str(), 0600), 0);

    owner_ = Proxy(kOwner, kOwner);
    other_ = Proxy(kOther, kOther);
    other_direct_ = Direct(kOther, kOther);
    ASSERT_TRUE(owner_ && other_ && other_direct_);
    const std::string root = ProxyRoot(*owner_, "/data");
    LookupResult dir = owner_->Lookup(root, "private");
    ASSERT_TRUE(dir.ok());
    dir_ = dir.fh;
    // The owner fills every cache, twice (the second pass from cache).
    for (int pass = 0; pass < 2; ++pass) {
      ASSERT_TRUE(owner_->Access(dir_, kAccessAll).ok());
      ASSERT_TRUE(owner_->ReaddirAll(dir_, true).ok());
      ASSERT_TRUE(owner_->ReaddirAll(dir_, false).ok());
      LookupResult file = owner_->Lookup(dir_, "file");
      LookupResult link = owner_->Lookup(dir_, "link");
      LookupResult sub = owner_->Lookup(dir_, "subdir");
      ASSERT_TRUE(file.ok() && link.ok() && sub.ok());
      file_ = file.fh;
      link_ = link.fh;
      subdir_ = sub.fh;
      ASSERT_TRUE(owner_->Access(file_, kAccessAll).ok());
      ASSERT_TRUE(owner_->Getattr(file_).ok());
      ReadResult r = owner_->Read(file_, 0, 100);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r.data, "secret data");
      ASSERT_TRUE(owner_->Readlink(link_).ok());
      ASSERT_TRUE(owner_->Access(subdir_, kAccessAll).ok());
      ASSERT_TRUE(owner_->ReaddirAll(subdir_, true).ok());
      LookupResult inner = owner_->Lookup(subdir_, "inner");
      ASSERT_TRUE(inner.ok());
      inner_ = inner.fh;
      ASSERT_EQ(owner_->Read(inner_, 0, 100).data, "inner secret");
    }
    LookupResult unread = owner_->Lookup(dir_, "unread");
    ASSERT_TRUE(unread.ok());
    unread_ = unread.fh;
    if (GetParam()) WaitForTheWalk();
  }
  // Waits until the walk the owner started has listed and read ahead (the
  // prefetch counters the proxy logs on SIGUSR1).
  void WaitForTheWalk() {
    int64_t walks = -1, files = -1;
    WaitUntil(
        [&] {
          kill(bed_->proxy()->pid(), SIGUSR1);
          const std::string log = ReadFile(bed_->proxy()->log_path());
          walks = Counter(log, "stats prefetch queued=", "walks");
          files = Counter(log, "stats prefetch queued=", "files");
          return walks >= 1 && files >= 1;
        },
        Millis(10000), Millis(200));
    ASSERT_GE(walks, 1) << "the owner's listings started no walk";
    ASSERT_GE(files, 1) << "the walk read no file ahead";
  }

  std::unique_ptr<RawNfs> owner_, other_, other_direct_;
  std::string dir_, file_, link_, subdir_, inner_, unread_;
};

INSTANTIATE_TEST_SUITE_P(Caches, CredentialPathsTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "PrefetchAndRefreshAtDefaults" : "ClientCallsOnly";
                         });

TEST_P(CredentialPathsTest, Lookup) {
  LookupResult direct = other_direct_->Lookup(dir_, "file");
  ASSERT_EQ(direct.status, kNfs3ErrAcces) << "restrictive modes as intended";
  EXPECT_EQ(other_->Lookup(dir_, "file").status, direct.status);
  EXPECT_EQ(other_->Lookup(dir_, "missing").status,
            other_direct_->Lookup(dir_, "missing").status)
      << "negative entries too";
  EXPECT_TRUE(owner_->Lookup(dir_, "file").ok());
  LookupResult direct_inner = other_direct_->Lookup(subdir_, "inner");
  ASSERT_EQ(direct_inner.status, kNfs3ErrAcces);
  EXPECT_EQ(other_->Lookup(subdir_, "inner").status, direct_inner.status);
}

TEST_P(CredentialPathsTest, Access) {
  for (const std::string* fh : {&dir_, &file_, &subdir_, &inner_, &unread_}) {
    AccessResult direct = other_direct_->Access(*fh, kAccessAll);
    AccessResult proxied = other_->Access(*fh, kAccessAll);
    ASSERT_TRUE(direct.ok() && proxied.ok());
    EXPECT_EQ(proxied.access, direct.access);
    EXPECT_EQ(proxied.access & (kAccessRead | kAccessLookup | kAccessModify), 0u);
  }
  EXPECT_TRUE(owner_->Access(file_, kAccessRead).access & kAccessRead);
}

TEST_P(CredentialPathsTest, Getattr) {
  for (const std::string* fh : {&dir_, &file_, &link_, &subdir_, &inner_}) {
    GetattrResult direct = other_direct_->Getattr(*fh);
    GetattrResult proxied = other_->Getattr(*fh);
    EXPECT_EQ(proxied.status, direct.status);
    if (direct.ok() && proxied.ok()) {
      EXPECT_EQ(proxied.attr.mode, direct.attr.mode);
      EXPECT_EQ(proxied.attr.uid, direct.attr.uid);
      EXPECT_EQ(proxied.attr.size, direct.attr.size);
    }
  }
}

TEST_P(CredentialPathsTest, Read) {
  for (const std::string* fh : {&file_, &inner_, &unread_}) {
    ReadResult direct = other_direct_->Read(*fh, 0, 100);
    ASSERT_EQ(direct.status, kNfs3ErrAcces);
    ReadResult proxied = other_->Read(*fh, 0, 100);
    EXPECT_EQ(proxied.status, direct.status);
    EXPECT_EQ(proxied.data.find("secret"), std::string::npos);
  }
  EXPECT_EQ(owner_->Read(file_, 0, 100).data, "secret data");
  EXPECT_EQ(owner_->Read(inner_, 0, 100).data, "inner secret");
}

TEST_P(CredentialPathsTest, Readdir) {
  for (bool plus : {false, true}) {
    for (const std::string* fh : {&dir_, &subdir_}) {
      ReaddirResult direct = plus ? other_direct_->Readdirplus(*fh, 0, "", 4096, 8192)
                                  : other_direct_->Readdir(*fh, 0, "", 4096);
      ASSERT_EQ(direct.status, kNfs3ErrAcces) << "plus=" << plus;
      ReaddirResult proxied =
          plus ? other_->Readdirplus(*fh, 0, "", 4096, 8192) : other_->Readdir(*fh, 0, "", 4096);
      EXPECT_EQ(proxied.status, direct.status) << "plus=" << plus;
      EXPECT_TRUE(proxied.entries.empty());
    }
  }
}

TEST_P(CredentialPathsTest, Readlink) {
  ReadlinkResult direct = other_direct_->Readlink(link_);
  ReadlinkResult proxied = other_->Readlink(link_);
  EXPECT_EQ(proxied.status, direct.status);
  EXPECT_EQ(proxied.target, direct.target);
  EXPECT_EQ(owner_->Readlink(link_).target, "file");
}

}  // namespace
}  // namespace nfsedge::itest
