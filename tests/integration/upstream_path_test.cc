// upstream_path_test: the upstream RpcClient over a real network path that
// goes silent. The test's private network namespace is joined by a veth
// pair to a second namespace where a test RPC server listens; a blackhole
// route there then swallows everything it sends back, without a word, as a
// NAT or firewall that forgot the connection does. The client must find the
// connection dead within ClientOptions::dead_path_timeout (not after the
// kernel's retransmissions, about 15 minutes), and carry its calls on a new
// connection once the path is back.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "harness/private_network.h"
#include "proxy/rpcbind.h"
#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"
#include "test_loop.h"
#include "harness/required.h"

namespace nfsedge {
namespace {

constexpr char kFarNs[] = "nfsedge-far";
constexpr char kNear[] = "10.77.0.1";
constexpr char kFar[] = "10.77.0.2";

bool Shell(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

// The command that adds or deletes ("add", "del") the far side's route
// that swallows everything it sends back.
std::string SilentFar(const std::string& verb) {
  return std::string("ip netns exec ") + kFarNs + " ip route " + verb + " blackhole " + kNear +
         "/32";
}

class EchoHandler : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    calls++;
    call->ReplySuccess(std::string(call->args()));
  }
  int calls = 0;
};

class UpstreamPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!harness::PrivateNetwork::entered()) NFSEDGE_SKIP_OR_FAIL("no private network namespace");
    Shell(std::string("ip netns del ") + kFarNs);
    ASSERT_TRUE(Shell(std::string("ip netns add ") + kFarNs));
    ASSERT_TRUE(Shell(std::string("ip link add near type veth peer name far netns ") + kFarNs));
    ASSERT_TRUE(Shell(std::string("ip addr add ") + kNear + "/24 dev near"));
    ASSERT_TRUE(Shell("ip link set near up"));
    const std::string in_far = std::string("ip netns exec ") + kFarNs + " ";
    ASSERT_TRUE(Shell(in_far + "ip addr add " + kFar + "/24 dev far"));
    ASSERT_TRUE(Shell(in_far + "ip link set far up"));
    ASSERT_TRUE(Shell(in_far + "ip link set lo up"));
    // The server's listening socket is made in the far namespace (a socket
    // stays in the namespace it was made in); the loop thread goes back.
    InFar([&] {
      server_ = std::make_unique<RpcServer>(loop_.base(), ServerOptions{}, &handler_);
      StatusOr<uint16_t> port = server_->Listen(*ResolveAddress(kFar, 0));
      ASSERT_TRUE(port.ok()) << port.status().ToString();
      port_ = *port;
    });
  }
  // Runs `fn` on the loop thread in the far namespace (sockets it makes
  // stay there), then brings the thread back.
  void InFar(const std::function<void()>& fn) {
    loop_.RunSync([&] {
      int here = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
      int far = open((std::string("/run/netns/") + kFarNs).c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(here, 0);
      ASSERT_GE(far, 0);
      ASSERT_EQ(setns(far, CLONE_NEWNET), 0);
      fn();
      EXPECT_EQ(setns(here, CLONE_NEWNET), 0);
      close(here);
      close(far);
    });
  }
  void TearDown() override {
    loop_.RunSync([&] {
      client_.reset();
      server_.reset();
    });
    Shell("ip link del near");
    Shell(std::string("ip netns del ") + kFarNs);
  }
  void Send(const std::string& args, int tag) {
    loop_.RunSync([&] {
      Status s = client_->Call(1, 1, 1, OpaqueAuth{}, args, [this, tag](StatusOr<RpcReply> r) {
        results_[tag] = r.ok() ? std::string(r->results()) : "error: " + r.status().ToString();
      });
      if (!s.ok()) results_[tag] = "refused: " + s.ToString();
    });
  }
  // Waits up to `ms` for `tag`'s result; "" if none came.
  std::string Wait(int tag, int ms) {
    for (int i = 0; i < ms / 20; ++i) {
      std::string out;
      loop_.RunSync([&] {
        if (auto it = results_.find(tag); it != results_.end()) out = it->second;
      });
      if (!out.empty()) return out;
      usleep(20000);
    }
    return "";
  }
  // Starts the loop and a client with `o`.
  void StartClient(const ClientOptions& o) {
    loop_.Start();
    loop_.RunSync([&] {
      client_ = std::make_unique<RpcClient>(loop_.base(), o);
      client_->Start();
    });
  }
  int ConnectionsUp() {
    int up = 0;
    loop_.RunSync([&] { up = client_->connections_up(); });
    return up;
  }

  LoopThread loop_;
  EchoHandler handler_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
  uint16_t port_ = 0;
  std::map<int, std::string> results_;
};

TEST_F(UpstreamPathTest, AConnectionWhosePathWentSilentIsFoundDeadAndReplaced) {
  ClientOptions o;
  o.server = *ResolveAddress(kFar, port_);
  o.timeout = std::chrono::seconds(60);  // no deadline comes into it
  o.reconnect_min = std::chrono::milliseconds(50);
  o.reconnect_max = std::chrono::milliseconds(200);
  o.connect_timeout = std::chrono::seconds(1);
  o.dead_path_timeout = std::chrono::seconds(1);
  StartClient(o);
  Send("before", 1);
  ASSERT_EQ(Wait(1, 5000), "before");
  ASSERT_EQ(ConnectionsUp(), 1);

  // The path drops everything coming back, silently (the far side's
  // acknowledgements and replies: a route there that swallows them); a call
  // goes out on the connection, and its segments leave unacknowledged.
  ASSERT_TRUE(Shell(SilentFar("add")));
  Send("during", 2);
  bool lost = false;
  for (int i = 0; i < 250 && !lost; ++i) {  // 5 s: the kernel alone takes minutes
    usleep(20000);
    lost = ConnectionsUp() == 0;
  }
  EXPECT_TRUE(lost) << "the silent connection is still taken for up";
  EXPECT_EQ(Wait(2, 100), "") << "no reply can cross the path";

  // The path is back: the call goes again on a new connection.
  ASSERT_TRUE(Shell(SilentFar("del")));
  EXPECT_EQ(Wait(2, 10000), "during");
  EXPECT_EQ(ConnectionsUp(), 1);
}

// A server that is alive but stops reading (its threads stuck on storage)
// fills its window, and then answers window probes without taking
// anything: its connection is kept, however long it stalls, not taken for
// a silent path.
TEST_F(UpstreamPathTest, AServerThatStopsReadingKeepsItsConnection) {
  // A listener in the far namespace that never accepts: the kernel takes
  // the connection and buffers what comes until the window shuts.
  int stalled = -1;
  uint16_t stalled_port = 0;
  InFar([&] {
    stalled = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    SockAddr at = *ResolveAddress(kFar, 0);
    EXPECT_EQ(bind(stalled, at.get(), at.len), 0);
    EXPECT_EQ(listen(stalled, 4), 0);
    sockaddr_in bound{};
    socklen_t len = sizeof(bound);
    getsockname(stalled, reinterpret_cast<sockaddr*>(&bound), &len);
    stalled_port = ntohs(bound.sin_port);
  });
  ClientOptions o;
  o.server = *ResolveAddress(kFar, stalled_port);
  o.timeout = std::chrono::seconds(60);
  o.dead_path_timeout = std::chrono::seconds(1);
  StartClient(o);
  for (int i = 0; i < 500 && ConnectionsUp() == 0; ++i) usleep(10000);
  ASSERT_EQ(ConnectionsUp(), 1);
  const std::string big(1 << 20, 'w');
  for (int i = 0; i < 24; ++i) Send(big, i);  // far more than both sides' buffers
  usleep(4000000);  // four limits
  EXPECT_EQ(ConnectionsUp(), 1) << "a stalled server's connection was dropped";
  loop_.RunSync([&] { EXPECT_EQ(client_->stats().reconnects, 0u); });
  close(stalled);
}

// Asking the upstream's rpcbind for its ports at start over a path that
// drops everything ends with a clear error within the time given, not
// after libtirpc's minute (a service manager would kill the start first,
// before the reason is logged).
TEST_F(UpstreamPathTest, AskingAnUnreachableRpcbindEndsWithinItsTimeout) {
  // Nothing comes back from the far side: not even the ICMP that says no
  // rpcbind listens there. (A blackhole route on this side would fail the
  // send at once: only established TCP connections drop silently so.)
  ASSERT_TRUE(Shell(SilentFar("add")));
  const auto start = std::chrono::steady_clock::now();
  StatusOr<uint16_t> port =
      RpcbindGetPort(*ResolveAddress(kFar, 0), 100003, 3, std::chrono::seconds(1));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(port.ok());
  EXPECT_NE(port.status().message().find("did not answer within 1000 ms"), std::string::npos)
      << port.status().message();
  EXPECT_GE(took, std::chrono::milliseconds(900)) << "it did not wait for an answer";
  EXPECT_LT(took, std::chrono::seconds(5));
}

}  // namespace
}  // namespace nfsedge
