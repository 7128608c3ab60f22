// Configuration, exports and their handles: what a reload, a restart with
// the handle store, and the export rules do to what clients hold
// (docs/config.md "Reload", docs/security.md, docs/cache-format.md "Handle
// store").
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <map>
#include <utility>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/config.h"
#include "proxy/config_reload.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_procs.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "rpc/xdr_codec.h"
#include "client_calls.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

// ---- Handle store across restarts (docs/cache-format.md, "Handle store") ----

class HandleStoreExportRemovalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsedge-export-rules-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/store";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // A registry over dir_ with exports `paths`, as the daemon opens it at start.
  std::unique_ptr<HandleRegistry> Start(std::vector<std::string> paths) {
    auto r = std::make_unique<HandleRegistry>(100);
    Status s = r->Persist(dir_, std::move(paths));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return r;
  }

  std::string root_, dir_;
};

// docs/cache-format.md: "at start-up each record's paths are matched to the
// configured exports; paths no longer configured are dropped", and
// docs/security.md: "removing an export forgets its handles". A handle that
// belonged to a removed export only is deleted from the store, so it stays
// forgotten when the export returns (PersistentRegistryTest.
// ExportsAreMatchedByPathAcrossConfigChanges). A handle that also belonged
// to another export is stored again without the removed one, so the removed
// export's membership does not come back with the export.
TEST_F(HandleStoreExportRemovalTest, ARemovedExportStaysForgottenForHandlesOfAnotherExportToo) {
  {
    auto r = Start({"/a", "/gone"});
    r->Add("only-gone", 1);
    r->Add("in-a-and-gone", 0);
    r->Add("in-a-and-gone", 1);
  }
  {
    // Restart without /gone: both handles lose it.
    auto r = Start({"/a"});
    EXPECT_FALSE(r->Find("only-gone"));
    std::optional<ExportSet> s = r->FindAll("in-a-and-gone");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->exports, uint64_t{1} << 0);
  }
  // Restart with /gone configured again.
  auto r = Start({"/a", "/gone"});
  EXPECT_FALSE(r->Find("only-gone"));
  std::optional<ExportSet> s = r->FindAll("in-a-and-gone");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->Has(0));
  EXPECT_FALSE(s->Has(1)) << "the handle is again a handle of /gone, which a restart had removed";
}

// docs/security.md: "pointing it at another upstream directory forgets its
// handles". An export narrowed to a subdirectory of what it served (or to
// another tree) keeps its path; handles of the old tree, stored before the
// restart, must not come back as members of it (they would reach the whole
// old tree, and its ".." the old root).
TEST_F(HandleStoreExportRemovalTest, AnExportPointedAtAnotherUpstreamDirectoryForgetsItsHandles) {
  auto key = [](const char* path, const char* upstream) {
    ExportConfig c;
    c.path = path;
    c.upstream_path = upstream;
    return Export(0, c).StoreKey();
  };
  {
    auto r = Start({key("/data", "/srv/all")});
    r->Add("hr-file", 0);
  }
  {
    auto r = Start({key("/data", "/srv/public")});
    EXPECT_FALSE(r->Find("hr-file")) << "a handle of the old tree is a handle of the narrowed export";
  }
  // The same export as before, reordered among others, keeps its handles.
  {
    auto r = Start({key("/data", "/srv/all")});
    r->Add("kept", 0);
  }
  auto r = Start({key("/other", "/srv/other"), key("/data", "/srv/all")});
  std::optional<ExportSet> s = r->FindAll("kept");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->Has(1));
}

// ---- Reload (docs/config.md, "Reload") ----

const char* kOneExport = R"(
[[export]]
path = "/d"
clients = ["10.0.0.0/8"]
)";

// The certificate clients' TLS needs is a restart key (server.tls_cert_file);
// an export's `tls` changes at once. A file that adds both, reloaded, must
// not leave in force an export with tls = "required" and no certificate (no
// client could start TLS, every MNT and NFS call on the export would be
// refused until a restart; config.md refuses this combination at load:
// "Anything but "off" needs [server] tls_cert_file"): the export's `tls`
// waits for the restart too.
TEST(ReloadOfExportTls, RequiredTlsDoesNotTakeEffectBeforeTheCertificateIs) {
  StatusOr<Config> in_force = ParseConfig(kOneExport, "t.toml");
  ASSERT_TRUE(in_force.ok()) << in_force.status().ToString();
  StatusOr<Config> loaded = ParseConfig(R"(
[server]
tls_cert_file = "/etc/nfsedge/cert.pem"
tls_key_file = "/etc/nfsedge/key.pem"

[[export]]
path = "/d"
clients = ["10.0.0.0/8"]
tls = "required"
)",
                                        "t.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();

  ReloadPlan plan = PlanReload(*in_force, *loaded);
  ASSERT_TRUE(plan.next.server.tls_cert_file.empty()) << "the certificate waits for a restart";
  ASSERT_EQ(plan.next.exports.size(), 1u);
  EXPECT_NE(plan.next.exports[0].tls, ExportTls::kRequired)
      << "the export requires TLS while the proxy has no certificate to offer: every client of "
         "it is refused until a restart";
}

// ---- Lifetimes changed by a reload (docs/config.md, "Reload") ----

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start

fattr3 FileAttr(uint32_t changed_at) {
  fattr3 a{};
  a.type = NF3REG;
  a.mode = 0644;
  a.nlink = 1;
  a.size = 5;
  a.fileid = 42;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

class ReloadedLifetimesTest : public ::testing::Test {
 protected:
  ReloadedLifetimesTest() : exports_({MakeExport(3, 60)}), cache_(clock_, {}) {}

  static ExportConfig MakeExport(uint32_t regmin, uint32_t regmax) {
    ExportConfig c;
    c.path = "/e";
    c.upstream_path = "/e";
    c.clients.push_back(*Network::Parse("10.0.0.0/8"));
    c.acregmin = regmin;
    c.acregmax = regmax;
    return c;
  }
  nfs_fh3 Fh() {
    nfs_fh3 fh{};
    fh.data.data_val = file_.data();
    fh.data.data_len = static_cast<u_int>(file_.size());
    return fh;
  }
  // An upstream GETATTR reply through the export: a file last changed an
  // hour ago, so it lives the export's acregmax.
  void LearnGetattr() {
    GETATTR3args args{Fh()};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = FileAttr(kWall0 - 3600);
    std::string out;
    ASSERT_TRUE(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), &res, &out));
    cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args, out, exports_.Get(0), user_);
  }
  bool AnsweredFromCache() {
    GETATTR3args args{Fh()};
    return cache_.Answer(*FindNfsProc(NFSPROC3_GETATTR), &args, exports_.Get(0), user_)
        .has_value();
  }

  FakeClock clock_;
  ExportTable exports_;
  MetadataCache cache_;
  CredKey user_ = CredKey::FromIds(1000, 1000, {});
  std::string file_ = "FILE-HANDLE-0001";
};

// docs/config.md: a reload changes an export's lifetimes "at once", and
// "With all four at 0 every GETATTR, ACCESS and LOOKUP goes to the
// upstream". An entry filled before the reload, with an expiry computed
// with the old acregmax (60 s), is not answered once the reload set the
// lifetimes to 0.
TEST_F(ReloadedLifetimesTest, LifetimesSetToZeroByAReloadStopCachedAnswersAtOnce) {
  LearnGetattr();
  ASSERT_TRUE(AnsweredFromCache());
  ASSERT_TRUE(exports_.Update({MakeExport(0, 0)}).ok());
  EXPECT_FALSE(AnsweredFromCache())
      << "GETATTR answered from an entry cached under acregmax = 60 after a reload set it to 0";
}

// The same with a shorter, non-zero acregmax: 6 s after a reload that set
// it to 5 s, a file unchanged for an hour is not answered from what was
// cached under the old 60 s any more.
TEST_F(ReloadedLifetimesTest, ALowerAcregmaxBoundsEntriesCachedBeforeTheReload) {
  LearnGetattr();
  ASSERT_TRUE(exports_.Update({MakeExport(3, 5)}).ok());
  clock_.Advance(std::chrono::seconds(6));
  EXPECT_FALSE(AnsweredFromCache())
      << "GETATTR answered 6 s after the fill although the export's acregmax is now 5 s";
}

// A reload that leaves the exports as they were (a log level changed, or
// the same file loaded again) changes no rules: walks, warms and MNTs in
// progress, which stop or start over at a change of the rules, go on.
TEST_F(ReloadedLifetimesTest, OnlyAReloadThatChangesAnExportChangesTheRules) {
  const uint64_t before = exports_.updates();
  ASSERT_TRUE(exports_.Update({MakeExport(3, 60)}).ok());
  EXPECT_EQ(exports_.updates(), before) << "the same exports counted as a change of the rules";
  ExportConfig other_clients = MakeExport(3, 60);
  other_clients.clients = {*Network::Parse("10.1.0.0/16")};
  ASSERT_TRUE(exports_.Update({other_clients}).ok());
  EXPECT_EQ(exports_.updates(), before + 1);
  EXPECT_EQ(exports_.Get(0).config().clients[0].text(), "10.1.0.0/16");
  ASSERT_TRUE(exports_.Update({MakeExport(3, 5)}).ok());
  EXPECT_EQ(exports_.updates(), before + 2);
}

// ---- MNT and nested exports (docs/security.md, "Nested exports") ----

fattr3 DirAttr(uint64_t fileid) {
  fattr3 a{};
  a.type = NF3DIR;
  a.mode = 0755;
  a.nlink = 2;
  a.size = 4096;
  a.fileid = fileid;
  a.mtime.seconds = a.ctime.seconds = 1700000000;
  return a;
}

constexpr char kSrvRoot[] = "ROOT-OF-SRV-00001";   // /srv
constexpr char kDataDir[] = "DIR-SRV-DATA-0001";   // /srv/data
constexpr char kDataRoot[] = "ROOT-OF-SRV-DATA1";  // /srv/data, as its mountd answers it

// The proxy's MOUNT and NFS programs behind a loopback socket, with
// in-memory upstreams, for the exports a test gives.
class NestedExportMountTest : public ProgramsBed {
 protected:
  void Start(std::vector<ExportConfig> exports) {
    StartPrograms(exports);
    mount_up_->set_responder([this](const FakeUpstream::Seen& s) { return MountRespond(s); });
    up_->set_responder([this](const FakeUpstream::Seen& s) { return NfsRespond(s); });
    loop_.Start();
  }
  static ExportConfig ExportOf(const char* path, const char* upstream, const char* net) {
    ExportConfig e;
    e.path = path;
    e.upstream_path = upstream;
    e.clients.push_back(*Network::Parse(net));
    return e;
  }

  std::optional<std::string> MountRespond(const FakeUpstream::Seen& s) {
    return test_calls::MountdAnswer(s, mounts_);
  }
  std::optional<std::string> NfsRespond(const FakeUpstream::Seen& s) {
    if (s.proc == NFSPROC3_LOOKUP) {
      XdrValue<LOOKUP3args> a(test_xdr::Proc(xdr_LOOKUP3args));
      EXPECT_TRUE(a.Decode(s.args));
      LOOKUP3res res{};
      const std::string data_dir = kDataDir;  // outlives the encoding below
      if (test_xdr::Bytes(a->what.dir) == kSrvRoot && a->what.name &&
          std::string(a->what.name) == "data") {
        res.status = NFS3_OK;
        res.LOOKUP3res_u.resok.object = test_xdr::Fh(data_dir);
        res.LOOKUP3res_u.resok.obj_attributes = test_xdr::PostOp(DirAttr(2));
        res.LOOKUP3res_u.resok.dir_attributes = test_xdr::PostOp(DirAttr(1));
      } else {
        res.status = NFS3ERR_NOENT;
      }
      return test_xdr::Xdr(test_xdr::Proc(xdr_LOOKUP3res), res);
    }
    if (s.proc == NFSPROC3_GETATTR) {
      GETATTR3res res{};
      res.status = NFS3_OK;
      res.GETATTR3res_u.resok.obj_attributes = DirAttr(2);
      return test_xdr::Xdr(test_xdr::Proc(xdr_GETATTR3res), res);
    }
    ADD_FAILURE() << "unexpected upstream call " << s.proc;
    return std::nullopt;
  }

  std::string Call(BlockingClient& c, uint32_t xid, uint32_t prog, uint32_t proc,
                   const std::string& args) {
    return test_calls::CallResults(c, xid, prog, proc, args);
  }
  // MNT `path`; returns the status and the handle.
  std::pair<uint32_t, std::string> Mount(BlockingClient& c, uint32_t xid, const std::string& path) {
    return test_calls::MountPath(c, xid, path);
  }
  uint32_t Getattr(BlockingClient& c, uint32_t xid, const std::string& fh) {
    GETATTR3args a{};
    a.object = test_xdr::Fh(fh);
    const std::string r = Call(c, xid, kNfsProgram, NFSPROC3_GETATTR,
                               test_xdr::Xdr(test_xdr::Proc(xdr_GETATTR3args), a));
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }

  std::map<std::string, std::string> mounts_;  // upstream path -> root handle
};

// docs/security.md: with nested exports "a call is admitted iff one of the
// handle's exports admits the client, and the deepest such export's rules
// apply" (ExportTable::Choose), as on a Linux server, whose mountd also
// picks the most specific export *that matches the client*. A client of
// "/" that "/data" does not list may mount "/" and LOOKUP "data" (the
// handle is then admitted under "/"); so MNT "/data" takes the deepest
// export covering the path that admits the client ("/"), rather than
// refusing it (MNT3ERR_ACCES) for "/data", which does not.
TEST_F(NestedExportMountTest, MntUsesTheDeepestExportThatAdmitsTheClient) {
  Start({ExportOf("/", "/srv", "127.0.0.1/32"), ExportOf("/data", "/srv/data", "10.0.0.0/8")});
  mounts_["/srv"] = kSrvRoot;
  mounts_["/srv/data"] = kDataRoot;

  BlockingClient c(port_);  // from 127.0.0.1: admitted by "/" only
  // Sanity: the directory is open to this client through "/".
  auto [rst, root] = Mount(c, 1, "/");
  ASSERT_EQ(rst, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(root, kSrvRoot);

  auto [st, fh] = Mount(c, 2, "/data");
  EXPECT_EQ(st, static_cast<uint32_t>(MNT3_OK))
      << "MNT /data refused to a client that export \"/\" admits";
  if (st == MNT3_OK) {
    EXPECT_EQ(Getattr(c, 3, fh), static_cast<uint32_t>(NFS3_OK)) << "the handle MNT gave is refused";
  }
}

}  // namespace
}  // namespace nfsedge
