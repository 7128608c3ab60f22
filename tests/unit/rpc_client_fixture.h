// RpcClientTest: an RpcClient against an in-process RpcServer on
// loopback, whose handler echoes each call's arguments, holds those that
// say "hold", and drops connections as told.
#ifndef NFSEDGE_TESTS_UNIT_RPC_CLIENT_FIXTURE_H_
#define NFSEDGE_TESTS_UNIT_RPC_CLIENT_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"
#include "test_loop.h"

namespace nfsedge::rpc_client_test {

// Echoes each call's arguments back, except as told.
class TestHandler : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    seen_xids.push_back(call->xid());
    seen_ports.push_back(call->peer().port());
    std::string args(call->args());
    if (args == "hold") {
      held.push_back(std::move(call));
      return;
    }
    if (args == "garble-once" && ++drops[call->xid()] == 1) {
      call->Reply("not an RPC reply");  // the client drops this connection only
      return;
    }
    if (args == "drop-and-stop" && ++drops[call->xid()] == 1) {
      server->StopListening();  // connects refused until the test listens again
      server->CloseAll();
      return;
    }
    if ((args == "drop-once" && ++drops[call->xid()] == 1) || args == "drop-always") {
      server->CloseAll();  // lose the connection with the call on it
      return;
    }
    call->ReplySuccess(args);
  }
  RpcServer* server = nullptr;
  std::vector<uint32_t> seen_xids;
  std::vector<uint16_t> seen_ports;
  std::vector<std::unique_ptr<IncomingCall>> held;
  std::map<uint32_t, int> drops;
};

class RpcClientTest : public ::testing::Test {
 protected:
  void StartServer(uint16_t port = 0) {
    server_ = std::make_unique<RpcServer>(loop_.base(), ServerOptions{}, &handler_);
    handler_.server = server_.get();
    StatusOr<uint16_t> p = server_->Listen(*ResolveAddress("127.0.0.1", port));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    port_ = *p;
  }
  void StartClient(ClientOptions o, Duration reconnect_min = std::chrono::milliseconds(10),
                   Duration reconnect_max = std::chrono::milliseconds(50)) {
    o.server = *ResolveAddress("127.0.0.1", port_);
    o.reconnect_min = reconnect_min;
    o.reconnect_max = reconnect_max;
    client_ = std::make_unique<RpcClient>(loop_.base(), o);
    client_->Start();
  }
  void TearDown() override {
    loop_.RunSync([this] {
      handler_.held.clear();
      client_.reset();
      server_.reset();
    });
  }
  // Sends a call from the loop thread; results land in results_[tag].
  void Send(const std::string& args, int tag, uint32_t proc = 1) {
    loop_.RunSync([&] {
      Status s = client_->Call(1, 1, proc, OpaqueAuth{}, args, [this, tag](StatusOr<RpcReply> r) {
        results_[tag] = r.ok() ? std::string(r->results()) : "error: " + r.status().ToString();
      });
      if (!s.ok()) results_[tag] = "refused: " + s.ToString();
    });
  }
  // Waits until the server holds `n` calls, and a little longer for more
  // that should not come.
  void WaitHeld(size_t n) {
    for (int i = 0; i < 1000; ++i) {
      size_t held;
      loop_.RunSync([&] { held = handler_.held.size(); });
      if (held >= n) break;
      usleep(10000);
    }
    usleep(50000);
  }
  // Waits (up to 2 s) until `n` connections are up.
  void WaitConnectionsUp(int n) {
    for (int i = 0; i < 200; ++i) {
      int up = -1;
      loop_.RunSync([&] { up = client_->connections_up(); });
      if (up == n) return;
      usleep(10000);
    }
  }
  // A server, and a client whose calls have a 300 ms deadline and whose
  // procedure 12 (a REMOVE, say) is not repeatable.
  void StartServerAndShortDeadlineClient() {
    StartServer();
    ClientOptions o;
    o.timeout = std::chrono::milliseconds(300);
    o.repeatable = [](uint32_t, uint32_t proc) { return proc != 12; };
    StartClient(o);
  }
  // Answers every call the server holds.
  void ReleaseAll() {
    loop_.RunSync([&] {
      for (auto& c : handler_.held) c->ReplySuccess("released");
      handler_.held.clear();
    });
  }
  // Answers what the server holds until `tag` has a result (a copy held on
  // a connection since closed is not heard: the next one is), for 2.5 s at
  // most.
  void ReleaseUntilAnswered(int tag) {
    bool answered = false;
    for (int i = 0; i < 50 && !answered; ++i) {
      ReleaseAll();
      usleep(50000);
      loop_.RunSync([&] { answered = results_.count(tag) != 0; });
    }
  }
  // Waits until `tag` has a result; returns it.
  std::string Wait(int tag) {
    for (int i = 0; i < 500; ++i) {
      std::string out;
      loop_.RunSync([&] {
        auto it = results_.find(tag);
        if (it != results_.end()) out = it->second;
      });
      if (!out.empty()) return out;
      usleep(10000);
    }
    return "(no result)";
  }

  LoopThread loop_;
  TestHandler handler_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
  std::map<int, std::string> results_;
  uint16_t port_ = 0;
};

}  // namespace nfsedge::rpc_client_test

#endif  // NFSEDGE_TESTS_UNIT_RPC_CLIENT_FIXTURE_H_
