// proxy_tls_test: RPC-over-TLS (RFC 9289) with two nfsedge instances chained:
//
//   RawNfs client --plain--> edge nfsedge --TLS--> inner nfsedge --plain--> ganesha
//
// The inner instance serves TLS (certificate from tests/tools/
// make_test_certs.sh, made at test time); its export /tls is tls="required".
// Checks: mount, lookup, write, read, readdir through the chain; a plaintext
// client on the required export is refused (MNT and NFS); an edge trusting
// the wrong CA, or expecting another name, never reaches the inner instance
// and logs why; `openssl s_client` straight at the inner port (no AUTH_TLS
// probe) gets no TLS session.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "harness/files.h"
#include "harness/private_network.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint16_t kEdgeNfsPort = 31490;
constexpr uint16_t kEdgeMountPort = 31048;

class TlsChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "tls";
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "data";
    ProxyExport tls;
    tls.path = "/tls";
    tls.upstream_path = "data";
    tls.extra_toml = "tls = \"required\"\n";
    o.proxy.exports = {tls};
    char tmpl[] = "/tmp/nfsedge-tls-certs-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    certs_ = tmpl;
    std::string cmd = "sh " NFSEDGE_SOURCE_DIR "/tests/tools/make_test_certs.sh " + certs_;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    o.proxy.extra_server_toml = "tls_cert_file = \"" + certs_ + "/server.pem\"\n" +
                                "tls_key_file = \"" + certs_ + "/server.key\"\n";
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
    if (HasFailure() && edge_) std::cerr << "edge log:\n" << edge_->LogTail(80) << "\n";
    edge_.reset();
    bed_.reset();
    if (!certs_.empty()) (void)std::system(("rm -rf " + certs_).c_str());
  }

  // Starts the edge instance with TLS toward the inner one.
  Status StartEdge(const std::string& ca, const std::string& name) {
    ProxyProcess::Options e;
    e.work_dir = bed_->dir().path() + "/edge";
    if (Status s = MakeDirs(e.work_dir); !s.ok()) return s;
    e.nfs_port = kEdgeNfsPort;
    e.mount_port = kEdgeMountPort;
    e.upstream_nfs_port = bed_->proxy()->nfs_port();
    e.upstream_mount_port = bed_->proxy()->mount_port();
    ProxyExport x;
    x.path = "/tls";
    x.upstream_path = "/tls";
    e.exports = {x};
    e.extra_upstream_toml = "tls = true\ntls_ca_file = \"" + certs_ + "/" + ca +
                            "\"\ntls_server_name = \"" + name + "\"\n";
    auto p = ProxyProcess::Start(e);
    if (!p.ok()) return p.status();
    edge_ = std::move(p).value();
    return Status::OK();
  }
  std::string Disk() { return bed_->ganesha().export_path(0); }
  // Returns true iff `needle` shows up in `path` within a few seconds.
  static bool LogShows(const std::string& path, const std::string& needle) {
    for (int i = 0; i < 300; ++i) {
      std::ifstream in(path);
      std::stringstream all;
      all << in.rdbuf();
      if (all.str().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  std::unique_ptr<Testbed> bed_;
  std::unique_ptr<ProxyProcess> edge_;
  std::string certs_;
};

TEST_F(TlsChainTest, FileOperationsThroughTheTlsChain) {
  ASSERT_TRUE(WriteFile(Disk() + "/existing", "from the head office").ok());
  Status s = StartEdge("ca.pem", "nfsedge-upstream");
  ASSERT_TRUE(s.ok()) << s.message();
  auto m = ConnectOrFail("127.0.0.1", kEdgeMountPort, {}, "");
  ASSERT_TRUE(m);
  MntResult root = m->Mnt("/tls");
  ASSERT_TRUE(root.ok()) << MountStatName(root.status) << root.rpc_error;
  auto c = ConnectOrFail("127.0.0.1", kEdgeNfsPort, Credential{0, 0, {}, "t"}, "");
  ASSERT_TRUE(c);
  LookupResult f = c->Lookup(root.fh, "existing");
  ASSERT_TRUE(f.ok()) << f.StatusString();
  ReadResult r = c->Read(f.fh, 0, 100);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  EXPECT_EQ(r.data, "from the head office");
  CreateResult n = c->Create(root.fh, "new", Sattr());
  ASSERT_TRUE(n.ok()) << n.StatusString();
  const std::string data(200000, 'z');
  WriteResult w = c->WriteAll(n.fh, 0, data, Stable::kFileSync);
  ASSERT_TRUE(w.ok()) << w.StatusString();
  ReadResult back = c->ReadAll(n.fh, 0, data.size());
  ASSERT_TRUE(back.ok()) << back.StatusString();
  EXPECT_EQ(back.data, data);
  EXPECT_EQ(ReadFile(Disk() + "/new"), data);
  ReaddirResult d = c->ReaddirAll(root.fh, /*plus=*/true);
  ASSERT_TRUE(d.ok()) << d.StatusString();
  std::set<std::string> names;
  for (const DirEntry& e : d.entries) names.insert(e.name);
  EXPECT_TRUE(names.count("existing") && names.count("new"));
  EXPECT_TRUE(LogShows(edge_->log_path(), "up (TLS)"));
}

TEST_F(TlsChainTest, PlaintextClientOnARequiredExportIsRefused) {
  auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, "");
  ASSERT_TRUE(m);
  MntResult root = m->Mnt("/tls");
  EXPECT_EQ(root.status, kMnt3ErrAcces);
  EXPECT_TRUE(LogShows(bed_->proxy()->log_path(), "refused: plaintext connection"));
}

TEST_F(TlsChainTest, WrongCaIsRefusedAndLogged) {
  Status s = StartEdge("other-ca.pem", "nfsedge-upstream");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(LogShows(edge_->log_path(), "certificate verification failed"));
  auto m = ConnectOrFail("127.0.0.1", kEdgeMountPort, {}, "");
  ASSERT_TRUE(m);
  MntResult root = m->Mnt("/tls");
  EXPECT_FALSE(root.ok());
  EXPECT_TRUE(LogShows(bed_->proxy()->log_path(), "TLS handshake failed"));
}

TEST_F(TlsChainTest, WrongNameIsRefusedAndLogged) {
  Status s = StartEdge("ca.pem", "not-the-upstream");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(LogShows(edge_->log_path(), "certificate verification failed"));
}

TEST_F(TlsChainTest, OpensslClientWithoutTheProbeGetsNoSession) {
  // A TLS ClientHello where an RPC record is expected is a malformed record:
  // the connection is closed, no certificate is ever sent.
  std::string cmd = "timeout 10 openssl s_client -connect 127.0.0.1:" +
                    std::to_string(bed_->proxy()->nfs_port()) + " -tls1_3 </dev/null 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  int rc = pclose(p);
  EXPECT_NE(rc, 0) << out;
  EXPECT_EQ(out.find("BEGIN CERTIFICATE"), std::string::npos) << out;
  EXPECT_NE(out.find("no peer certificate available"), std::string::npos) << out;
}

}  // namespace
}  // namespace nfsedge::itest
