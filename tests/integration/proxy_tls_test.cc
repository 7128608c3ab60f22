// proxy_tls_test: RPC-over-TLS (RFC 9289) with two nfsedge instances chained:
//
//   RawNfs client --plain--> edge nfsedge --TLS--> inner nfsedge --plain--> ganesha
//
// The inner instance serves TLS (certificate from tests/tools/
// make_test_certs.sh, made at test time); its export /tls is tls="required",
// /optional tls="optional". Checks: mount, lookup, write, read, readdir
// through the chain; a plaintext client on the required export is refused
// (MNT, and NFS calls with a handle of it handed out over TLS) and logged;
// the optional export admits both transports; an edge trusting the wrong CA,
// or expecting another name, never reaches the inner instance and logs why;
// with mutual TLS (an inner instance with tls_client_ca_file) an edge
// without a client certificate is refused, one with it gets through;
// `openssl s_client` straight at the inner port (no AUTH_TLS probe) gets no
// TLS session.
//
// With the WAN emulator between the two instances (its --capture-dir records
// the relayed bytes), data written and read through the TLS chain never
// crosses the emulated WAN in the clear, while the same traffic over the
// plaintext export /plain does (the control that shows the check can fail).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "harness/files.h"
#include "harness/private_network.h"
#include "harness/subprocess.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

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
    bool tls = true;            // else plaintext, to the export /plain
    bool through_wan = false;   // via the emulator started by StartWan()
    std::string work = "edge";  // directory under the testbed's
    std::string path;           // the export; empty: /tls, or /plain without TLS
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
    m.extra_server_toml = "tls_cert_file = \"" + certs_ + "/server.pem\"\n" +
                          "tls_key_file = \"" + certs_ + "/server.key\"\n" +
                          "tls_client_ca_file = \"" + certs_ + "/ca.pem\"\n";
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
    return ConnectOrFail("127.0.0.1", nfs_port, Credential{0, 0, {}, "t"}, "");
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

TEST_F(TlsChainTest, FileOperationsThroughTheTlsChain) {
  ASSERT_TRUE(WriteFile(Disk() + "/existing", "from the head office").ok());
  Status s = StartEdge("ca.pem", "nfsedge-upstream");
  ASSERT_TRUE(s.ok()) << s.message();
  std::string root;
  auto c = MountAndConnect("/tls", &root);
  ASSERT_TRUE(c);
  LookupResult f = c->Lookup(root, "existing");
  ASSERT_TRUE(f.ok()) << f.StatusString();
  ReadResult r = c->Read(f.fh, 0, 100);
  ASSERT_TRUE(r.ok()) << r.StatusString();
  EXPECT_EQ(r.data, "from the head office");
  CreateResult n = c->Create(root, "new", Sattr());
  ASSERT_TRUE(n.ok()) << n.StatusString();
  const std::string data(200000, 'z');
  WriteResult w = c->WriteAll(n.fh, 0, data, Stable::kFileSync);
  ASSERT_TRUE(w.ok()) << w.StatusString();
  ReadResult back = c->ReadAll(n.fh, 0, data.size());
  ASSERT_TRUE(back.ok()) << back.StatusString();
  EXPECT_EQ(back.data, data);
  EXPECT_EQ(ReadFile(Disk() + "/new"), data);
  ReaddirResult d = c->ReaddirAll(root, /*plus=*/true);
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

// An NFS call on a plaintext connection, with a handle of the required
// export that was handed out over TLS (through the edge).
TEST_F(TlsChainTest, PlaintextNfsCallOnARequiredExportIsRefused) {
  ASSERT_TRUE(WriteFile(Disk() + "/f", "tls only").ok());
  Status s = StartEdge("ca.pem", "nfsedge-upstream");
  ASSERT_TRUE(s.ok()) << s.message();
  std::string root;
  auto edge = MountAndConnect("/tls", &root);
  ASSERT_TRUE(edge);
  LookupResult f = edge->Lookup(root, "f");
  ASSERT_TRUE(f.ok()) << f.StatusString();
  ASSERT_TRUE(edge->Getattr(root).ok()) << "over TLS";

  // The same handles (the edge hands them on unchanged), plaintext, straight
  // to the inner instance.
  auto plain = ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{0, 0, {}, "t"}, "");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->Getattr(root).status, kNfs3ErrAcces);
  EXPECT_EQ(plain->Lookup(root, "f").status, kNfs3ErrAcces);
  ReadResult r = plain->Read(f.fh, 0, 100);
  EXPECT_EQ(r.status, kNfs3ErrAcces);
  EXPECT_EQ(r.data.find("tls only"), std::string::npos);
  EXPECT_TRUE(LogShows(bed_->proxy()->log_path(),
                       "refused: plaintext connection to export /tls (tls = \"required\")"));
}

TEST_F(TlsChainTest, OptionalExportAdmitsBothTransports) {
  ASSERT_TRUE(WriteFile(bed_->ganesha().export_path(2) + "/f", "either way").ok());
  EdgeRoute route;
  route.path = "/optional";
  Status s = StartEdge("ca.pem", "nfsedge-upstream", route);
  ASSERT_TRUE(s.ok()) << s.message();
  struct Way {
    uint16_t mount_port, nfs_port;
    const char* name;
  };
  for (const Way& way : {Way{kEdgeMountPort, kEdgeNfsPort, "TLS, through the edge"},
                         Way{bed_->proxy()->mount_port(), bed_->proxy()->nfs_port(),
                             "plaintext, straight to the inner instance"}}) {
    SCOPED_TRACE(way.name);
    std::string root;
    auto c = MountAndConnect("/optional", &root, way.mount_port, way.nfs_port);
    ASSERT_TRUE(c);
    LookupResult f = c->Lookup(root, "f");
    ASSERT_TRUE(f.ok()) << f.StatusString();
    ReadResult r = c->Read(f.fh, 0, 100);
    ASSERT_TRUE(r.ok()) << r.StatusString();
    EXPECT_EQ(r.data, "either way");
  }
  EXPECT_TRUE(LogShows(edge_->log_path(), "up (TLS)"));
  EXPECT_EQ(ReadFile(bed_->proxy()->log_path()).find("refused: plaintext connection"),
            std::string::npos);
}

// Mutual TLS: the inner instance requires a client certificate from its CA.
TEST_F(TlsChainTest, MutualTlsRefusesAnEdgeWithoutAClientCertificate) {
  ASSERT_TRUE(WriteFile(Disk() + "/f", "for certified edges").ok());
  Status s = StartMutualInner();
  ASSERT_TRUE(s.ok()) << s.message();
  EdgeRoute route;
  route.inner_nfs_port = kMutualNfsPort;
  route.inner_mount_port = kMutualMountPort;
  route.work = "edge-without-cert";
  s = StartEdge("ca.pem", "nfsedge-upstream", route);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(LogShows(mutual_->log_path(), "TLS handshake failed"));
  {
    auto m = ConnectOrFail("127.0.0.1", kEdgeMountPort, {}, "");
    ASSERT_TRUE(m);
    m->SetTimeout(Millis(3000));
    EXPECT_FALSE(m->Mnt("/tls").ok());
  }
  EXPECT_EQ(ReadFile(mutual_->log_path()).find("MNT /tls by"), std::string::npos)
      << "a call reached the inner instance";
  ASSERT_TRUE(edge_->Stop().success());
  edge_.reset();

  route.work = "edge-with-cert";
  route.client_cert = true;
  s = StartEdge("ca.pem", "nfsedge-upstream", route);
  ASSERT_TRUE(s.ok()) << s.message();
  std::string root;
  auto c = MountAndConnect("/tls", &root);
  ASSERT_TRUE(c);
  LookupResult f = c->Lookup(root, "f");
  ASSERT_TRUE(f.ok()) << f.StatusString();
  EXPECT_EQ(c->Read(f.fh, 0, 100).data, "for certified edges");
  EXPECT_TRUE(LogShows(edge_->log_path(), "up (TLS)"));
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

// Returns `pattern` repeated to `size` bytes.
std::string Repeated(const std::string& pattern, size_t size) {
  std::string out;
  while (out.size() < size) out += pattern;
  out.resize(size);
  return out;
}

// What crosses the emulated WAN between the two instances: with TLS, neither
// the data written at the branch (up) nor the data read from the head office
// (down) appears in the relayed bytes; without TLS (the control), both do.
TEST_F(TlsChainTest, DataCrossingTheWanIsNotInTheClear) {
  const std::string up_mark = "UP-PATTERN-written-at-the-branch-0123456789;";
  const std::string down_mark = "DOWN-PATTERN-read-from-the-head-office-9876543210;";
  const std::string up = Repeated(up_mark, 150000);
  const std::string down = Repeated(down_mark, 150000);
  ASSERT_TRUE(WriteFile(Disk() + "/from-head-office", down).ok());
  ASSERT_TRUE(WriteFile(bed_->ganesha().export_path(1) + "/from-head-office", down).ok());

  struct Run {
    bool tls;
    std::string name;
  };
  for (const Run& run : {Run{true, "tls"}, Run{false, "plain"}}) {
    SCOPED_TRACE(run.name);
    const std::string capture = bed_->dir().path() + "/wan-" + run.name;
    Status s = StartWan(capture);
    ASSERT_TRUE(s.ok()) << s.message();
    EdgeRoute route;
    route.tls = run.tls;
    route.through_wan = true;
    route.work = "edge-" + run.name;
    s = StartEdge("ca.pem", "nfsedge-upstream", route);
    ASSERT_TRUE(s.ok()) << s.message();
    WriteAndRead(run.tls ? "/tls" : "/plain", up, down);
    if (HasFatalFailure()) return;
    const std::string disk = run.tls ? Disk() : bed_->ganesha().export_path(1);
    EXPECT_EQ(ReadFile(disk + "/written-at-the-branch"), up);
    if (run.tls) {
      EXPECT_TRUE(LogShows(edge_->log_path(), "up (TLS)"));
    }
    // Stop both so that every relayed byte is in the files.
    ASSERT_TRUE(edge_->Stop().success());
    edge_.reset();
    ASSERT_TRUE(wan_->Stop().success()) << wan_->LogTail();
    wan_.reset();

    int files = 0;
    const std::string wire = Captured(capture, &files);
    std::printf("%s across the WAN: %d capture files, %zu bytes relayed\n", run.name.c_str(), files,
                wire.size());
    // NFS and MOUNT connections, both directions; the data itself crossed.
    EXPECT_GE(files, 4);
    EXPECT_GT(wire.size(), up.size() + down.size());
    const bool up_seen = wire.find(up_mark) != std::string::npos;
    const bool down_seen = wire.find(down_mark) != std::string::npos;
    const bool name_seen = wire.find("written-at-the-branch") != std::string::npos;
    if (run.tls) {
      EXPECT_FALSE(up_seen);
      EXPECT_FALSE(down_seen);
      EXPECT_FALSE(name_seen);
    } else {
      EXPECT_TRUE(up_seen);
      EXPECT_TRUE(down_seen);
      EXPECT_TRUE(name_seen);
    }
  }
}

}  // namespace
}  // namespace nfsedge::itest
