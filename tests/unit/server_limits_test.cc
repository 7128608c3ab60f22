// The RPC server's limits against abuse (docs/security.md) over real
// loopback sockets: connections per address and in all, idle connections
// (a record that never completes is not activity; a timeout set by a
// reload), the bytes held for calls (records, room for replies, replies not
// taken), and shutdown's end of reading.
#include <gtest/gtest.h>

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/nfs_procs.h"
#include "rpc/record_marking.h"
#include "rpc/rpc_message.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

// A program that answers NULL at once and holds every other call until the
// test answers it, keeping `reply_room` bytes for each one's reply. Used on
// the loop thread only.
class HoldingHandler : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    if (call->header().proc == 0) {
      call->ReplySuccess("");
      return;
    }
    call->HoldForReply(reply_room);
    held.push_back(std::move(call));
  }
  std::vector<std::unique_ptr<IncomingCall>> held;
  size_t reply_room = 0;
};

// The limits against abuse (docs/security.md) over real loopback sockets.
class ServerLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_.Start(); }
  void TearDown() override {
    loop_.RunSync([this] {
      handler_.held.clear();
      server_.reset();
    });
  }

  void StartServer(const ServerOptions& so) {
    loop_.RunSync([&] {
      server_ = std::make_unique<RpcServer>(loop_.base(), so, &handler_);
      port_ = *server_->Listen(*ResolveAddress("127.0.0.1", 0));
    });
  }

  // Returns true iff a NULL call on `c` gets its reply.
  static bool Answers(BlockingClient& c, uint32_t xid) {
    c.SendRecord(MakeCall(xid, kNfsProgram, 3, 0, ""));
    std::optional<std::string> r = c.ReadRecord();
    return r && ParseReply(*r).ok() && ParseReply(*r)->xid == xid;
  }

  ServerStats Stats() {
    ServerStats st;
    loop_.RunSync([&] { st = server_->stats(); });
    return st;
  }
  size_t Connections() {
    size_t n;
    loop_.RunSync([&] { n = server_->connection_count(); });
    return n;
  }
  size_t Held() {
    size_t n;
    loop_.RunSync([&] { n = handler_.held.size(); });
    return n;
  }

  LoopThread loop_;
  HoldingHandler handler_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

TEST_F(ServerLimitsTest, ConnectionsFromOneAddressAreLimited) {
  ServerOptions so;
  so.max_connections_per_client = 2;
  StartServer(so);
  BlockingClient a(port_);
  auto b = std::make_unique<BlockingClient>(port_);
  ASSERT_TRUE(Answers(a, 1));
  ASSERT_TRUE(Answers(*b, 2));
  BlockingClient third(port_);
  EXPECT_TRUE(third.WaitClosed());
  // Another client address has a count of its own.
  BlockingClient other(port_, "127.0.0.2");
  ASSERT_TRUE(other.connected());
  EXPECT_TRUE(Answers(other, 3));
  EXPECT_TRUE(Answers(a, 4));  // the connections already open go on
  // A connection closed frees its place.
  b.reset();
  for (int i = 0; i < 500 && Connections() > 2; ++i) usleep(10000);
  ASSERT_EQ(Connections(), 2u);
  BlockingClient again(port_);
  EXPECT_TRUE(Answers(again, 5));
  ServerStats st = Stats();
  EXPECT_EQ(st.connections_refused_per_client, 1u);
  EXPECT_EQ(st.connections_refused, 0u);
  EXPECT_EQ(st.connections_accepted, 4u);
}

TEST_F(ServerLimitsTest, ConnectionsInAllAreLimited) {
  ServerOptions so;
  so.max_connections = 2;
  StartServer(so);
  BlockingClient a(port_);
  auto b = std::make_unique<BlockingClient>(port_, "127.0.0.2");
  ASSERT_TRUE(Answers(a, 1));
  ASSERT_TRUE(Answers(*b, 2));
  // From any address, including one with no connection open yet.
  BlockingClient third(port_, "127.0.0.3");
  EXPECT_TRUE(third.WaitClosed());
  BlockingClient fourth(port_);
  EXPECT_TRUE(fourth.WaitClosed());
  EXPECT_TRUE(Answers(a, 3));  // the connections already open go on
  b.reset();
  for (int i = 0; i < 500 && Connections() > 1; ++i) usleep(10000);
  ASSERT_EQ(Connections(), 1u);
  BlockingClient again(port_, "127.0.0.3");
  EXPECT_TRUE(Answers(again, 4));
  ServerStats st = Stats();
  EXPECT_EQ(st.connections_refused, 2u);
  EXPECT_EQ(st.connections_refused_per_client, 0u);
  EXPECT_EQ(st.connections_accepted, 3u);
}

TEST_F(ServerLimitsTest, IdleConnectionIsClosedButNotABusyOrActiveOne) {
  ServerOptions so;
  so.idle_timeout = std::chrono::seconds(1);
  StartServer(so);
  BlockingClient idle(port_), busy(port_);
  auto active = std::make_unique<BlockingClient>(port_);
  ASSERT_TRUE(Answers(idle, 1));
  busy.SendRecord(MakeCall(2, kNfsProgram, 3, 1, ""));  // held: one call in flight
  for (int i = 0; i < 500 && Held() < 1; ++i) usleep(10000);
  ASSERT_EQ(Held(), 1u);
  EXPECT_FALSE(idle.WaitClosed(std::chrono::milliseconds(400)));  // not before its time
  // `active` makes a call every 200 ms for 2.4 s: never idle for 1 s.
  for (uint32_t i = 0; i < 12; ++i) {
    ASSERT_TRUE(Answers(*active, 10 + i)) << i;
    usleep(200000);
  }
  EXPECT_TRUE(idle.WaitClosed(std::chrono::seconds(2)));
  // Idle on the wire for 2.4 s, but its call is in flight.
  EXPECT_FALSE(busy.WaitClosed(std::chrono::milliseconds(10)));
  EXPECT_TRUE(Answers(*active, 30));
  EXPECT_EQ(Stats().idle_closed, 1u);
  active.reset();  // closed by the client: not counted as idle
  // Once answered, the busy connection is idle too.
  loop_.RunSync([&] { handler_.held[0]->ReplySuccess(""); });
  std::optional<std::string> r = busy.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 2u);
  EXPECT_TRUE(busy.WaitClosed(std::chrono::seconds(3)));
  EXPECT_EQ(Stats().idle_closed, 2u);
}

// Bytes of a record that never completes are not activity: a client that
// sends one byte of a large record now and then (slowloris) would otherwise
// hold its connection, and the record's bytes, for ever.
TEST_F(ServerLimitsTest, ARecordThatNeverCompletesDoesNotKeepTheConnectionOpen) {
  ServerOptions so;
  so.idle_timeout = std::chrono::seconds(1);
  StartServer(so);
  BlockingClient slow(port_);
  char mark[4];
  EncodeRecordMark(1000, mark);
  slow.SendRaw(std::string(mark, 4));
  bool closed = false;
  for (int i = 0; i < 12 && !closed; ++i) {  // one byte every 250 ms for 3 s
    slow.SendRaw("x");
    closed = slow.WaitClosed(std::chrono::milliseconds(250));
  }
  EXPECT_TRUE(closed) << "a record dripping in kept the connection open";
  EXPECT_EQ(Stats().idle_closed, 1u);
}

TEST_F(ServerLimitsTest, SetLimitsAppliesToNewConnectionsAndKeepsOpenOnes) {
  ServerOptions so;
  so.max_connections_per_client = 3;
  so.idle_timeout = std::chrono::seconds(1);
  StartServer(so);
  BlockingClient a(port_), b(port_);
  ASSERT_TRUE(Answers(a, 1));
  ASSERT_TRUE(Answers(b, 2));
  ServerOptions lower;
  lower.max_connections_per_client = 1;  // idle_timeout zero: never closed
  loop_.RunSync([&] { server_->SetLimits(lower); });
  BlockingClient refused(port_);
  EXPECT_TRUE(refused.WaitClosed());
  // The two open before the change go on, and no longer time out.
  EXPECT_FALSE(a.WaitClosed(std::chrono::milliseconds(1500)));
  EXPECT_TRUE(Answers(a, 3));
  EXPECT_TRUE(Answers(b, 4));
  EXPECT_EQ(Stats().connections_refused_per_client, 1u);
  EXPECT_EQ(Stats().idle_closed, 0u);
  ServerOptions higher;
  higher.max_connections_per_client = 4;
  loop_.RunSync([&] { server_->SetLimits(higher); });
  BlockingClient welcome(port_);
  EXPECT_TRUE(Answers(welcome, 5));
}

// An idle timeout set by a reload reaches the connections already open,
// those opened while it was 0 (no timer) too.
TEST_F(ServerLimitsTest, AnIdleTimeoutSetByAReloadReachesOpenConnections) {
  StartServer(ServerOptions{});  // idle_timeout zero
  BlockingClient c(port_);
  ASSERT_TRUE(Answers(c, 1));
  ServerOptions now;
  now.idle_timeout = std::chrono::seconds(1);
  loop_.RunSync([&] { server_->SetLimits(now); });
  EXPECT_TRUE(c.WaitClosed(std::chrono::seconds(3)));
  EXPECT_EQ(Stats().idle_closed, 1u);
}

// At shutdown the server stops reading: the calls read are answered, those
// sent later are not run (the client sends them again to the next server).
TEST_F(ServerLimitsTest, AfterStopReadingNoNewCallIsRun) {
  StartServer(ServerOptions{});
  BlockingClient c(port_);
  c.SendRecord(MakeCall(1, kNfsProgram, 3, 1, ""));  // held
  for (int i = 0; i < 500 && Held() < 1; ++i) usleep(10000);
  ASSERT_EQ(Held(), 1u);
  loop_.RunSync([&] { server_->StopReading(); });
  c.SendRecord(MakeCall(2, kNfsProgram, 3, 1, ""));
  usleep(200000);
  EXPECT_EQ(Held(), 1u) << "a call sent after the shutdown began was run";
  loop_.RunSync([&] { handler_.held[0]->ReplySuccess(""); });
  std::optional<std::string> r = c.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 1u) << "the call read before is answered";
  EXPECT_FALSE(c.ReadRecord(std::chrono::milliseconds(300)));
  EXPECT_EQ(Held(), 1u);
}

// The bytes of the calls held are bounded over all connections: past
// max_held_call_bytes, a connection with a call in flight is not read until
// calls are answered; a connection with none still brings one.
TEST_F(ServerLimitsTest, HeldCallBytesAreBoundedOverAllConnections) {
  ServerOptions so;
  so.max_held_call_bytes = 300000;
  StartServer(so);
  const std::string big(100000, 'x');  // three records reach the bound
  BlockingClient a(port_);
  for (uint32_t xid = 1; xid <= 8; ++xid) a.SendRecord(MakeCall(xid, kNfsProgram, 3, 1, big));
  for (int i = 0; i < 500 && Held() < 3; ++i) usleep(10000);
  usleep(200000);  // time for more, which must not come
  EXPECT_EQ(Held(), 3u);
  BlockingClient b(port_);
  b.SendRecord(MakeCall(20, kNfsProgram, 3, 1, big));
  for (int i = 0; i < 500 && Held() < 4; ++i) usleep(10000);
  EXPECT_EQ(Held(), 4u) << "a connection with no call in flight was not read";
  b.SendRecord(MakeCall(21, kNfsProgram, 3, 1, big));
  usleep(200000);
  EXPECT_EQ(Held(), 4u);
  size_t bytes = 0;
  loop_.RunSync([&] { bytes = server_->held_call_bytes(); });
  EXPECT_GE(bytes, 4 * big.size());
  // Two answered: under the bound again, one more call is read, no more.
  loop_.RunSync([&] {
    for (int k = 0; k < 2; ++k) {
      handler_.held.front()->ReplySuccess("");
      handler_.held.erase(handler_.held.begin());
    }
  });
  for (int i = 0; i < 500 && Held() < 3; ++i) usleep(10000);
  usleep(200000);
  EXPECT_EQ(Held(), 3u);
  EXPECT_GE(Stats().held_bytes_waits, 2u);
  loop_.RunSync([&] {
    handler_.held.clear();  // unanswered: their bytes go too
    bytes = server_->held_call_bytes();
  });
  EXPECT_LT(bytes, 2 * big.size());
}

// A connection waiting for the bound that is woken while still over it
// (another client's orphaned call answered) waits again, and is read once
// other connections' calls go and the held bytes pass under the bound.
TEST_F(ServerLimitsTest, AConnectionWokenWhileStillOverTheBoundWaitsAgain) {
  ServerOptions so;
  so.max_held_call_bytes = 250000;
  StartServer(so);
  const std::string big(100000, 'x');
  auto held_of = [&](uint32_t lo, uint32_t hi) {
    size_t n = 0;
    loop_.RunSync([&] {
      for (auto& call : handler_.held) n += call->xid() >= lo && call->xid() <= hi;
    });
    return n;
  };
  BlockingClient b(port_);
  for (uint32_t xid = 10; xid <= 11; ++xid) b.SendRecord(MakeCall(xid, kNfsProgram, 3, 1, big));
  for (int i = 0; i < 500 && Held() < 2; ++i) usleep(10000);
  BlockingClient a(port_);
  for (uint32_t xid = 1; xid <= 8; ++xid) a.SendRecord(MakeCall(xid, kNfsProgram, 3, 1, big));
  for (int i = 0; i < 500 && Held() < 3; ++i) usleep(10000);
  usleep(100000);
  ASSERT_EQ(held_of(1, 8), 1u) << "one call of a, then over the bound";
  {
    BlockingClient c(port_);  // no call in flight: read, then gone
    c.SendRecord(MakeCall(30, kNfsProgram, 3, 1, big));
    for (int i = 0; i < 500 && held_of(30, 30) == 0; ++i) usleep(10000);
    ASSERT_EQ(held_of(30, 30), 1u);
  }
  usleep(100000);  // c's close seen: its call is orphaned
  loop_.RunSync([&] {
    for (auto& call : handler_.held) {
      if (call->xid() == 30) call->ReplySuccess("");  // wakes a, still over the bound
    }
  });
  usleep(100000);
  EXPECT_EQ(held_of(1, 8), 1u);
  loop_.RunSync([&] {  // b's and c's calls go: under the bound
    std::erase_if(handler_.held, [](const auto& call) { return call->xid() >= 10; });
  });
  for (int i = 0; i < 500 && held_of(1, 8) < 2; ++i) usleep(10000);
  EXPECT_GE(held_of(1, 8), 2u) << "the connection woken while over the bound was never read again";
}

// The room kept for the replies of the calls held counts: calls whose
// replies would pass max_held_call_bytes are not read (a burst of small
// READs of 1 MiB each must not be let in by their small records).
TEST_F(ServerLimitsTest, RoomKeptForRepliesCountsAsHeld) {
  ServerOptions so;
  so.max_held_call_bytes = 300000;
  StartServer(so);
  loop_.RunSync([&] { handler_.reply_room = 100000; });  // three reach the bound
  BlockingClient c(port_);
  for (uint32_t xid = 1; xid <= 8; ++xid) c.SendRecord(MakeCall(xid, kNfsProgram, 3, 1, ""));
  for (int i = 0; i < 500 && Held() < 3; ++i) usleep(10000);
  usleep(200000);  // time for more, which must not come
  EXPECT_EQ(Held(), 3u);
  size_t bytes = 0;
  loop_.RunSync([&] {
    bytes = server_->held_call_bytes();
    handler_.held.front()->ReplySuccess("");  // its room goes with the answer
    handler_.held.erase(handler_.held.begin());
  });
  EXPECT_GE(bytes, 300000u);
  ASSERT_TRUE(c.ReadRecord());
  for (int i = 0; i < 500 && Held() < 3; ++i) usleep(10000);
  usleep(200000);
  EXPECT_EQ(Held(), 3u) << "one more call read, no more";
  loop_.RunSync([&] {
    handler_.held.clear();
    bytes = server_->held_call_bytes();
  });
  EXPECT_LT(bytes, 100000u);
}

// Replies a client has not taken count as held until it takes them: while
// one client leaves a large reply unread, another with a call in flight is
// not read.
TEST_F(ServerLimitsTest, UnreadRepliesCountAsHeld) {
  ServerOptions so;
  so.max_held_call_bytes = 16 << 20;
  StartServer(so);
  BlockingClient a(port_);
  a.SendRecord(MakeCall(1, kNfsProgram, 3, 1, ""));
  for (int i = 0; i < 500 && Held() < 1; ++i) usleep(10000);
  ASSERT_EQ(Held(), 1u);
  // More than the kernel's socket buffers take: most of it stays queued.
  loop_.RunSync([&] {
    handler_.held.front()->ReplySuccess(std::string(48 << 20, 'r'));
    handler_.held.clear();
  });
  size_t bytes = 0;
  loop_.RunSync([&] { bytes = server_->held_call_bytes(); });
  EXPECT_GE(bytes, so.max_held_call_bytes);
  BlockingClient b(port_);
  b.SendRecord(MakeCall(2, kNfsProgram, 3, 1, ""));
  b.SendRecord(MakeCall(3, kNfsProgram, 3, 1, ""));
  for (int i = 0; i < 500 && Held() < 1; ++i) usleep(10000);
  usleep(200000);
  EXPECT_EQ(Held(), 1u) << "a connection with a call in flight was read";
  std::optional<std::string> r = a.ReadRecord(std::chrono::seconds(20));
  ASSERT_TRUE(r);
  EXPECT_GT(r->size(), 48u << 20);
  for (int i = 0; i < 500 && Held() < 2; ++i) usleep(10000);
  EXPECT_EQ(Held(), 2u) << "read once the reply was taken";
  loop_.RunSync([&] {
    handler_.held.clear();
    bytes = server_->held_call_bytes();
  });
  EXPECT_LT(bytes, 1u << 20);
}

TEST_F(ServerLimitsTest, ZeroIdleTimeoutNeverCloses) {
  StartServer(ServerOptions{});  // idle_timeout zero
  BlockingClient c(port_);
  ASSERT_TRUE(Answers(c, 1));
  EXPECT_FALSE(c.WaitClosed(std::chrono::milliseconds(1500)));
  EXPECT_TRUE(Answers(c, 2));
  EXPECT_EQ(Stats().idle_closed, 0u);
}

}  // namespace
}  // namespace nfsedge
