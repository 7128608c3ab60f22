// proxy_load_test: nfsedge-load (tests/load) through nfsedge in front of
// ganesha, short enough for CI: many libnfs connections from one client
// address doing the verified mixed workload (GETATTR, LOOKUP, ACCESS,
// READDIRPLUS, READ of known content, WRITE + COMMIT, CREATE, REMOVE).
// Checked: no error, every byte read right, every file on ganesha's disk as
// written, and the proxy's resident memory (VmHWM) within its configured
// cache and buffer sizes plus the documented overhead (docs/robustness.md,
// "Load"). The long run (512 connections, 60 s) is the same generator by
// hand; its command and figures are in the same section.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "harness/files.h"
#include "harness/subprocess.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

// The CI run; NFSEDGE_LOAD_CONNECTIONS, NFSEDGE_LOAD_SECONDS and
// NFSEDGE_LOAD_THREADS in the environment change it (the long run);
// NFSEDGE_LOAD_MIX is passed on as --mix; NFSEDGE_LOAD_DIRECT=1 sends the
// load to ganesha itself (a baseline for the figures; memory not checked).
constexpr int kConnections = 64;
constexpr int kSeconds = 10;
// The proxy's configured bounds in this test, bytes.
constexpr uint64_t kMemoryBytes = 8 << 20;   // cache.memory_bytes
constexpr uint64_t kDirBytes = 2 << 20;      // cache.max_dir_bytes
constexpr uint64_t kBufferBytes = 16 << 20;  // write.buffer_bytes
// Overhead allowed beyond the process's size when idle and those bounds
// (docs/robustness.md, "Load"): per connection (buffers of calls in
// flight, the connection's state) and for everything else (metadata
// caches of a few thousand entries, libevent, allocator slack).
constexpr uint64_t kPerConnectionOverhead = 256 << 10;
constexpr uint64_t kFixedOverhead = 32 << 20;

// The value of `field` (kB) in /proc/<pid>/status, in bytes; 0 if absent.
uint64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) << 10;
  }
  return 0;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// The value of ` key=N` on the "result:" line of the generator's output, or -1.
int64_t Result(const std::string& out, const std::string& key) {
  const size_t line = out.rfind("result: ");
  if (line == std::string::npos) return -1;
  const size_t at = out.find(" " + key + "=", line);
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + key.size() + 2));
}

class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  std::unique_ptr<Testbed> bed_;
};

TEST_F(LoadTest, ManyConnectionsMixedWorkloadNoErrorsAllVerifiedMemoryBounded) {
  const int connections = EnvInt("NFSEDGE_LOAD_CONNECTIONS", kConnections);
  const int seconds = EnvInt("NFSEDGE_LOAD_SECONDS", kSeconds);
  const int threads = EnvInt("NFSEDGE_LOAD_THREADS", 1);
  Testbed::Options o;
  o.name = "load";
  o.proxy.log_level = "info";
  // Every load connection comes from 127.0.0.1: the per-client limit
  // (default 64) must admit them all, plus the generator's set-up
  // connection and the short MOUNT connections.
  o.proxy.extra_server_toml =
      "max_connections_per_client = " + std::to_string(connections + 16) + "\n";
  o.proxy.extra_toml = "[cache]\nmemory_bytes = " + std::to_string(kMemoryBytes) +
                       "\nmax_dir_bytes = " + std::to_string(kDirBytes) +
                       "\n[write]\nbuffer_bytes = " + std::to_string(kBufferBytes) +
                       "\nfile_buffer_bytes = \"1M\"\n";
  auto tb = Testbed::Start(o);
  ASSERT_TRUE(tb.ok()) << tb.status().message();
  bed_ = std::move(tb).value();
  ProxyProcess& proxy = *bed_->proxy();
  const uint64_t idle = ProcStatusBytes(proxy.pid(), "VmRSS");
  ASSERT_GT(idle, 0u);

  const std::string out_path = bed_->dir().Sub("load.out");
  const std::string export_dir = bed_->ganesha().export_path(0);
  const bool direct = EnvInt("NFSEDGE_LOAD_DIRECT", 0) == 1;
  const uint16_t port = direct ? bed_->ganesha().nfs_port() : proxy.nfs_port();
  const uint16_t mount_port = direct ? bed_->ganesha().mount_port() : proxy.mount_port();
  std::vector<std::string> argv = {NFSEDGE_LOAD_BINARY,
                                   "--server",
                                   proxy.host(),
                                   "--port",
                                   std::to_string(port),
                                   "--mount-port",
                                   std::to_string(mount_port),
                                   "--export",
                                   export_dir,
                                   "--connections",
                                   std::to_string(connections),
                                   "--threads",
                                   std::to_string(threads),
                                   "--duration",
                                   std::to_string(seconds),
                                   "--seed",
                                   "9",
                                   "--shared-files",
                                   "24",
                                   "--shared-max-bytes",
                                   "1M",
                                   "--timeout",
                                   "30",
                                   "--verify-dir",
                                   export_dir,
                                   "--proxy-pid",
                                   std::to_string(proxy.pid())};
  if (const char* mix = std::getenv("NFSEDGE_LOAD_MIX")) argv.insert(argv.end(), {"--mix", mix});
  auto gen = Subprocess::Start(argv, out_path);
  ASSERT_TRUE(gen.ok()) << gen.status().message();
  auto exit = (*gen)->WaitForExit(Millis(seconds * 1000 + 120000));
  const std::string out = ReadFile(out_path);
  std::printf("%s", out.c_str());
  ASSERT_TRUE(exit.has_value()) << "nfsedge-load did not finish";
  EXPECT_TRUE(exit->success()) << exit->ToString();

  EXPECT_EQ(Result(out, "errors"), 0);
  EXPECT_EQ(Result(out, "mismatches"), 0);
  EXPECT_GT(Result(out, "calls"), connections * seconds) << "the load ran";
  EXPECT_GT(Result(out, "verified_bytes"), 0);
  EXPECT_GT(Result(out, "disk_files"), connections / 2) << "own files compared on disk";
  EXPECT_NE(out.find("result: PASS"), std::string::npos);

  // Memory: the high-water mark of the whole run (and the generator's
  // samples of VmRSS, which the kernel may count a little ahead of VmHWM),
  // against the bounds.
  ASSERT_TRUE(proxy.IsRunning());
  if (direct) return;
  const uint64_t hwm = std::max<uint64_t>(ProcStatusBytes(proxy.pid(), "VmHWM"),
                                          std::max<int64_t>(0, Result(out, "rss_max_kb")) << 10);
  const uint64_t bound = idle + kMemoryBytes + kDirBytes + kBufferBytes +
                         connections * kPerConnectionOverhead + kFixedOverhead;
  std::printf("proxy VmRSS idle %llu KiB, VmHWM %llu KiB, bound %llu KiB\n",
              static_cast<unsigned long long>(idle >> 10),
              static_cast<unsigned long long>(hwm >> 10),
              static_cast<unsigned long long>(bound >> 10));
  // AddressSanitizer's shadow memory and quarantine multiply what the proxy
  // holds: the bound is for real builds.
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool kSanitized = true;
#else
  constexpr bool kSanitized = false;
#endif
#else
  constexpr bool kSanitized = false;
#endif
  if (!kSanitized) {
    EXPECT_LE(hwm, bound);
  }
  ExitStatus e = bed_->Stop();
  EXPECT_TRUE(e.success()) << e.ToString();
}

}  // namespace
}  // namespace nfsedge::itest
