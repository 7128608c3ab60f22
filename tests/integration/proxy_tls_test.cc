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
// without a client certificate is refused, one with it gets through. The
// fixture is in tls_chain_fixture.h; `openssl s_client` cases are in
// proxy_tls_openssl_test.cc.
//
// With the WAN emulator between the two instances (its --capture-dir records
// the relayed bytes), data written and read through the TLS chain never
// crosses the emulated WAN in the clear, while the same traffic over the
// plaintext export /plain does (the control that shows the check can fail).

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "tls_chain_fixture.h"

namespace nfsedge::itest {
namespace {

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
