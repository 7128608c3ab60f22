// Behaviour tests of the WAN emulator relay over loopback (part of the wan_test binary): delay,
// pipelining, rate, the shared bottleneck, counting through the relay, and the nfsedge-wan
// program stopping by itself and on signals. Each prints what it measured.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "wan_test_util.h"

namespace nfsedge::wan {
namespace {

using testing::ConnectTo;
using testing::NowMillis;
using testing::ReadExactly;
using testing::RelayHarness;
using testing::WanProcess;
using testing::WriteAll;

constexpr int64_t kMs = kNanosPerMilli;

LinkConfig Link(double delay_ms, uint64_t rate_bps = 0, uint64_t queue_bytes = 256 * 1024) {
  LinkConfig c;
  c.delay_nanos = static_cast<int64_t>(delay_ms * kMs);
  c.rate_bps = rate_bps;
  c.queue_bytes = queue_bytes;
  return c;
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Returns the round trip time of one small message through `fd`, or -1.
double PingMillis(int fd, int timeout_ms = 5000) {
  char msg[32] = "ping";
  char back[32];
  double start = NowMillis();
  if (!WriteAll(fd, msg, sizeof(msg)) || !ReadExactly(fd, back, sizeof(back), timeout_ms)) {
    return -1;
  }
  return NowMillis() - start;
}

std::string Join(const std::vector<double>& v) {
  std::string out;
  char buf[32];
  for (double x : v) {
    std::snprintf(buf, sizeof(buf), "%s%.2f", out.empty() ? "" : " ", x);
    out += buf;
  }
  return out;
}

// Timing checks on a shared 2-core machine can lose samples to the scheduler (a compiler running
// alongside, or a busy host, stalls a thread for several ms, and a whole attempt at times): a
// delay is judged by the fastest of an attempt's samples, which only the emulator's own delay
// bounds from below, and each timing is measured up to kAttempts times and must be within
// tolerance once. A real defect (stop-and-wait, a wrong delay, a wrong rate) fails every
// attempt; "never early", which load cannot cause, is checked on every attempt.
constexpr int kAttempts = 5;

// (a) A round trip takes 2 x delay, never less, within about 2 ms.
TEST(RelayTest, RoundTripIsTwiceTheDelay) {
  for (double delay : {20.0, 50.0}) {
    RelayHarness relay(Link(delay), Link(delay));
    ASSERT_TRUE(relay.start_status().ok()) << relay.start_status().ToString();
    bool within = false;
    for (int attempt = 0; attempt < kAttempts && !within; ++attempt) {
      int fd = ConnectTo(relay.address());
      ASSERT_GE(fd, 0);
      std::vector<double> rtts;
      for (int i = 0; i < 7; ++i) rtts.push_back(PingMillis(fd));
      close(fd);
      std::printf("delay %.0f ms each way: RTTs (ms) %s\n", delay, Join(rtts).c_str());
      for (double rtt : rtts) EXPECT_GE(rtt, 2 * delay - 0.1);   // Never early.
      const double fastest = *std::min_element(rtts.begin(), rtts.end());
      within = std::abs(fastest - (2 * delay + 1)) <= 1.0;  // Fastest in [2D, 2D + 2].
    }
    EXPECT_TRUE(within) << "fastest RTT never within 2 ms of " << 2 * delay;
  }
}

// (b) Messages sent 5 ms apart each come back 2 x delay after it was sent: the delay line is
// pipelined (stop-and-wait would make message k wait for k earlier round trips). The arrival
// gaps are printed, not checked: a sender thread that the scheduler stalls sends in a burst.
TEST(RelayTest, DelayLineIsPipelined) {
  const double delay = 50;
  RelayHarness relay(Link(delay), Link(delay));
  ASSERT_TRUE(relay.start_status().ok());
  constexpr int kCount = 6;
  bool within = false;
  for (int attempt = 0; attempt < kAttempts && !within; ++attempt) {
    int fd = ConnectTo(relay.address());
    ASSERT_GE(fd, 0);
    std::vector<double> sent(kCount), received(kCount, 1e12);
    std::thread reader([&] {
      for (int i = 0; i < kCount; ++i) {
        char buf[16];
        if (!ReadExactly(fd, buf, sizeof(buf), 5000)) return;
        received[buf[0] % kCount] = NowMillis();
      }
    });
    const double t0 = NowMillis();
    for (int i = 0; i < kCount; ++i) {
      // Pacing the sender (not waiting for a result): sleep until the next 5 ms slot.
      while (NowMillis() < t0 + 5.0 * i) usleep(100);
      char buf[16] = {static_cast<char>(i)};
      sent[i] = NowMillis();
      if (!WriteAll(fd, buf, sizeof(buf))) break;
    }
    reader.join();
    close(fd);
    std::vector<double> rtt, gaps;
    for (int i = 0; i < kCount; ++i) {
      rtt.push_back(received[i] - sent[i]);
      if (i > 0) gaps.push_back(received[i] - received[i - 1]);
    }
    std::printf("pipelined RTTs (ms) %s; arrival gaps (ms) %s\n", Join(rtt).c_str(),
                Join(gaps).c_str());
    for (double r : rtt) EXPECT_GE(r, 2 * delay - 0.1);  // Never early.
    // None waits for another's round trip: stop-and-wait would hold the second a whole round
    // trip more (about 4 x delay), the sixth five more. (The delay's own accuracy is test (a)'s;
    // here six messages cross four timers each, and a busy host fires any of them late.)
    within = *std::max_element(rtt.begin(), rtt.end()) <= 3 * delay;
  }
  EXPECT_TRUE(within) << "messages sent 5 ms apart were not each delayed 2 x " << delay << " ms";
}

// (c) 2 MB through an 8 Mbit/s link takes about 2 s; the queue stays near its limit.
TEST(RelayTest, RateLimitsThroughput) {
  constexpr uint64_t kRate = 8'000'000;
  constexpr size_t kBytes = 2'000'000;
  constexpr uint64_t kQueue = 256 * 1024;
  RelayHarness relay(Link(5, kRate, kQueue), Link(5));
  ASSERT_TRUE(relay.start_status().ok());
  int fd = ConnectTo(relay.address());
  ASSERT_GE(fd, 0);
  const double start = NowMillis();
  std::thread writer([fd] {
    std::string chunk(64 * 1024, 'x');
    for (size_t sent = 0; sent < kBytes; sent += chunk.size()) {
      if (!WriteAll(fd, chunk.data(), std::min(chunk.size(), kBytes - sent))) return;
    }
  });
  std::vector<char> back(kBytes);
  bool all = ReadExactly(fd, back.data(), kBytes, 10000);
  const double elapsed = NowMillis() - start;
  writer.join();
  close(fd);
  relay.Stop();
  ASSERT_TRUE(all);
  const double expected = kBytes * 8.0 / kRate * 1000 + 10;  // Serialization + RTT.
  std::printf("2 MB at 8 Mbit/s: %.0f ms (expected %.0f), %.2f Mbit/s; max queue %llu bytes\n",
              elapsed, expected, kBytes * 8.0 / elapsed / 1000,
              static_cast<unsigned long long>(relay.stats().up_link.max_backlog_bytes));
  EXPECT_NEAR(elapsed, expected, expected * 0.10);
  EXPECT_LE(relay.stats().up_link.max_backlog_bytes, kQueue + 64 * 1024);
  EXPECT_GT(relay.stats().up_link.pauses, 0u);
  EXPECT_EQ(relay.stats().up_bytes, kBytes);
  EXPECT_EQ(relay.stats().down_bytes, kBytes);
}

// (d) A bulk flow filling the bottleneck queue delays a ping on another connection by about
// queue_bytes / rate: one link is shared by every connection.
TEST(RelayTest, BulkFlowQueueDelaysOtherConnections) {
  constexpr uint64_t kRate = 8'000'000;  // 1 byte per microsecond.
  constexpr uint64_t kQueue = 100'000;   // 100 ms of queue.
  const double delay = 5;
  const double queue_ms = kQueue * 8.0 / kRate * 1000;
  RelayHarness relay(Link(delay, kRate, kQueue), Link(delay));
  ASSERT_TRUE(relay.start_status().ok());

  int ping_fd = ConnectTo(relay.address());
  ASSERT_GE(ping_fd, 0);
  std::vector<double> idle;
  for (int i = 0; i < 5; ++i) idle.push_back(PingMillis(ping_fd));

  int bulk_fd = ConnectTo(relay.address());
  ASSERT_GE(bulk_fd, 0);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::string chunk(16 * 1024, 'x');
    while (!stop && WriteAll(bulk_fd, chunk.data(), chunk.size())) {
    }
  });
  std::thread drainer([&] {
    char buf[64 * 1024];
    while (recv(bulk_fd, buf, sizeof(buf), 0) > 0) {
    }
  });
  usleep(300 * 1000);  // Let the bulk flow fill the queue (it takes about queue_ms).
  // The ping waits behind a full queue: at least most of it (a queue not yet
  // full on a loaded machine is measured again), at most half as long again.
  bool within = false;
  double extra = 0;
  for (int attempt = 0; attempt < kAttempts && !within; ++attempt) {
    std::vector<double> loaded;
    for (int i = 0; i < 5; ++i) loaded.push_back(PingMillis(ping_fd));
    std::printf("ping RTT idle (ms) %s; behind a bulk flow (ms) %s; queue %.0f ms\n",
                Join(idle).c_str(), Join(loaded).c_str(), queue_ms);
    extra = Median(loaded) - 2 * delay;
    within = extra >= 0.8 * queue_ms && extra <= 1.5 * queue_ms;
  }
  stop = true;
  shutdown(bulk_fd, SHUT_RDWR);  // Unblocks both threads.
  writer.join();
  drainer.join();
  close(bulk_fd);
  close(ping_fd);
  // Without the bulk flow there is no queue: the fastest idle ping is a bare round trip.
  EXPECT_LT(*std::min_element(idle.begin(), idle.end()), 2 * delay + 5);
  EXPECT_TRUE(within) << "the ping waited " << extra << " ms beyond the round trip, against a "
                      << queue_ms << " ms queue";
}

// RPC calls are counted through the relay; a non-RPC flow is relayed intact on either kind of
// mapping (given up as non-RPC on an rpc=1 mapping, not parsed at all with rpc=0).
TEST(RelayTest, CountsRpcCallsAndRelaysOtherBytes) {
  auto call = [](uint32_t xid, uint32_t prog, uint32_t proc) {
    std::string msg =
        Be32(xid) + Be32(0) + Be32(2) + Be32(prog) + Be32(3) + Be32(proc) + std::string(40, 'a');
    return Be32(0x80000000u | static_cast<uint32_t>(msg.size())) + msg;
  };
  for (bool rpc : {true, false}) {
    RelayHarness relay(Link(1), Link(1), rpc);
    ASSERT_TRUE(relay.start_status().ok());
    int fd = ConnectTo(relay.address());
    ASSERT_GE(fd, 0);
    // Three calls and, to be counted on its way back down, one reply-shaped record.
    const std::string reply_msg = Be32(4) + Be32(1) + std::string(20, 'r');
    std::string stream = call(1, 100003, 1) + call(2, 100003, 1) + call(3, 100005, 1) +
                         Be32(0x80000000u | static_cast<uint32_t>(reply_msg.size())) + reply_msg;
    for (size_t i = 0; i < stream.size(); i += 7) {  // Split across writes.
      ASSERT_TRUE(WriteAll(fd, stream.data() + i, std::min<size_t>(7, stream.size() - i)));
    }
    std::string back(stream.size(), '\0');
    ASSERT_TRUE(ReadExactly(fd, back.data(), back.size(), 5000));
    EXPECT_EQ(back, stream);
    close(fd);

    int text_fd = ConnectTo(relay.address());
    ASSERT_GE(text_fd, 0);
    std::string text = "hello, this is not ONC RPC\n";
    ASSERT_TRUE(WriteAll(text_fd, text.data(), text.size()));
    std::string text_back(text.size(), '\0');
    ASSERT_TRUE(ReadExactly(text_fd, text_back.data(), text_back.size(), 5000));
    EXPECT_EQ(text_back, text);
    close(text_fd);
    relay.Stop();

    const WanStats& stats = relay.stats();
    EXPECT_EQ(stats.connections, 2u);
    EXPECT_EQ(stats.replies, rpc ? 1u : 0u);  // Echoed calls are not replies.
    EXPECT_EQ(stats.CallCount(100003, 1), rpc ? 2u : 0u);
    EXPECT_EQ(stats.CallCount(100005, 1), rpc ? 1u : 0u);
    EXPECT_EQ(stats.non_rpc_streams, rpc ? 2u : 0u);  // Text up and its echo down.
  }
}

// End of stream travels the link behind the data: a client's FIN reaches the server after its
// bytes and one delay later, the server's FIN comes back the same way, then the session ends.
// The time passes through a chain of the relay's timers (each chunk's release up, the echo's
// release down, each FIN's), each of which a busy host can fire a few ms late, so the bound is
// a third of a delay: a FIN that waited one delay more, or was held behind anything, is late
// by a whole delay.
TEST(RelayTest, EndOfStreamFollowsTheData) {
  const double delay = 50;
  RelayHarness relay(Link(delay, 8'000'000), Link(delay));
  ASSERT_TRUE(relay.start_status().ok());
  const std::string data(100'000, 'd');  // 100 ms of serialization.
  bool within = false;
  for (int attempt = 0; attempt < kAttempts && !within; ++attempt) {
    int fd = ConnectTo(relay.address());
    ASSERT_GE(fd, 0);
    const double start = NowMillis();
    ASSERT_TRUE(WriteAll(fd, data.data(), data.size()));
    ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
    std::string back(data.size(), '\0');
    ASSERT_TRUE(ReadExactly(fd, back.data(), back.size(), 5000));
    char extra;
    EXPECT_EQ(recv(fd, &extra, 1, 0), 0);  // EOF, after all the data.
    const double elapsed = NowMillis() - start;
    close(fd);
    std::printf("100 kB then FIN through 8 Mbit/s, %.0f ms each way: EOF after %.1f ms\n", delay,
                elapsed);
    EXPECT_EQ(back, data);
    EXPECT_GE(elapsed, 100 + 2 * delay - 0.1);
    within = elapsed <= 100 + 2 * delay + delay / 3;
  }
  relay.Stop();
  EXPECT_TRUE(within);
  EXPECT_EQ(relay.relay().session_count(), 0u);
}

// (f) The program prints its ready line, writes stats on SIGUSR1, stops by itself after
// --duration and on SIGTERM, and refuses a wildcard listen address.
TEST(WanProgramTest, StopsByItselfAndOnSignals) {
  RelayHarness echo(Link(0), Link(0));  // Only its echo server is used.
  ASSERT_TRUE(echo.start_status().ok());
  const std::string stats_path =
      ::testing::TempDir() + "/wan_test_stats." + std::to_string(getpid()) + ".json";
  unlink(stats_path.c_str());

  const double start = NowMillis();
  auto wan = WanProcess::Start(NFSEDGE_WAN_BINARY,
                               {"--map", "127.0.0.1:0=" + echo.echo_address(), "--delay-ms", "10",
                                "--duration", "1.5", "--stats", stats_path});
  ASSERT_NE(wan, nullptr);
  const std::string ready = wan->ReadLine(5000);
  const std::string prefix = "nfsedge-wan ready ";
  ASSERT_EQ(ready.rfind(prefix + "127.0.0.1:", 0), 0u) << ready;
  const std::string listen = ready.substr(prefix.size(), ready.find('=') - prefix.size());
  int fd = ConnectTo(listen);
  ASSERT_GE(fd, 0) << listen;
  // One record: an NFS3 GETATTR call header (xid 1, CALL, rpcvers 2, prog, vers 3, proc 1).
  const std::string msg =
      Be32(0x80000018) + Be32(1) + Be32(0) + Be32(2) + Be32(100003) + Be32(3) + Be32(1);
  ASSERT_TRUE(WriteAll(fd, msg.data(), msg.size()));
  std::string back(msg.size(), '\0');
  ASSERT_TRUE(ReadExactly(fd, back.data(), back.size(), 2000));
  close(fd);
  wan->Signal(SIGUSR1);
  std::string snapshot;
  for (int i = 0; i < 200 && snapshot.empty(); ++i, usleep(5000)) {
    snapshot = testing::ReadFileOrEmpty(stats_path);
  }
  EXPECT_NE(snapshot.find("\"NFS3.GETATTR\":1"), std::string::npos) << snapshot;

  EXPECT_EQ(wan->Wait(5000), 0);
  const double lifetime = NowMillis() - start;
  std::printf("--duration 1.5: exited after %.0f ms\n", lifetime);
  EXPECT_GE(lifetime, 1450);
  EXPECT_LE(lifetime, 2500);
  const std::string final_stats = testing::ReadFileOrEmpty(stats_path);
  EXPECT_NE(final_stats.find("\"connections\":1"), std::string::npos) << final_stats;
  EXPECT_NE(final_stats.find("\"calls\":{\"100003\":{\"1\":1}}"), std::string::npos);

  unlink(stats_path.c_str());
  auto term = WanProcess::Start(NFSEDGE_WAN_BINARY, {"--map", "127.0.0.1:0=" + echo.echo_address(),
                                                     "--duration", "60", "--stats", stats_path});
  ASSERT_NE(term, nullptr);
  ASSERT_EQ(term->ReadLine(5000).rfind("nfsedge-wan ready", 0), 0u);
  term->Signal(SIGTERM);
  EXPECT_EQ(term->Wait(3000), 0);
  EXPECT_NE(testing::ReadFileOrEmpty(stats_path).find("\"up_bytes\":0"), std::string::npos);
  unlink(stats_path.c_str());

  auto wildcard =
      WanProcess::Start(NFSEDGE_WAN_BINARY, {"--map", "0.0.0.0:0=127.0.0.1:1", "--duration", "5"});
  ASSERT_NE(wildcard, nullptr);
  EXPECT_EQ(wildcard->Wait(3000), 2);
}

// --capture-dir: each connection's bytes, as relayed, one file per direction; a directory that
// does not exist is a bad command line.
TEST(WanProgramTest, CapturesEachDirectionOfEachConnection) {
  RelayHarness echo(Link(0), Link(0));  // Only its echo server is used.
  ASSERT_TRUE(echo.start_status().ok());
  char tmpl[] = "/tmp/wan_capture_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto wan = WanProcess::Start(NFSEDGE_WAN_BINARY, {"--map", "127.0.0.1:0=" + echo.echo_address(),
                                                    "--duration", "30", "--capture-dir", dir});
  ASSERT_NE(wan, nullptr);
  const std::string ready = wan->ReadLine(5000);
  const std::string prefix = "nfsedge-wan ready ";
  ASSERT_EQ(ready.rfind(prefix, 0), 0u) << ready;
  const std::string listen = ready.substr(prefix.size(), ready.find('=') - prefix.size());
  const std::string sent[2] = {"first connection, some bytes", std::string(200'000, 'x') + "end"};
  for (const std::string& msg : sent) {
    int fd = ConnectTo(listen);
    ASSERT_GE(fd, 0) << listen;
    ASSERT_TRUE(WriteAll(fd, msg.data(), msg.size()));
    std::string back(msg.size(), '\0');
    ASSERT_TRUE(ReadExactly(fd, back.data(), back.size(), 5000));
    close(fd);
  }
  wan->Signal(SIGTERM);
  EXPECT_EQ(wan->Wait(3000), 0);
  for (int i = 0; i < 2; ++i) {
    const std::string base = dir + "/session-" + std::to_string(i + 1);
    EXPECT_EQ(testing::ReadFileOrEmpty(base + ".up"), sent[i]) << base;
    EXPECT_EQ(testing::ReadFileOrEmpty(base + ".down"), sent[i]) << base;  // the echo
    unlink((base + ".up").c_str());
    unlink((base + ".down").c_str());
  }
  EXPECT_EQ(access((dir + "/session-3.up").c_str(), F_OK), -1);
  rmdir(dir.c_str());

  auto missing = WanProcess::Start(NFSEDGE_WAN_BINARY, {"--map", "127.0.0.1:0=127.0.0.1:1",
                                                        "--duration", "5", "--capture-dir", dir});
  ASSERT_NE(missing, nullptr);
  EXPECT_EQ(missing->Wait(3000), 2);
}

}  // namespace
}  // namespace nfsedge::wan
