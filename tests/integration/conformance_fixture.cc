#include "conformance_fixture.h"

#include <cstdio>
#include <cstdlib>

#include "integration_env.h"

namespace nfsedge::itest {

using harness::RawNfs;
using harness::Testbed;

namespace {

// Servers and connections shared by the tests of the suite.
struct Shared {
  std::unique_ptr<Testbed> testbed;
  std::unique_ptr<RawNfs> direct_nfs, direct_mnt, proxy_nfs, proxy_mnt;
  std::string direct_root, proxy_root, d1, d2;
  std::string error;  // Set iff the suite could not be set up.
};
Shared* g_shared = nullptr;

// (Re)connects `*c` to host:port unless it is still usable.
bool EnsureConnected(std::unique_ptr<RawNfs>* c, const std::string& host, uint16_t port,
                     std::string* error) {
  if (*c && (*c)->connected()) return true;
  RawNfs::Options o;
  o.endpoint.host = host;
  o.endpoint.port = port;
  // The comparison is of answers, not of speed. A server that stalls on the
  // suite's first large WRITE (a busy disk) makes the proxy pace the next
  // ones slowly for a while (docs/architecture.md, "Known limits" of the
  // congestion controller): a call may take longer than 15 s then.
  o.timeout = harness::Millis(60000);
  auto r = RawNfs::Connect(o);
  if (!r.ok()) {
    *error = "connect " + host + ":" + std::to_string(port) + ": " + r.status().message();
    return false;
  }
  *c = std::move(r).value();
  return true;
}

bool ConnectAll(Shared* s, std::string* error) {
  auto& g = s->testbed->ganesha();
  auto* p = s->testbed->proxy();
  return EnsureConnected(&s->direct_nfs, g.host(), g.nfs_port(), error) &&
         EnsureConnected(&s->direct_mnt, g.host(), g.mount_port(), error) &&
         EnsureConnected(&s->proxy_nfs, p->host(), p->nfs_port(), error) &&
         EnsureConnected(&s->proxy_mnt, p->host(), p->mount_port(), error);
}

// MNTs the export through `mnt` and makes `name` in its root.
std::string SetUpSide(const std::string& side, RawNfs& mnt, RawNfs& nfs, const std::string& path,
                      const std::string& name, std::string* root, std::string* dir) {
  auto m = mnt.Mnt(path);
  if (!m.ok()) {
    return side + ": MNT " + path + ": " +
           (m.rpc_ok ? harness::MountStatName(m.status) : m.rpc_error);
  }
  *root = m.fh;
  harness::Sattr mode;
  mode.mode = 0777;
  auto d = nfs.Mkdir(*root, name, mode);
  if (!d.ok() || d.fh.empty()) return side + ": MKDIR " + name + ": " + d.StatusString();
  *dir = d.fh;
  return "";
}

}  // namespace

void Side::Note(const std::string& step, const harness::NfsResult& r, const std::string& detail) {
  trace.push_back(step + ": " + r.StatusString() + (detail.empty() ? "" : " " + detail));
}

void Side::NoteAttr(const std::string& step, const harness::NfsResult& r,
                    const std::optional<harness::Fattr>& attr) {
  Note(step, r, r.ok() ? (attr ? attr->Summary() : "(no attributes)") : "");
}

harness::Testbed* ConformanceTest::testbed() {
  return g_shared ? g_shared->testbed.get() : nullptr;
}

void ConformanceTest::SetUpTestSuite() {
  g_shared = new Shared();
  if (!SkipReason().empty()) return;
  Testbed::Options o;
  o.name = "conformance";
  auto tb = Testbed::Start(o);
  if (!tb.ok()) {
    g_shared->error = "cannot start the test stack: " + tb.status().message();
    return;
  }
  g_shared->testbed = std::move(tb).value();
  const std::string path = g_shared->testbed->ganesha().export_path();
  std::string& err = g_shared->error;
  if (!ConnectAll(g_shared, &err)) return;
  err = SetUpSide("ganesha", *g_shared->direct_mnt, *g_shared->direct_nfs, path, "d1",
                  &g_shared->direct_root, &g_shared->d1);
  if (!err.empty()) return;
  err = SetUpSide("nfsedge", *g_shared->proxy_mnt, *g_shared->proxy_nfs, path, "d2",
                  &g_shared->proxy_root, &g_shared->d2);
}

void ConformanceTest::TearDownTestSuite() {
  if (g_shared && g_shared->testbed) {
    harness::ExitStatus s = g_shared->testbed->Stop();
    EXPECT_TRUE(s.success()) << "nfsedge did not exit cleanly on SIGTERM: " << s.ToString() << "\n"
                             << g_shared->testbed->LogTails();
  }
  delete g_shared;
  g_shared = nullptr;
}

void ConformanceTest::SetUp() {
  NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
  ASSERT_TRUE(g_shared->error.empty()) << g_shared->error;
  std::string error;
  ASSERT_TRUE(ConnectAll(g_shared, &error)) << error;
  const std::string path = g_shared->testbed->ganesha().export_path();
  direct_ = {"ganesha", g_shared->direct_nfs.get(), g_shared->direct_mnt.get(),
             path,      g_shared->direct_root,      "",
             {}};
  proxied_ = {"nfsedge", g_shared->proxy_nfs.get(), g_shared->proxy_mnt.get(),
              path,      g_shared->proxy_root,      "",
              {}};
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  harness::Sattr mode;
  mode.mode = 0777;
  auto d = direct_.nfs->Mkdir(g_shared->d1, name, mode);
  ASSERT_TRUE(d.ok() && !d.fh.empty()) << "ganesha: MKDIR d1/" << name << ": " << d.StatusString();
  direct_.dir = d.fh;
  auto p = proxied_.nfs->Mkdir(g_shared->d2, name, mode);
  ASSERT_TRUE(p.ok() && !p.fh.empty()) << "nfsedge: MKDIR d2/" << name << ": " << p.StatusString();
  proxied_.dir = p.fh;
}

void ConformanceTest::TearDown() {
  if (testbed() != nullptr && testbed()->proxy() != nullptr) {
    EXPECT_TRUE(testbed()->proxy()->IsRunning()) << "nfsedge died";
  }
  PrintLogsOnFailure(*this, testbed());
}

void ConformanceTest::RunOnBoth(const std::function<void(Side&)>& scenario) {
  {
    SCOPED_TRACE("directly against ganesha");
    scenario(direct_);
  }
  {
    SCOPED_TRACE("through nfsedge");
    scenario(proxied_);
  }
  ExpectSameTrace(direct_.trace, proxied_.trace);
  if (std::getenv("NFSEDGE_PRINT_TRACES") != nullptr) {
    for (size_t i = 0; i < direct_.trace.size(); ++i) {
      std::printf("  %2zu %s\n", i, direct_.trace[i].c_str());
    }
  }
}

}  // namespace nfsedge::itest
