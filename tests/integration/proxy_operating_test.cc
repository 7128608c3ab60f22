// proxy_operating_test: nfsedge as an administrator runs it: /metrics over
// HTTP moves with the calls clients make; SIGHUP and `nfsedge reload`
// apply a changed config on the same client connection (export rules,
// limits, cache sizes; keys that need a restart are logged and kept) and
// reject a bad one (the old config stays, the reason is logged); the control
// socket's status (top files by path), warm and drop-cache commands.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>

#include "harness/files.h"
#include "harness/wait.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint16_t kMetricsPort = 30567;

// GET `path` from 127.0.0.1:`port`; returns the whole response ("" if
// nothing listens; what came within 10 s if the reply never ends).
std::string HttpGet(const std::string& path, uint16_t port = kMetricsPort) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return "";
  }
  timeval tv{10, 0};  // a hung daemon fails the test, not the ctest timeout
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req = "GET " + path + " HTTP/1.0\r\nHost: x\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fd);
  return out;
}

// Returns the value of the sample `series` (name and labels as exposed), or
// -1 if absent.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class OperatingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "operating";
    o.start_proxy = false;
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(*tb);
    export_ = bed_->ganesha().export_path();
    options_.work_dir = bed_->dir().Sub("nfsedge");
    socket_ = bed_->dir().Sub("control.sock");
    options_.exports.emplace_back();
    options_.exports.back().path = options_.exports.back().upstream_path = export_;
    options_.control_socket = socket_;
    options_.extra_toml = "[metrics]\nlisten = \"127.0.0.1:" + std::to_string(kMetricsPort) + "\"\n";
    auto p = ProxyProcess::Start(options_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    proxy_ = std::move(*p);
  }
  void TearDown() override {
    if (HasFailure() && proxy_) {
      std::cerr << proxy_->LogTail(80);
    }
    if (proxy_) {
      EXPECT_TRUE(proxy_->Stop().success());
    }
  }
  // Rewrites the proxy's config file from options_.
  void WriteConfig(const std::string& text) {
    ASSERT_TRUE(WriteFile(proxy_->config_path(), text).ok());
  }
  // A client of the proxy that mounted the export and looked up directory
  // `name` in it (its handle in *dir).
  void ClientIn(const std::string& name, std::unique_ptr<RawNfs>* c, std::string* dir) {
    *c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
    ASSERT_NE(*c, nullptr);
    MntResult mnt = (*c)->Mnt(export_);
    ASSERT_TRUE(mnt.ok());
    LookupResult d = (*c)->Lookup(mnt.fh, name);
    ASSERT_TRUE(d.ok());
    *dir = d.fh;
  }

  std::unique_ptr<Testbed> bed_;
  std::string export_, socket_;
  ProxyProcess::Options options_;
  std::unique_ptr<ProxyProcess> proxy_;
};

TEST_F(OperatingTest, MetricsCountClientAndUpstreamCalls) {
  // The proxy's NFS ports (what Start() waits for) open before the endpoint.
  std::string first;
  Deadline listening(Millis(10000));
  while ((first = HttpGet("/metrics")).empty() && !listening.Expired()) usleep(10000);
  ASSERT_EQ(first.rfind("HTTP/1.", 0), 0u) << first.substr(0, 200);
  ASSERT_EQ(first.substr(8, 5), " 200 ") << first.substr(0, 200);
  EXPECT_NE(first.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(first.find("# TYPE nfsedge_client_connections gauge"), std::string::npos) << first;
  EXPECT_NE(HttpGet("/other").find(" 404 "), std::string::npos);

  const std::string getattr_ok =
      "nfsedge_client_calls_total{program=\"nfs\",proc=\"GETATTR\",result=\"ok\"}";
  const std::string lookup_noent =
      "nfsedge_client_calls_total{program=\"nfs\",proc=\"LOOKUP\",result=\"noent\"}";
  const std::string mnt_up =
      "nfsedge_upstream_calls_total{program=\"mount\",proc=\"MNT\",result=\"ok\"}";
  const std::string lat_count =
      "nfsedge_client_latency_seconds_count{program=\"nfs\",proc=\"GETATTR\"}";
  EXPECT_EQ(Sample(first, getattr_ok), -1) << "no calls yet";

  auto c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(export_);
  ASSERT_TRUE(mnt.ok());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok);
  EXPECT_FALSE(c->Lookup(mnt.fh, "no-such-file").ok());

  std::string text = HttpGet("/metrics");
  EXPECT_NE(text.find("# TYPE nfsedge_client_calls_total counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE nfsedge_client_latency_seconds histogram"), std::string::npos);
  EXPECT_EQ(Sample(text, getattr_ok), 5) << text;
  EXPECT_EQ(Sample(text, lat_count), 5);
  EXPECT_EQ(Sample(text, lookup_noent), 1);
  EXPECT_GE(Sample(text, mnt_up), 1);
  EXPECT_GE(Sample(text, "nfsedge_client_connections"), 1);
  EXPECT_GE(Sample(text, "nfsedge_upstream_connections_up{client=\"nfs\"}"), 1);
  // GETATTRs answered from the metadata cache did not all cross the WAN.
  const double up = Sample(
      text, "nfsedge_upstream_calls_total{program=\"nfs\",proc=\"GETATTR\",result=\"ok\"}");
  EXPECT_LT(up, 5);
  EXPECT_GE(Sample(text, "nfsedge_cache_lookups_total{cache=\"attr\",tier=\"memory\","
                         "result=\"hit\"}"),
            1);
  EXPECT_EQ(Sample(text, "nfsedge_metrics_rejected_samples"), 0);
  EXPECT_GE(Sample(text, "nfsedge_metrics_scrapes_total"), 2);
  // The scheduler carried the LOOKUP as interactive metadata.
  EXPECT_GE(Sample(text, "nfsedge_scheduler_calls_total{class=\"interactive\"}"), 1);
  EXPECT_GT(Sample(text, "nfsedge_congestion_base_rtt_seconds"), 0);

  // A CREATE and a WRITE are recorded by the duplicate request cache; the
  // FILE_SYNC WRITE goes through the write path.
  CreateResult created = c->Create(mnt.fh, "metered", Sattr());
  ASSERT_TRUE(created.ok()) << created.StatusString();
  ASSERT_TRUE(c->Write(created.fh, 0, "abc", Stable::kFileSync).ok());
  text = HttpGet("/metrics");
  EXPECT_EQ(Sample(text, "nfsedge_drc_events_total{event=\"recorded\"}"), 2) << text;
  EXPECT_EQ(Sample(text, "nfsedge_write_client_calls_total{kind=\"stable_gathered\"}"), 1);
  EXPECT_GE(Sample(text, "nfsedge_write_upstream_bytes_total"), 3);
}

TEST_F(OperatingTest, SighupAppliesANewConfigOnTheSameConnectionAndRejectsABadOne) {
  auto c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(export_);
  ASSERT_TRUE(mnt.ok());
  Sattr mode;
  mode.mode = 0644;
  ASSERT_TRUE(c->Create(mnt.fh, "before", mode).ok());

  // The export becomes read-only: the same connection now gets ROFS.
  ProxyProcess::Options ro = options_;
  ro.exports.back().access = "ro";
  WriteConfig(ProxyProcess::RenderConfig(ro));
  ASSERT_EQ(kill(proxy_->pid(), SIGHUP), 0);
  Deadline applied(Millis(10000));
  uint32_t status = kNfs3Ok;
  for (int i = 0; !applied.Expired(); ++i) {
    status = c->Create(mnt.fh, "after" + std::to_string(i), mode).status;
    if (status == kNfs3ErrRofs) break;
    usleep(20000);
  }
  EXPECT_EQ(status, kNfs3ErrRofs);
  EXPECT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok) << "connection kept";

  // A bad file is rejected: the read-only config stays, the reason is logged.
  WriteConfig(ProxyProcess::RenderConfig(ro) + "\n[bogus_table]\nx = 1\n");
  ASSERT_EQ(kill(proxy_->pid(), SIGHUP), 0);
  Deadline logged(Millis(10000));
  while (ReadAll(proxy_->log_path()).find("config reload rejected") == std::string::npos &&
         !logged.Expired()) {
    usleep(20000);
  }
  std::string log = ReadAll(proxy_->log_path());
  EXPECT_NE(log.find("config reload rejected"), std::string::npos);
  EXPECT_NE(log.find("bogus_table"), std::string::npos) << "the reason is in the log";
  EXPECT_EQ(c->Create(mnt.fh, "still-ro", mode).status, kNfs3ErrRofs);
  EXPECT_TRUE(proxy_->IsRunning());

  // `nfsedge reload` reports the rejection, then applies a good file.
  auto [bad_code, bad_out] = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(bad_code, 1) << bad_out;
  EXPECT_NE(bad_out.find("bogus_table"), std::string::npos) << bad_out;
  WriteConfig(ProxyProcess::RenderConfig(options_));
  auto [code, out] = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(c->Create(mnt.fh, "writable-again", mode).ok());
  std::string text = HttpGet("/metrics");
  EXPECT_EQ(Sample(text, "nfsedge_config_reloads_total{result=\"ok\"}"), 2);
  EXPECT_EQ(Sample(text, "nfsedge_config_reloads_total{result=\"rejected\"}"), 2);
}

// A reload that turns on what needs a restart (an export's tls, with the
// certificate it needs; write_back, with no journal open) leaves the export
// as it was until then, not only the config in force.
TEST_F(OperatingTest, ExportKeysThatWaitForARestartKeepTheirValueInTheRunningExport) {
  auto c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(export_);
  ASSERT_TRUE(mnt.ok());

  ProxyProcess::Options next = options_;
  next.extra_server_toml = "tls_cert_file = \"" + bed_->dir().Sub("cert.pem") +
                           "\"\ntls_key_file = \"" + bed_->dir().Sub("key.pem") + "\"\n";
  next.exports.back().extra_toml = "tls = \"required\"\nwrite_back = true\n";
  next.extra_toml += "[write]\njournal_dir = \"" + bed_->dir().Sub("journal") + "\"\n";
  WriteConfig(ProxyProcess::RenderConfig(next));
  auto [code, out] = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("needs a restart (the value in force stays): [[export]] #1 tls"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("needs a restart (the value in force stays): [[export]] #1 write_back"),
            std::string::npos)
      << out;
  // Plain TCP clients are still served, on the old connection and a new one.
  EXPECT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok);
  auto fresh = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
  ASSERT_NE(fresh, nullptr);
  MntResult again = fresh->Mnt(export_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(fresh->Getattr(again.fh).status, kNfs3Ok);
}

// Returns true iff a TCP connection to 127.0.0.1:`port` is accepted and then
// closed by the proxy within `wait_s` seconds without a byte sent (a refused
// connection).
bool ClosedOnAccept(uint16_t port, int wait_s) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{wait_s, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool closed = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    char b;
    closed = read(fd, &b, 1) == 0;
  }
  close(fd);
  return closed;
}

TEST_F(OperatingTest, SighupAppliesLimitsAndCacheSizesAndWarnsAboutRestartKeys) {
  ASSERT_TRUE(WriteFile(export_ + "/big", std::string(1 << 20, 'b')).ok());
  auto c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(export_);
  ASSERT_TRUE(mnt.ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(c->Create(mnt.fh, "f" + std::to_string(i), Sattr()).ok());
  }
  LookupResult big = c->Lookup(mnt.fh, "big");
  ASSERT_TRUE(big.ok());
  ASSERT_TRUE(c->ReadAll(big.fh, 0, 1 << 20).ok());
  const std::string attr_entries = "nfsedge_cache_entries{cache=\"attr\",tier=\"memory\"}";
  const std::string attr_evictions =
      "nfsedge_cache_evictions_total{cache=\"attr\",tier=\"memory\"}";
  const std::string data_bytes = "nfsedge_cache_bytes{cache=\"data\",tier=\"memory\"}";
  const std::string name_entries = "nfsedge_cache_entries{cache=\"name\",tier=\"memory\"}";
  const std::string name_evictions =
      "nfsedge_cache_evictions_total{cache=\"name\",tier=\"memory\"}";
  const std::string refused =
      "nfsedge_client_connection_events_total{event=\"refused_per_client\"}";
  std::string text = HttpGet("/metrics");
  ASSERT_GE(Sample(text, attr_entries), 30) << text;
  ASSERT_GE(Sample(text, data_bytes), 1 << 20);
  ASSERT_GE(Sample(text, name_entries), 30) << text;
  EXPECT_EQ(Sample(text, attr_evictions), 0);
  EXPECT_EQ(Sample(text, name_evictions), 0) << text;
  EXPECT_FALSE(ClosedOnAccept(proxy_->nfs_port(), 1)) << "a second connection is welcome";
  EXPECT_EQ(Sample(HttpGet("/metrics"), refused), 0);

  // Smaller caches, one connection per client, and a port that can only
  // change at a restart.
  ProxyProcess::Options next = options_;
  next.extra_toml +=
      "[cache]\nmax_attr_entries = 5\nmax_name_entries = 5\nmemory_bytes = \"256K\"\n";
  next.extra_server_toml += "max_connections_per_client = 1\n";
  next.nfs_port = options_.nfs_port + 1;
  WriteConfig(ProxyProcess::RenderConfig(next));
  ASSERT_EQ(kill(proxy_->pid(), SIGHUP), 0);
  Deadline applied(Millis(10000));
  while (ReadAll(proxy_->log_path()).find("config reloaded from") == std::string::npos &&
         !applied.Expired()) {
    usleep(20000);
  }
  const std::string log = ReadAll(proxy_->log_path());
  EXPECT_NE(log.find("config reload applied: server.max_connections_per_client "
                     "cache.max_attr_entries cache.max_name_entries cache.memory_bytes"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("WARN config reload: server.nfs_port changed in the file and needs a "
                     "restart"),
            std::string::npos)
      << log;

  text = HttpGet("/metrics");
  EXPECT_LE(Sample(text, attr_entries), 5) << text;
  EXPECT_GE(Sample(text, attr_evictions), 25);
  EXPECT_LE(Sample(text, name_entries), 5) << text;
  EXPECT_GE(Sample(text, name_evictions), 25) << text;
  EXPECT_LE(Sample(text, data_bytes), 256 << 10);
  EXPECT_GT(Sample(text, data_bytes), 0) << "the most recent blocks stay";
  // The connection made before the reload stays, on the port in force.
  EXPECT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok) << "connection kept";
  EXPECT_TRUE(c->Lookup(mnt.fh, "f29").ok());
  // A second connection from the same address is now refused.
  EXPECT_TRUE(ClosedOnAccept(proxy_->nfs_port(), 10));
  EXPECT_GE(Sample(HttpGet("/metrics"), refused), 1);
  EXPECT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok);

  // `nfsedge reload` names the key still waiting for a restart.
  auto [code, out] = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("needs a restart (the value in force stays): server.nfs_port"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("applied:"), std::string::npos) << "nothing else changed: " << out;
  EXPECT_EQ(Sample(HttpGet("/metrics"), "nfsedge_config_reloads_total{result=\"ok\"}"), 2);
}

// A listening socket on 127.0.0.1:`port` for as long as it lives.
class PortTaken {
 public:
  explicit PortTaken(uint16_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 && listen(fd_, 1) == 0;
  }
  ~PortTaken() { close(fd_); }
  bool ok() const { return ok_; }

 private:
  int fd_;
  bool ok_ = false;
};

// The metrics port taken by something else: the daemon starts and serves NFS
// all the same (logged), and a reload moves the endpoint once the port is
// free; a reload to a taken port keeps the endpoint in force and says so.
TEST_F(OperatingTest, AMetricsPortThatCannotBeHadIsNotAFailedStartNorAnAppliedReload) {
  ASSERT_TRUE(proxy_->Stop().success());
  proxy_.reset();
  {
    PortTaken taken(kMetricsPort);
    ASSERT_TRUE(taken.ok());
    auto p = ProxyProcess::Start(options_);
    ASSERT_TRUE(p.ok()) << p.status().message();
    proxy_ = std::move(*p);
    auto c = ConnectOrFail("127.0.0.1", proxy_->nfs_port());
    ASSERT_NE(c, nullptr);
    ASSERT_TRUE(c->Mnt(export_).ok()) << "NFS is served without the metrics endpoint";
    EXPECT_NE(ReadAll(proxy_->log_path()).find("ERROR metrics endpoint:"), std::string::npos);
  }
  auto [code, out] = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("applied: metrics.listen"), std::string::npos) << out;
  EXPECT_NE(HttpGet("/metrics").find("nfsedge_build_info"), std::string::npos);

  constexpr uint16_t kOther = kMetricsPort + 1;
  PortTaken taken(kOther);
  ASSERT_TRUE(taken.ok());
  ProxyProcess::Options next = options_;
  next.extra_toml = "[metrics]\nlisten = \"127.0.0.1:" + std::to_string(kOther) + "\"\n";
  WriteConfig(ProxyProcess::RenderConfig(next));
  std::tie(code, out) = RunNfsedge("reload --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("applied: metrics.listen"), std::string::npos) << out;
  EXPECT_NE(out.find("needs a restart (the value in force stays): metrics.listen"),
            std::string::npos)
      << out;
  EXPECT_NE(HttpGet("/metrics").find("nfsedge_build_info"), std::string::npos)
      << "the endpoint in force stays";
}

TEST_F(OperatingTest, StatusNamesTopFilesByPath) {
  ASSERT_TRUE(MakeDirs(export_ + "/docs").ok());
  ASSERT_TRUE(WriteFile(export_ + "/docs/report.txt", std::string(300000, 'r')).ok());
  std::unique_ptr<RawNfs> c;
  std::string dir;
  ASSERT_NO_FATAL_FAILURE(ClientIn("docs", &c, &dir));
  LookupResult file = c->Lookup(dir, "report.txt");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(c->ReadAll(file.fh, 0, 300000).ok());

  auto [code, status] = RunNfsedge("status --socket " + socket_);
  EXPECT_EQ(code, 0) << status;
  // Both lanes, each with upstream.connections (default 2) up: the bulk
  // lane carried the READs.
  EXPECT_NE(status.find("metadata connections up "), std::string::npos) << status;
  EXPECT_NE(status.find("; bulk connections up 2/2"), std::string::npos) << status;
  EXPECT_NE(status.find("top files by traffic (read, written, path or handle):"),
            std::string::npos)
      << status;
  EXPECT_NE(status.find("0.3 MiB  0.0 MiB  " + export_ + "/docs/report.txt\n"),
            std::string::npos)
      << status;
}

// A file made at the head office in a directory whose names the proxy
// holds: `drop-cache PATH` of the new file shows it at once (its directory's
// names go too), as docs/consistency.md says.
TEST_F(OperatingTest, DropCacheOfANewFileShowsItAtOnce) {
  ASSERT_TRUE(MakeDirs(export_ + "/news").ok());
  std::unique_ptr<RawNfs> c;
  std::string dir;
  ASSERT_NO_FATAL_FAILURE(ClientIn("news", &c, &dir));
  ASSERT_EQ(c->Access(dir, 0x3f).status, kNfs3Ok);
  EXPECT_EQ(c->Lookup(dir, "late").status, kNfs3ErrNoent);

  ASSERT_TRUE(WriteFile(export_ + "/news/late", "made at the head office").ok());
  EXPECT_EQ(c->Lookup(dir, "late").status, kNfs3ErrNoent)
      << "the directory's names are the proxy's for acdirmin";
  auto [code, out] = RunNfsedge("drop-cache " + export_ + "/news/late --socket " + socket_);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("and its directory"), std::string::npos) << out;
  LookupResult late = c->Lookup(dir, "late");
  EXPECT_EQ(late.status, kNfs3Ok) << "the new file is not seen";
  ASSERT_EQ(c->Getattr(late.fh).status, kNfs3Ok);

  // Removed at the head office: the name is not there upstream, and what
  // the directory's cache says of it goes.
  ASSERT_EQ(unlink((export_ + "/news/late").c_str()), 0);
  auto [gcode, gone] = RunNfsedge("drop-cache " + export_ + "/news/late --socket " + socket_);
  EXPECT_EQ(gcode, 0) << gone;
  EXPECT_NE(gone.find("is not there upstream"), std::string::npos) << gone;
  EXPECT_EQ(c->Lookup(dir, "late").status, kNfs3ErrNoent) << "the removed file is still seen";
  EXPECT_NE(c->Getattr(late.fh).status, kNfs3Ok) << "the removed file's attributes answered";
}

TEST_F(OperatingTest, ControlStatusWarmDropCacheAndFlush) {
  ASSERT_TRUE(MakeDirs(export_ + "/tree/a/b").ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(WriteFile(export_ + "/tree/a/f" + std::to_string(i), std::string(1000, 'x')).ok());
  }
  ASSERT_TRUE(WriteFile(export_ + "/tree/a/b/deep", "deep").ok());

  auto [scode, status] = RunNfsedge("status --socket " + socket_);
  EXPECT_EQ(scode, 0) << status;
  EXPECT_NE(status.find("reachable, round trip"), std::string::npos) << status;
  EXPECT_NE(status.find("metadata cache:"), std::string::npos) << status;

  // The warm's calls go through the upstream scheduler: its listings (and
  // reads) in the background and client-data classes, not around them.
  const std::string background = "nfsedge_scheduler_calls_total{class=\"background\"}";
  const double background_before = Sample(HttpGet("/metrics"), background);
  auto [wcode, warm] = RunNfsedge("warm " + export_ + "/tree --socket " + socket_);
  EXPECT_EQ(wcode, 0) << warm;
  EXPECT_NE(warm.find("warmed: 3 directory listings"), std::string::npos) << warm;
  EXPECT_NE(warm.find("6 files read"), std::string::npos) << warm;
  std::string text = HttpGet("/metrics");
  EXPECT_GE(Sample(text, background) - std::max(background_before, 0.0), 3) << text;
  const std::string data_entries = "nfsedge_cache_entries{cache=\"data\",tier=\"memory\"}";
  const std::string attr_entries = "nfsedge_cache_entries{cache=\"attr\",tier=\"memory\"}";
  EXPECT_GE(Sample(text, data_entries), 6) << text;
  EXPECT_GE(Sample(text, attr_entries), 8);

  auto [bcode, bad] = RunNfsedge("warm /not/exported --socket " + socket_);
  EXPECT_EQ(bcode, 1);
  EXPECT_NE(bad.find("not an exported path"), std::string::npos) << bad;

  auto [dcode, drop] = RunNfsedge("drop-cache --socket " + socket_);
  EXPECT_EQ(dcode, 0) << drop;
  text = HttpGet("/metrics");
  EXPECT_EQ(Sample(text, data_entries), 0) << text;
  EXPECT_EQ(Sample(text, attr_entries), 0);

  auto [pcode, path_drop] = RunNfsedge("drop-cache " + export_ + "/tree/a/f1 --socket " + socket_);
  EXPECT_EQ(pcode, 0) << path_drop;
  auto [ncode, none] = RunNfsedge("drop-cache " + export_ + "/tree/nope/x --socket " + socket_);
  EXPECT_EQ(ncode, 1) << none;
  EXPECT_NE(none.find("noent"), std::string::npos) << none;

  auto [fcode, flush] = RunNfsedge("flush --socket " + socket_);
  EXPECT_EQ(fcode, 0) << flush;
}

}  // namespace
}  // namespace nfsedge::itest
