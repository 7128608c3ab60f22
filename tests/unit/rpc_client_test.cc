// RpcClient against an in-process RpcServer on loopback: replies matched by
// XID, deadlines, reconnect with resend of the same XID, in-flight and queue
// limits.
#include "rpc/rpc_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "rpc/rpc_server.h"
#include "rpc_client_fixture.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

using namespace rpc_client_test;  // NOLINT: test file, the fixture's names throughout.

TEST_F(RpcClientTest, RepliesAreMatchedToCalls) {
  StartServer();
  ClientOptions o;
  o.connections = 3;
  StartClient(o);
  loop_.Start();
  for (int i = 0; i < 50; ++i) Send("call-" + std::to_string(i), i);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(Wait(i), "call-" + std::to_string(i));
}

TEST_F(RpcClientTest, DeadlinePassesWithoutReply) {
  StartServer();
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(200);
  StartClient(o);
  loop_.Start();
  Send("hold", 1);
  EXPECT_NE(Wait(1).find("timeout"), std::string::npos);
}

// While the upstream is out, deadlines are held: the call waits; released,
// it has a whole timeout again (here it is answered within it).
TEST_F(RpcClientTest, HeldDeadlinesLetCallsWaitForTheUpstream) {
  StartServer();
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(1000);
  StartClient(o);
  loop_.RunSync([&] { client_->HoldDeadlines(true); });
  loop_.Start();
  Send("hold", 1);
  Send("hold", 2);
  usleep(1500000);
  loop_.RunSync([&] {
    EXPECT_EQ(results_.count(1), 0u) << "held past its deadline";
    EXPECT_EQ(client_->stats().timeouts, 0u);
    client_->HoldDeadlines(false);
  });
  usleep(100000);  // within the new timeout
  ReleaseAll();
  EXPECT_EQ(Wait(1), "released");
  EXPECT_EQ(Wait(2), "released");
  // Not held: a call times out again.
  Send("hold", 3);
  EXPECT_NE(Wait(3).find("timeout"), std::string::npos);
}

TEST_F(RpcClientTest, UnansweredCallIsRetransmittedWithTheSameXid) {
  StartServer();
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(1500);
  StartClient(o);
  loop_.RunSync([&] { client_->SetRetransmitTimeout(std::chrono::milliseconds(100)); });
  loop_.Start();
  Send("hold", 1);
  EXPECT_NE(Wait(1).find("timeout"), std::string::npos);
  loop_.RunSync([&] {
    // Sent at 0, then 100, 300 and 700 ms (the timeout doubling), no more.
    ASSERT_EQ(handler_.seen_xids.size(), 1u + kMaxRetransmits);
    for (uint32_t xid : handler_.seen_xids) EXPECT_EQ(xid, handler_.seen_xids[0]);
    EXPECT_EQ(client_->stats().retransmits, static_cast<uint64_t>(kMaxRetransmits));
  });
}

// With `o` (a 100 ms retransmission timeout, a 2 s deadline), a held call
// of `proc` and a held call of procedure 1: `proc`'s is sent once, the
// other at 0, 100, 300 and 700 ms, before the deadline.
class RetransmitTest : public RpcClientTest {
 protected:
  void SentOnceWhileAnotherIsSentAgain(ClientOptions o, uint32_t proc) {
    StartServer();
    o.timeout = std::chrono::milliseconds(2000);
    StartClient(o);
    loop_.RunSync([&] { client_->SetRetransmitTimeout(std::chrono::milliseconds(100)); });
    loop_.Start();
    Send("hold", 1, proc);
    Send("hold", 2, 1);
    for (int i = 0; i < 180; ++i) {
      size_t seen = 0;
      loop_.RunSync([&] { seen = handler_.seen_xids.size(); });
      if (seen >= 2u + kMaxRetransmits) break;
      usleep(10000);
    }
    usleep(50000);  // and no more
    loop_.RunSync([&] {
      std::map<uint32_t, int> sends;
      for (uint32_t xid : handler_.seen_xids) sends[xid]++;
      ASSERT_EQ(sends.size(), 2u);
      EXPECT_EQ(sends[handler_.seen_xids[0]], 1) << "procedure " << proc << " was sent again";
      EXPECT_EQ(client_->stats().retransmits, static_cast<uint64_t>(kMaxRetransmits));
    });
    ReleaseAll();
    EXPECT_EQ(Wait(1), "released");
    EXPECT_EQ(Wait(2), "released");
  }
};

TEST_F(RetransmitTest, ACallNotSafeToRepeatIsNeverRetransmittedOnItsConnection) {
  ClientOptions o;
  o.repeatable = [](uint32_t prog, uint32_t proc) { return !(prog == 1 && proc == 12); };
  SentOnceWhileAnotherIsSentAgain(o, 12);
}

// A repeatable call that is not sent again after the timeout (procedure 21,
// a COMMIT whose server time is a flush) waits for its reply while its
// connection stays.
TEST_F(RetransmitTest, ACallNotResentAfterTheTimeoutWaitsForItsReply) {
  ClientOptions o;
  o.resent_after_timeout = [](uint32_t, uint32_t proc) { return proc != 21; };
  SentOnceWhileAnotherIsSentAgain(o, 21);
}

TEST_F(RpcClientTest, PacedCallLeavesAtTheRateAndSaysWhen) {
  StartServer();
  StartClient(ClientOptions{});
  loop_.RunSync([&] { client_->SetPacingRate(200e3); });  // 200 KB/s
  loop_.Start();
  const std::string big(100000, 'x');  // half a second at that rate
  const auto start = SteadyClock::now();
  SteadyClock::time_point sent_at{}, replied{};
  loop_.RunSync([&] {
    ASSERT_TRUE(client_
                    ->Call(1, 1, 1, OpaqueAuth{}, big,
                           [&](StatusOr<RpcReply> r) {
                             ASSERT_TRUE(r.ok());
                             EXPECT_EQ(r->results(), big);
                             sent_at = r->sent_at;
                             replied = SteadyClock::now();
                             results_[1] = "done";
                           })
                    .ok());
  });
  EXPECT_EQ(Wait(1), "done");
  loop_.RunSync([&] {
    // The last byte cannot leave before the rate allows (less one burst).
    EXPECT_GE(sent_at - start, std::chrono::milliseconds(400));
    EXPECT_LE(sent_at, replied);
  });
  // Unpaced again: whole at once.
  loop_.RunSync([&] { client_->SetPacingRate(0); });
  Send(big, 2);
  EXPECT_EQ(Wait(2), big);
}

TEST_F(RpcClientTest, LostConnectionIsReopenedAndCallResentWithSameXid) {
  StartServer();
  StartClient(ClientOptions{});
  loop_.Start();
  Send("drop-once", 1);
  EXPECT_EQ(Wait(1), "drop-once");
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_xids.size(), 2u);
    EXPECT_EQ(handler_.seen_xids[0], handler_.seen_xids[1]);
    // Same source port, so the server's duplicate request cache knows it.
    EXPECT_EQ(handler_.seen_ports[0], handler_.seen_ports[1]);
    EXPECT_GE(client_->stats().resent, 1u);
  });
}

// From the loss of a connection to its reconnect, its source port stays the
// client's: another program's socket cannot take it meanwhile (the resent
// calls would come from another port, unknown to the server's duplicate
// request cache).
TEST_F(RpcClientTest, LostConnectionHoldsItsSourcePortUntilTheReconnect) {
  StartServer();
  StartClient(ClientOptions{}, std::chrono::seconds(1), std::chrono::seconds(1));
  loop_.Start();
  Send("drop-once", 1);
  bool lost = false;
  uint16_t port = 0;
  for (int i = 0; i < 200 && !lost; ++i) {
    usleep(5000);
    loop_.RunSync([&] {
      lost = handler_.seen_ports.size() == 1 && client_->connections_up() == 0;
      if (lost) port = handler_.seen_ports[0];
    });
  }
  ASSERT_TRUE(lost);
  const int other = socket(AF_INET, SOCK_STREAM, 0);  // no SO_REUSEADDR
  ASSERT_GE(other, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  const int bound = bind(other, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  EXPECT_NE(bound, 0) << "another socket took port " << port << " before the reconnect";
  close(other);
  EXPECT_EQ(Wait(1), "drop-once");
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_ports.size(), 2u);
    EXPECT_EQ(handler_.seen_ports[1], port);
  });
}

// Procedure 12 stands for a REMOVE: not repeatable.
bool NotTwelve(uint32_t, uint32_t proc) { return proc != 12; }

// A call that may not run twice, lost with its connection, is sent again on
// that connection, from its source port (the server's duplicate request
// cache keys on it), not on another connection that is up.
TEST_F(RpcClientTest, ACallNotSafeToRepeatIsSentAgainOnlyOnItsOwnConnection) {
  StartServer();
  ClientOptions o;
  o.connections = 2;
  o.repeatable = NotTwelve;
  StartClient(o, std::chrono::milliseconds(100), std::chrono::milliseconds(100));
  loop_.Start();
  WaitConnectionsUp(2);
  for (int tag = 1; tag <= 4; ++tag) Send("garble-once", tag, 12);
  for (int tag = 1; tag <= 4; ++tag) EXPECT_EQ(Wait(tag), "garble-once");
  loop_.RunSync([&] {
    // Each call's first send and its resend, by XID. A connection that
    // cannot bind its old port three times comes from a new one (a race
    // on a loaded machine): the resend may come from a new port, never
    // from the other connection's.
    std::map<uint32_t, std::vector<uint16_t>> ports;
    std::set<uint16_t> first_ports;
    for (size_t i = 0; i < handler_.seen_xids.size(); ++i) {
      auto& from = ports[handler_.seen_xids[i]];
      if (from.empty()) first_ports.insert(handler_.seen_ports[i]);
      from.push_back(handler_.seen_ports[i]);
    }
    ASSERT_EQ(ports.size(), 4u);
    ASSERT_EQ(first_ports.size(), 2u) << "the calls went on both connections";
    for (const auto& [xid, from] : ports) {
      ASSERT_EQ(from.size(), 2u);
      EXPECT_TRUE(from[1] == from[0] || !first_ports.contains(from[1]))
          << "xid " << xid << " sent first from port " << from[0]
          << ", then from the other connection's port " << from[1];
    }
    EXPECT_EQ(handler_.seen_xids.size(), 8u);
    EXPECT_EQ(client_->stats().timeouts, 0u);
  });
}

// Such a call is not failed at its deadline (it may have run, and its result
// would be lost): its connection is opened again and it is sent again, with
// its XID and from its port, until it is answered. One never sent fails.
TEST_F(RpcClientTest, ACallNotSafeToRepeatOutlivesItsDeadlineOnceSent) {
  StartServerAndShortDeadlineClient();
  loop_.Start();
  Send("hold", 1, 12);
  usleep(1000000);  // three deadlines
  loop_.RunSync([&] {
    EXPECT_EQ(results_.count(1), 0u) << results_[1];
    ASSERT_GE(handler_.seen_xids.size(), 2u);
    for (size_t i = 1; i < handler_.seen_xids.size(); ++i) {
      EXPECT_EQ(handler_.seen_xids[i], handler_.seen_xids[0]);
      EXPECT_EQ(handler_.seen_ports[i], handler_.seen_ports[0]);
    }
    EXPECT_EQ(client_->stats().timeouts, 0u);
  });
  // The server answers (a copy on a connection just closed is not heard:
  // the next one is).
  ReleaseUntilAnswered(1);
  EXPECT_EQ(Wait(1), "released");
  // The server gone, a new such call is never sent, and fails.
  loop_.RunSync([&] { server_.reset(); });
  WaitConnectionsUp(0);
  Send("never", 2, 12);
  EXPECT_NE(Wait(2).find("timeout"), std::string::npos);
}

// A call that may not run twice, kept in the queue most of its deadline
// (calls in flight at the bound), waits a whole deadline for its reply
// once sent: its connection is not opened again, and it not sent again, a
// moment after it left.
TEST_F(RpcClientTest, ACallNotSafeToRepeatWaitsADeadlineFromWhenItIsSent) {
  StartServer();
  ClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  o.max_in_flight = 1;
  o.repeatable = [](uint32_t, uint32_t proc) { return proc != 12; };
  StartClient(o);
  loop_.Start();
  Send("hold", 1);
  WaitHeld(1);
  Send("hold", 2, 12);  // queued behind the first
  usleep(1300000);
  ReleaseAll();  // the first answered: the second leaves at about 1.3 s
  EXPECT_EQ(Wait(1), "released");
  usleep(1100000);  // past its deadline counted from the Call(), at 2 s
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_xids.size(), 2u) << "the call was sent again";
    EXPECT_EQ(client_->stats().reconnects, 0u);
    EXPECT_EQ(results_.count(2), 0u);
  });
  ReleaseUntilAnswered(2);
  EXPECT_EQ(Wait(2), "released");
}

// Calls that may not run twice, sent at different times on one connection
// to a server that holds them: the connection opened again at the first
// one's deadline sends both again, and both deadlines start over then, so
// it is opened again once a deadline, not once per call's deadline.
TEST_F(RpcClientTest, ReopensForCallsNotSafeToRepeatComeOnceADeadline) {
  StartServerAndShortDeadlineClient();
  loop_.Start();
  Send("hold", 1, 12);
  usleep(150000);  // half a deadline
  Send("hold", 2, 12);
  usleep(1600000);  // the first call's sends: at 0, 300, 600, ... 1500 ms
  loop_.RunSync([&] {
    const uint32_t first = handler_.seen_xids.at(0);
    const auto sends = std::count(handler_.seen_xids.begin(), handler_.seen_xids.end(), first);
    EXPECT_GE(sends, 4) << "sent again at its deadlines";
    EXPECT_LE(sends, 7) << "opened again at the other call's deadlines too";
    EXPECT_EQ(results_.count(1) + results_.count(2), 0u);
  });
}

// A new connection's source port is never one another connection holds for
// calls that may not run twice: bindresvport binds ports by number, and a
// socket that shared its port before binding could take a held one (both
// SO_REUSEADDR), whose reconnect would then fail.
TEST_F(RpcClientTest, ANewPrivilegedPortIsNeverOneHeldForResends) {
  if (geteuid() != 0) GTEST_SKIP() << "privileged ports need root";
  StartServer();
  // Every privileged port bindresvport may pick, held as a lost connection
  // holds its port (bound, SO_REUSEADDR, not connected).
  std::vector<int> held;
  std::set<uint16_t> held_ports;
  for (uint16_t port = 512; port < 1024; ++port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      held.push_back(fd);
      held_ports.insert(port);
    } else {
      close(fd);
    }
  }
  ASSERT_GT(held_ports.size(), 300u);
  ClientOptions o;
  o.privileged_port = true;
  StartClient(o);
  loop_.Start();
  Send("x", 1);
  EXPECT_EQ(Wait(1), "x");
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_ports.size(), 1u);
    EXPECT_EQ(held_ports.count(handler_.seen_ports[0]), 0u) << handler_.seen_ports[0];
  });
  for (int fd : held) close(fd);
}

// The connection opened again for a call that may not run twice is not a
// loss of the server's making: while the upstream is out (deadlines held),
// the calls on it wait for the server, deadline after deadline, instead of
// failing after a few reopens as "connection lost repeatedly".
TEST_F(RpcClientTest, ReopensForACallNotSafeToRepeatDoNotFailTheCallsOnTheConnection) {
  StartServerAndShortDeadlineClient();
  loop_.RunSync([&] { client_->HoldDeadlines(true); });
  loop_.Start();
  Send("hold", 1, 1);
  Send("hold", 2, 12);
  // Deadlines of 300 ms: six sends (five reopens) take about 1.5 s; more
  // than four reopens failed the calls before.
  bool reopened = false;
  for (int i = 0; i < 400 && !reopened; ++i) {
    usleep(25000);
    loop_.RunSync([&] { reopened = handler_.seen_xids.size() >= 6; });
  }
  EXPECT_TRUE(reopened) << "sent again at each reopen";
  loop_.RunSync([&] {
    EXPECT_EQ(results_.count(1), 0u) << results_[1];
    EXPECT_EQ(results_.count(2), 0u) << results_[2];
  });
  loop_.RunSync([&] { client_->HoldDeadlines(false); });
  ReleaseUntilAnswered(2);
  EXPECT_EQ(Wait(2), "released");
}

// A call that may not run twice, whose bytes the pacer is still letting
// out at its deadline, has not reached the server: it is not "sent" and
// its connection is not opened again (which would throw away what was
// paced out and start it over, deadline after deadline).
TEST_F(RpcClientTest, ACallNotSafeToRepeatStillBeingPacedOutIsNotStartedOver) {
  StartServerAndShortDeadlineClient();
  loop_.Start();
  loop_.RunSync([&] { client_->SetPacingRate(200e3); });
  const std::string big(100000, 'x');  // 0.5 s at the rate: past the 300 ms deadline
  Send(big, 1, 12);
  EXPECT_EQ(Wait(1), big);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.seen_xids.size(), 1u);
    EXPECT_EQ(client_->stats().timeouts, 0u);
  });
}

// While deadlines are held (the upstream is out), such a call is still sent
// again at its deadline: nothing else would (no retransmission, and the
// outage probe waits for calls in flight).
TEST_F(RpcClientTest, ACallNotSafeToRepeatIsSentAgainWhileDeadlinesAreHeld) {
  StartServerAndShortDeadlineClient();
  loop_.RunSync([&] { client_->HoldDeadlines(true); });
  loop_.Start();
  Send("hold", 1, 12);
  size_t seen = 0;
  for (int i = 0; i < 200 && seen < 2; ++i) {
    usleep(10000);
    loop_.RunSync([&] { seen = handler_.seen_xids.size(); });
  }
  ASSERT_GE(seen, 2u) << "not sent again while held";
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.seen_xids[1], handler_.seen_xids[0]);
    EXPECT_EQ(handler_.seen_ports[1], handler_.seen_ports[0]);
    EXPECT_EQ(results_.count(1), 0u);
  });
}

TEST_F(RpcClientTest, CallThatKeepsLosingItsConnectionFails) {
  StartServer();
  StartClient(ClientOptions{});
  loop_.Start();
  Send("drop-always", 1);
  EXPECT_NE(Wait(1).find("connection lost repeatedly"), std::string::npos);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.seen_xids.size(), static_cast<size_t>(kMaxConnectionLosses + 1));
    EXPECT_EQ(client_->pending(), 0u);
  });
  Send("after", 2);  // the connection is usable again
  EXPECT_EQ(Wait(2), "after");
}

// However many connects fail meanwhile (the link or the server down for a
// while), such a call keeps its connection's source port: from another, the
// server's duplicate request cache would not know it when it is sent again.
TEST_F(RpcClientTest, ACallNotSafeToRepeatKeepsItsPortThroughManyFailedConnects) {
  StartServer();
  const uint16_t port = port_;
  ClientOptions o;
  o.repeatable = NotTwelve;
  StartClient(o, std::chrono::milliseconds(20), std::chrono::milliseconds(20));
  loop_.Start();
  Send("drop-and-stop", 1, 12);
  usleep(300000);  // about a dozen connects, refused
  loop_.RunSync([&] {
    EXPECT_GT(client_->stats().reconnects, static_cast<uint64_t>(kSourcePortAttempts));
    ASSERT_TRUE(server_->Listen(*ResolveAddress("127.0.0.1", port)).ok());
  });
  EXPECT_EQ(Wait(1), "drop-and-stop");
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_ports.size(), 2u);
    EXPECT_EQ(handler_.seen_ports[1], handler_.seen_ports[0]) << "sent again from another port";
  });
}

TEST_F(RpcClientTest, ReconnectKeepsItsSourcePortThroughAFailedConnect) {
  StartServer();
  const uint16_t port = port_;
  StartClient(ClientOptions{}, std::chrono::milliseconds(200), std::chrono::milliseconds(200));
  loop_.Start();
  Send("before", 1);
  EXPECT_EQ(Wait(1), "before");
  // The server goes away: the reconnect 200 ms later is refused; the next,
  // 200 ms after that, finds it back.
  loop_.RunSync([&] { server_.reset(); });
  usleep(300000);
  loop_.RunSync([&] { StartServer(port); });
  Send("after", 2);
  EXPECT_EQ(Wait(2), "after");
  loop_.RunSync([&] {
    ASSERT_EQ(handler_.seen_ports.size(), 2u);
    EXPECT_EQ(handler_.seen_ports[0], handler_.seen_ports[1]);
    EXPECT_GE(client_->stats().reconnects, 2u);
  });
}

// The upstream cannot be reached. Calls wait in the client's queue and, not
// answered within upstream.call_timeout_ms, fail with a timeout (the NFS
// client gets NFS3ERR_JUKEBOX and retries). They are then gone from the
// pending calls; were their XIDs to stay in the send queue until a
// connection comes up (RpcClient::Pump returns before popping them), Call(),
// which compares that queue with upstream.max_queued, would refuse every new
// call once max_queued calls had timed out, although none waits, and
// the nfsedge_upstream_queued gauge (RpcClient::queued()) reports calls
// that no longer exist. docs/config.md: max_queued bounds "calls waiting
// for a slot". Calls that timed out leave the queue.
TEST_F(RpcClientTest, CallsThatTimedOutNoLongerCountAgainstTheQueueBound) {
  StartServer();
  loop_.RunSync([&] { server_.reset(); });  // nothing listens: connects are refused
  ClientOptions o;
  o.max_queued = 2;
  o.timeout = std::chrono::milliseconds(150);
  StartClient(o, std::chrono::milliseconds(20), std::chrono::milliseconds(50));
  loop_.Start();
  Send("a", 1);
  Send("b", 2);
  EXPECT_NE(Wait(1).find("deadline"), std::string::npos) << results_[1];
  EXPECT_NE(Wait(2).find("deadline"), std::string::npos) << results_[2];
  loop_.RunSync([&] {
    EXPECT_EQ(client_->pending(), 0u);
    EXPECT_EQ(client_->queued(), 0u) << "calls that timed out still count as queued";
  });
  // Nothing waits: a new call is queued, not refused.
  Send("c", 3);
  EXPECT_EQ(Wait(3).find("refused"), std::string::npos) << Wait(3);
}

TEST_F(RpcClientTest, ConnectsOnceTheServerComesUp) {
  // Reserve a port, then close it so the first connects are refused.
  StartServer();
  uint16_t port = port_;
  loop_.RunSync([&] { server_.reset(); });
  StartClient(ClientOptions{});
  loop_.Start();
  Send("early", 1);
  usleep(100000);
  loop_.RunSync([&] { StartServer(port); });
  EXPECT_EQ(Wait(1), "early");
}

// A server whose accept queue is full drops the client's SYNs (as a path
// that is down does): the connect is abandoned after connect_timeout and
// made again, so the server is found soon after it can take it, not at
// the kernel's next SYN retransmission (at 7 s here: linear ones at 1, 2,
// 3, 4 and 5 s on kernels with tcp_syn_linear_timeouts, at 1, 3 and 7 s
// on older ones).
TEST_F(RpcClientTest, AConnectTheServerDoesNotAnswerIsMadeAgain) {
  // A listener that takes one connection and never accepts it: its queue
  // is full, further SYNs are dropped.
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  SockAddr any = *ResolveAddress("127.0.0.1", 0);
  ASSERT_EQ(bind(listener, any.get(), any.len), 0);
  ASSERT_EQ(listen(listener, 0), 0);
  SockAddr bound;
  bound.len = sizeof(bound.ss);
  ASSERT_EQ(getsockname(listener, bound.get(), &bound.len), 0);
  port_ = bound.port();
  int filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(filler, bound.get(), bound.len), 0);
  ClientOptions o;
  o.connect_timeout = std::chrono::milliseconds(300);
  StartClient(o);
  loop_.Start();
  Send("early", 1);
  usleep(5500000);  // the kernel's SYN retransmissions so far are dropped too
  // The server can take connections now (on the same port).
  close(filler);
  close(listener);
  loop_.RunSync([&] { StartServer(bound.port()); });
  const auto up = std::chrono::steady_clock::now();
  EXPECT_EQ(Wait(1), "early");
  EXPECT_LT(std::chrono::steady_clock::now() - up, std::chrono::milliseconds(1000))
      << "connected only at the kernel's next SYN retransmission (7 s after the first)";
}

// A server that closes each connection as soon as it is made (one at its
// connection limit; in TLS 1.3 one refusing the client's certificate after
// the client's handshake is done): the connection came up but never carried
// a reply, so the delay before the next attempt keeps growing, as for a
// connect that fails. (It went back to reconnect_min at every connect: ten
// reconnects a second for as long as it lasted.)
TEST_F(RpcClientTest, AServerThatDropsEveryConnectionIsTriedWithAGrowingDelay) {
  ServerOptions full;
  full.max_connections = 0;
  server_ = std::make_unique<RpcServer>(loop_.base(), full, &handler_);
  handler_.server = server_.get();
  StatusOr<uint16_t> p = server_->Listen(*ResolveAddress("127.0.0.1", 0));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  port_ = *p;
  // 10, 20, 40, 80, 160, 320, 640, ... ms: about 7 attempts in 1.2 s, where
  // a delay of 10 ms each time makes over 50.
  StartClient(ClientOptions{}, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  loop_.Start();
  usleep(1200000);
  uint64_t reconnects = 0;
  loop_.RunSync([&] { reconnects = client_->stats().reconnects; });
  EXPECT_GE(reconnects, 3u);
  EXPECT_LE(reconnects, 12u);

  // A connection that carries a reply is a good one: after its loss the
  // delay starts again from reconnect_min.
  loop_.RunSync([&] {
    server_->SetLimits(ServerOptions{});
  });
  Send("good", 1);
  EXPECT_EQ(Wait(1), "good");
  Send("drop-once", 2);
  const auto lost = std::chrono::steady_clock::now();
  EXPECT_EQ(Wait(2), "drop-once");
  EXPECT_LT(std::chrono::steady_clock::now() - lost, std::chrono::milliseconds(600))
      << "the reconnect after a good connection waited the grown delay";
}

TEST_F(RpcClientTest, SetLimitsSendsWhatAHigherCapAdmits) {
  StartServer();
  ClientOptions o;
  o.max_in_flight = 1;
  StartClient(o);
  loop_.Start();
  for (int i = 0; i < 4; ++i) Send("hold", i);
  WaitHeld(1);
  loop_.RunSync([&] { EXPECT_EQ(handler_.held.size(), 1u); });
  ClientOptions more;
  more.max_in_flight = 3;
  more.max_queued = 1;
  loop_.RunSync([&] { client_->SetLimits(more); });
  WaitHeld(3);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.held.size(), 3u);
    EXPECT_EQ(client_->queued(), 1u);
  });
  Send("beyond the new queue bound", 9);
  EXPECT_NE(Wait(9).find("refused"), std::string::npos);
  ReleaseAll();
  EXPECT_EQ(Wait(0), "released");
}

TEST_F(RpcClientTest, InFlightIsCappedAndQueueIsBounded) {
  StartServer();
  ClientOptions o;
  o.max_in_flight = 2;
  o.max_queued = 3;
  StartClient(o);
  loop_.Start();
  for (int i = 0; i < 5; ++i) Send("hold", i);
  WaitHeld(2);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.held.size(), 2u);  // only two on the wire
    EXPECT_EQ(client_->in_flight(), 2u);
    EXPECT_EQ(client_->queued(), 3u);
  });
  Send("one too many", 9);
  EXPECT_NE(Wait(9).find("refused"), std::string::npos);
  ReleaseAll();
  EXPECT_EQ(Wait(0), "released");
}

}  // namespace
}  // namespace nfsedge
