// proxy_limits_test: the client limits of [server] (docs/security.md, "Limits
// against abuse") set in the daemon's config file, over real sockets, with
// nfsedge in front of a real ganesha:
//
// - max_record_size: a record announcing more closes that connection, logged
//   ("record exceeds"); another connection keeps working;
// - idle_timeout_s: a connection with nothing to do is closed after the
//   timeout, logged ("idle for"), and not before; one whose calls wait for a
//   held upstream is not idle;
// - max_calls_per_connection: with the upstream held (ganesha stopped with
//   SIGSTOP), of calls pipelined on one connection only that many are read
//   (the proxy's per-procedure call counter); the rest are read as replies
//   leave, and every call is answered.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/files.h"
#include "harness/raw_rpc.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

constexpr uint64_t kMaxRecord = 65536;
constexpr int kIdleSeconds = 2;
constexpr uint32_t kMaxCalls = 2;
constexpr uint32_t kNfsAccess = 4;  // NFSPROC3_ACCESS

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK();
    Testbed::Options o;
    o.name = "limits";
    o.proxy.max_record_size = kMaxRecord;
    o.proxy.extra_server_toml = "max_calls_per_connection = " + std::to_string(kMaxCalls) +
                                "\nidle_timeout_s = " + std::to_string(kIdleSeconds) + "\n";
    // Only the client's calls reach the upstream.
    o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = 0\n[prefetch]\nenabled = false\n";
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
  }
  void TearDown() override {
    if (ganesha_stopped_) Ganesha(SIGCONT);
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  std::unique_ptr<RawConnection> Connect() {
    auto c = RawConnection::Connect(TcpEndpoint{"127.0.0.1", bed_->proxy()->nfs_port(), "", false});
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c).value() : nullptr;
  }
  std::string Log() { return ReadFile(bed_->proxy()->log_path()); }
  bool LogShows(const std::string& needle) {
    return WaitUntil([&] { return Log().find(needle) != std::string::npos; }, Millis(10000));
  }
  // Signals ganesha (its pid file: it runs in the foreground).
  // A SIGSTOP is waited for: kill() returns before every thread has
  // stopped (one in uninterruptible sleep, on a busy disk, stops when it
  // leaves it), and a thread still running could answer a call sent after.
  void Ganesha(int sig) {
    const std::string pid = ReadFile(bed_->ganesha().options().work_dir + "/ganesha.pid");
    ASSERT_FALSE(pid.empty());
    ASSERT_EQ(kill(static_cast<pid_t>(std::stol(pid)), sig), 0);
    ganesha_stopped_ = sig == SIGSTOP;
    if (sig != SIGSTOP) return;
    const std::string tasks = "/proc/" + std::to_string(std::stol(pid)) + "/task";
    auto all_stopped = [&] {
      std::error_code ec;
      for (const auto& t : std::filesystem::directory_iterator(tasks, ec)) {
        // The state is the field after the command's closing parenthesis.
        const std::string stat = ReadFile(t.path().string() + "/stat");
        const size_t at = stat.rfind(')');
        if (at == std::string::npos || at + 2 >= stat.size()) return false;
        const char state = stat[at + 2];
        if (state != 'T' && state != 't') return false;
      }
      return !ec;
    };
    ASSERT_TRUE(WaitUntil(all_stopped, Millis(10000))) << "ganesha did not stop";
  }
  // The number of `proc` calls the proxy has read, from the stats it logs on
  // SIGUSR1 ("stats nfs calls/cache_answers/...: ACCESS=2/0/0/0").
  uint64_t CallsRead(const std::string& proc) {
    const std::string kKey = "stats nfs calls/cache_answers";
    auto lines = [&] {
      std::istringstream in(Log());
      std::string line, last;
      size_t n = 0;
      while (std::getline(in, line)) {
        if (line.find(kKey) == std::string::npos) continue;
        n++;
        last = line;
      }
      return std::make_pair(n, last);
    };
    const size_t before = lines().first;
    kill(bed_->proxy()->pid(), SIGUSR1);
    std::pair<size_t, std::string> now;
    if (!WaitUntil([&] { return (now = lines()).first > before; }, Millis(5000))) {
      ADD_FAILURE() << "no stats line after SIGUSR1";
      return 0;
    }
    const size_t at = now.second.find(" " + proc + "=");
    return at == std::string::npos ? 0 : std::stoull(now.second.substr(at + proc.size() + 2));
  }
  std::string RootHandle() {
    auto m = ConnectOrFail("127.0.0.1", bed_->proxy()->mount_port(), {}, "");
    if (!m) return "";
    MntResult r = m->Mnt(bed_->ganesha().export_path(0));
    EXPECT_TRUE(r.ok()) << MountStatName(r.status) << r.rpc_error;
    return r.fh;
  }

  std::unique_ptr<Testbed> bed_;
  bool ganesha_stopped_ = false;
};

RpcCall Null(uint32_t xid) {
  RpcCall c;
  c.xid = xid;
  return c;
}

// Sends NULL on `c` and returns true iff its reply comes back.
bool Answers(RawConnection& c, uint32_t xid) {
  auto r = c.Call(Null(xid));
  return r.ok() && r->xid == xid && r->accept_stat == kAcceptSuccess;
}

TEST_F(LimitsTest, OversizedRecordClosesOnlyThatConnection) {
  auto other = Connect();
  auto big = Connect();
  ASSERT_TRUE(other && big);
  ASSERT_TRUE(Answers(*big, 1)) << "a record within the limit is read";
  // A fragment header announcing one byte more than the limit: closed before
  // the bytes are sent.
  XdrWriter mark;
  mark.U32(0x80000000u | static_cast<uint32_t>(kMaxRecord + 1));
  ASSERT_TRUE(big->Send(mark.data()).ok());
  EXPECT_TRUE(big->WaitForClose(Millis(10000)));
  EXPECT_TRUE(LogShows("record exceeds " + std::to_string(kMaxRecord) + " bytes"));
  EXPECT_TRUE(Answers(*other, 2)) << "the other connection keeps working";
  auto fresh = Connect();
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(Answers(*fresh, 3));
}

TEST_F(LimitsTest, IdleConnectionIsClosedAfterTheTimeout) {
  auto c = Connect();
  ASSERT_TRUE(c);
  ASSERT_TRUE(Answers(*c, 1));
  // Not before the timeout (half of it is a generous margin)...
  EXPECT_FALSE(c->WaitForClose(Millis(kIdleSeconds * 1000 / 2)));
  // ...but after it.
  EXPECT_TRUE(c->WaitForClose(Millis(kIdleSeconds * 1000 * 5)));
  EXPECT_TRUE(LogShows("s; closing connection (server.idle_timeout_s)"));
}

TEST_F(LimitsTest, CallsBeyondTheLimitAreNotReadUntilRepliesLeave) {
  const std::string root = RootHandle();
  ASSERT_FALSE(root.empty());
  auto c = Connect();
  ASSERT_TRUE(c);
  ASSERT_EQ(CallsRead("ACCESS"), 0u);

  Ganesha(SIGSTOP);
  // Six ACCESS calls with distinct masks (no two join one upstream call),
  // pipelined on one connection.
  constexpr int kCalls = 6;
  std::string wire;
  for (int i = 0; i < kCalls; ++i) {
    RpcCall call;
    call.xid = 100 + i;
    call.procedure = kNfsAccess;
    call.args = XdrWriter().Opaque(root).U32(1u << i).data();
    wire += FrameRecord(EncodeCall(call));
  }
  ASSERT_TRUE(c->Send(wire).ok());
  EXPECT_TRUE(
      WaitUntil([&] { return CallsRead("ACCESS") >= kMaxCalls; }, Millis(5000), Millis(100)));
  // Held past the idle timeout: a connection waiting for the upstream is
  // not idle, and the calls beyond the limit stay unread.
  std::this_thread::sleep_for(std::chrono::seconds(kIdleSeconds + 1));
  EXPECT_EQ(CallsRead("ACCESS"), kMaxCalls);

  Ganesha(SIGCONT);
  for (int i = 0; i < kCalls; ++i) {
    std::string record;
    ASSERT_EQ(c->ReadRecord(&record, Millis(20000)), RawConnection::Outcome::kRecord) << i;
    auto r = ParseReply(record);
    ASSERT_TRUE(r.ok());
    EXPECT_GE(r->xid, 100u);
    EXPECT_LT(r->xid, 100u + kCalls);
    EXPECT_EQ(r->accept_stat, kAcceptSuccess);
    XdrReader res(r->results);
    uint32_t status = 1;
    ASSERT_TRUE(res.U32(&status));
    EXPECT_EQ(status, 0u) << "ACCESS " << r->xid;
  }
  EXPECT_EQ(CallsRead("ACCESS"), static_cast<uint64_t>(kCalls));
  EXPECT_EQ(Log().find("idle for"), std::string::npos) << "a busy connection was closed as idle";
}

}  // namespace
}  // namespace nfsedge::itest
