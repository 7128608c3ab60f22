// TlsChainTest: the fixture of the RPC-over-TLS integration tests
// (proxy_tls_test.cc, proxy_tls_openssl_test.cc). SetUp() makes throw-away
// certificates (tests/tools/make_test_certs.sh) and starts ganesha with an
// inner nfsedge serving TLS (exports /tls tls="required", /plain,
// /optional tls="optional"); the helpers start an edge nfsedge toward it, a
// second inner instance requiring client certificates (mutual TLS), and the
// WAN emulator between the two.
//
// For the TLS test files only: it brings the harness namespace into
// nfsedge::itest. Thread safety: as any gtest fixture, the test thread only.
// REQUIRES: NFSEDGE_SOURCE_DIR and NFSEDGE_WAN_BINARY defined by the target.

#ifndef NFSEDGE_TESTS_INTEGRATION_TLS_CHAIN_FIXTURE_H_
#define NFSEDGE_TESTS_INTEGRATION_TLS_CHAIN_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/files.h"
#include "harness/private_network.h"
#include "harness/subprocess.h"
#include "integration_env.h"

namespace nfsedge::itest {

using namespace harness;  // NOLINT: test fixture, harness types throughout.

constexpr uint16_t kEdgeNfsPort = 31490;
constexpr uint16_t kEdgeMountPort = 31048;
// The WAN emulator's listening ports, relaying to the inner instance.
constexpr uint16_t kWanNfsPort = 31491;
constexpr uint16_t kWanMountPort = 31049;
// A second inner instance requiring client certificates (mutual TLS).
constexpr uint16_t kMutualNfsPort = 31590;
constexpr uint16_t kMutualMountPort = 31148;

class TlsChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "tls";
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "data";
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "plain";
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "optional";
    ProxyExport tls;
    tls.path = "/tls";
    tls.upstream_path = "data";
    tls.extra_toml = "tls = \"required\"\n";
    ProxyExport plain;  // tls = "off": the control of the WAN capture test
    plain.path = "/plain";
    plain.upstream_path = "plain";
    ProxyExport optional;
    optional.path = "/optional";
    optional.upstream_path = "optional";
    optional.extra_toml = "tls = \"optional\"\n";
    o.proxy.exports = {tls, plain, optional};
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
    if (HasFailure() && mutual_) std::cerr << "mutual TLS inner log:\n" << mutual_->LogTail(80);
    edge_.reset();
    mutual_.reset();
    wan_.reset();
    bed_.reset();
    if (!certs_.empty()) (void)std::system(("rm -rf " + certs_).c_str());
  }

  // How the edge instance reaches the inner one.
  struct EdgeRoute {
    bool tls = true;              // else plaintext, to the export /plain
    bool through_wan = false;     // via the emulator started by StartWan()
    std::string work = "edge";    // directory under the testbed's
    std::string path;             // the export; empty: /tls, or /plain without TLS
    uint16_t inner_nfs_port = 0;  // 0: the testbed's inner instance
    uint16_t inner_mount_port = 0;
    bool client_cert = false;  // offer client.pem (mutual TLS)
  };

  // Starts the edge instance toward the inner one (TLS unless route.tls is
  // false; the edge's export has the inner export's path).
  Status StartEdge(const std::string& ca, const std::string& name) {
    return StartEdge(ca, name, EdgeRoute());
  }
  Status StartEdge(const std::string& ca, const std::string& name, const EdgeRoute& route) {
    ProxyProcess::Options e;
    e.work_dir = bed_->dir().path() + "/" + route.work;
    if (Status s = MakeDirs(e.work_dir); !s.ok()) return s;
    e.nfs_port = kEdgeNfsPort;
    e.mount_port = kEdgeMountPort;
    e.upstream_nfs_port = route.through_wan ? kWanNfsPort : bed_->proxy()->nfs_port();
    e.upstream_mount_port = route.through_wan ? kWanMountPort : bed_->proxy()->mount_port();
    if (route.inner_nfs_port != 0) {
      e.upstream_nfs_port = route.inner_nfs_port;
      e.upstream_mount_port = route.inner_mount_port;
    }
    ProxyExport x;
    x.path = !route.path.empty() ? route.path : route.tls ? "/tls" : "/plain";
    x.upstream_path = x.path;
    e.exports = {x};
    if (route.tls) {
      e.extra_upstream_toml = "tls = true\ntls_ca_file = \"" + certs_ + "/" + ca +
                              "\"\ntls_server_name = \"" + name + "\"\n";
      if (route.client_cert) {
        e.extra_upstream_toml += "tls_cert_file = \"" + certs_ + "/client.pem\"\n" +
                                 "tls_key_file = \"" + certs_ + "/client.key\"\n";
      }
    }
    auto p = ProxyProcess::Start(e);
    if (!p.ok()) return p.status();
    edge_ = std::move(p).value();
    return Status::OK();
  }
  // Starts a second inner instance in front of ganesha (kMutualNfsPort,
  // kMutualMountPort) serving ganesha's "data" as /tls, tls="required", that
  // requires client certificates from ca.pem.
  Status StartMutualInner() {
    ProxyProcess::Options m;
    m.work_dir = bed_->dir().path() + "/inner-mutual";
    if (Status s = MakeDirs(m.work_dir); !s.ok()) return s;
    m.nfs_port = kMutualNfsPort;
    m.mount_port = kMutualMountPort;
    m.upstream_host = bed_->ganesha().host();
    m.upstream_nfs_port = bed_->ganesha().nfs_port();
    m.upstream_mount_port = bed_->ganesha().mount_port();
    ProxyExport x;
    x.path = "/tls";
    x.upstream_path = Disk();
    x.extra_toml = "tls = \"required\"\n";
    m.exports = {x};
    m.extra_server_toml = "tls_cert_file = \"" + certs_ + "/server.pem\"\n" + "tls_key_file = \"" +
                          certs_ + "/server.key\"\n" + "tls_client_ca_file = \"" + certs_ +
                          "/ca.pem\"\n";
    auto p = ProxyProcess::Start(m);
    if (!p.ok()) return p.status();
    mutual_ = std::move(p).value();
    return Status::OK();
  }
  // Starts the WAN emulator in front of the inner instance (kWanNfsPort,
  // kWanMountPort; 10 ms each way), capturing what it relays into `capture`.
  Status StartWan(const std::string& capture) {
    if (Status s = MakeDirs(capture); !s.ok()) return s;
    auto map = [](uint16_t listen, uint16_t target) {
      return "127.0.0.1:" + std::to_string(listen) + "=127.0.0.1:" + std::to_string(target);
    };
    std::vector<std::string> argv = {NFSEDGE_WAN_BINARY,
                                     "--map",
                                     map(kWanNfsPort, bed_->proxy()->nfs_port()),
                                     "--map",
                                     map(kWanMountPort, bed_->proxy()->mount_port()),
                                     "--delay-ms",
                                     "10",
                                     "--duration",
                                     "600",
                                     "--capture-dir",
                                     capture};
    auto p = Subprocess::Start(argv, capture + ".log");
    if (!p.ok()) return p.status();
    wan_ = std::move(p).value();
    auto ready = [&] {
      return ReadFile(capture + ".log").find("nfsedge-wan ready") != std::string::npos;
    };
    if (!WaitUntil(ready, Millis(10000))) {
      return Status::Error("nfsedge-wan did not start:\n" + wan_->LogTail());
    }
    return Status::OK();
  }
  // Returns every byte the emulator relayed in `dir` (both directions of
  // every connection), and the number of capture files in `*files`.
  static std::string Captured(const std::string& dir, int* files) {
    std::string all;
    *files = 0;
    for (int n = 1; n < 100; ++n) {
      for (const char* direction : {".up", ".down"}) {
        const std::string path = dir + "/session-" + std::to_string(n) + direction;
        if (access(path.c_str(), F_OK) != 0) continue;
        ++*files;
        all += ReadFile(path);
      }
    }
    return all;
  }
  // Through the edge (export `path`): writes `up` to a new file and reads
  // the existing file "from-head-office".
  void WriteAndRead(const std::string& path, const std::string& up, const std::string& down) {
    auto m = ConnectOrFail("127.0.0.1", kEdgeMountPort, {}, "");
    ASSERT_TRUE(m);
    MntResult root = m->Mnt(path);
    ASSERT_TRUE(root.ok()) << MountStatName(root.status) << root.rpc_error;
    auto c = ConnectOrFail("127.0.0.1", kEdgeNfsPort, Credential{0, 0, {}, "t"}, "");
    ASSERT_TRUE(c);
    CreateResult n = c->Create(root.fh, "written-at-the-branch", Sattr());
    ASSERT_TRUE(n.ok()) << n.StatusString();
    WriteResult w = c->WriteAll(n.fh, 0, up, Stable::kFileSync);
    ASSERT_TRUE(w.ok()) << w.StatusString();
    LookupResult f = c->Lookup(root.fh, "from-head-office");
    ASSERT_TRUE(f.ok()) << f.StatusString();
    ReadResult r = c->ReadAll(f.fh, 0, down.size());
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.data, down);
  }
  std::string Disk() { return bed_->ganesha().export_path(0); }
  // Mounts `path` on the instance at `mount_port` and returns an NFS client
  // (as root) of the one at `nfs_port`, the export's root handle in *root
  // (empty, with a failure recorded, if the MNT failed).
  static std::unique_ptr<RawNfs> MountAndConnect(const std::string& path, std::string* root,
                                                 uint16_t mount_port = kEdgeMountPort,
                                                 uint16_t nfs_port = kEdgeNfsPort) {
    root->clear();
    auto m = ConnectOrFail("127.0.0.1", mount_port, {}, "");
    if (!m) return nullptr;
    MntResult r = m->Mnt(path);
    EXPECT_TRUE(r.ok()) << "MNT " << path << ": " << MountStatName(r.status) << r.rpc_error;
    if (!r.ok()) return nullptr;
    *root = r.fh;
    auto c = ConnectOrFail("127.0.0.1", nfs_port, Credential{0, 0, {}, "t"}, "");
    // Answers are checked, not speed: a WRITE the head office is slow over
    // can make the edge pace the next ones slowly for a while
    // (docs/architecture.md, "Known limits").
    if (c) c->SetTimeout(Millis(60000));
    return c;
  }
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
  std::unique_ptr<ProxyProcess> mutual_;  // started by StartMutualInner()
  std::unique_ptr<Subprocess> wan_;
  std::string certs_;
};

}  // namespace nfsedge::itest

#endif  // NFSEDGE_TESTS_INTEGRATION_TLS_CHAIN_FIXTURE_H_
