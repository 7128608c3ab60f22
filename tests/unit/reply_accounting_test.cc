// The upstream scheduler's accounting of replies: a call sent more than once
// gives no round trip (Karn's rule: which transmission its reply answers is
// not known) though its bytes count as delivered, and a READ answered short
// (at end of file) counts the bytes its reply carried, not its count.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "proxy/scheduler.h"
#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

using std::chrono::milliseconds;

constexpr uint32_t kNfs = 100003;
constexpr uint32_t kGetattr = 1, kRead = 6, kWrite = 7;

// ---------------------------------------------------------------------------
// The scheduler over a real RpcClient and a loopback server.

// Answers a call the second time its XID arrives; calls whose arguments are
// "once" are answered at once. The first transmission is held (as if its
// reply were lost) or, with `drop`, its connection is closed (the client
// reconnects and sends the call again).
class SecondTransmissionHandler : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    if (call->args() != "once" && ++seen_[call->xid()] == 1) {
      if (drop) {
        server->CloseAll();
      } else {
        held.push_back(std::move(call));
      }
      return;
    }
    call->ReplySuccess("attributes");
  }
  RpcServer* server = nullptr;
  bool drop = false;
  std::vector<std::unique_ptr<IncomingCall>> held;

 private:
  std::map<uint32_t, int> seen_;
};

class KarnOverRpcClientTest : public ::testing::Test {
 protected:
  // Starts the server, a client that retransmits after `rto` (0: never) and
  // a scheduler whose two lanes are that client.
  void Start(bool drop, Duration rto) {
    handler_.drop = drop;
    server_ = std::make_unique<RpcServer>(loop_.base(), ServerOptions{}, &handler_);
    handler_.server = server_.get();
    StatusOr<uint16_t> port = server_->Listen(*ResolveAddress("127.0.0.1", 0));
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    ClientOptions o;
    o.server = *ResolveAddress("127.0.0.1", *port);
    o.reconnect_min = milliseconds(10);
    o.reconnect_max = milliseconds(50);
    client_ = std::make_unique<RpcClient>(loop_.base(), o);
    client_->SetRetransmitTimeout(rto);
    scheduler_ =
        std::make_unique<UpstreamScheduler>(clock_, *client_, *client_, SchedulerOptions{});
    client_->Start();
    loop_.Start();
  }
  void TearDown() override {
    loop_.RunSync([this] {
      handler_.held.clear();
      scheduler_.reset();
      client_.reset();
      server_.reset();
    });
  }
  // Makes an interactive GETATTR with `args` and waits for its reply.
  // Returns the transmissions the transport counted, or nullopt if the call
  // failed or no reply came.
  std::optional<uint32_t> Getattr(const std::string& args) {
    auto replied = std::make_shared<std::promise<std::optional<uint32_t>>>();
    std::future<std::optional<uint32_t>> reply = replied->get_future();
    loop_.RunSync([&] {
      Status s = scheduler_->Caller(CallClass::kInteractive)
                     .Call(kNfs, 3, kGetattr, OpaqueAuth{}, args, [replied](StatusOr<RpcReply> r) {
                       replied->set_value(r.ok() ? std::optional<uint32_t>(r->transmissions)
                                                 : std::nullopt);
                     });
      if (!s.ok()) replied->set_value(std::nullopt);
    });
    if (reply.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::nullopt;
    return reply.get();
  }
  CongestionStats Congestion() {
    CongestionStats c;
    loop_.RunSync([&] { c = scheduler_->stats().congestion; });
    return c;
  }
  // After a reply to a call sent twice: no round trip was taken from it, and
  // its bytes left the window. Then a call sent once gives one.
  void ExpectOnlyTheCallSentOnceIsSampled() {
    CongestionStats c = Congestion();
    EXPECT_EQ(c.samples, 0u) << "a round trip of " << c.last_rtt.count()
                             << " ns was sampled from a call sent twice";
    EXPECT_EQ(c.base_rtt, Duration::zero());
    EXPECT_EQ(c.last_rtt, Duration::zero());
    EXPECT_EQ(c.srtt, Duration::zero());
    EXPECT_EQ(c.in_flight, 0u);
    std::optional<uint32_t> once = Getattr("once");
    ASSERT_TRUE(once.has_value()) << "no reply";
    EXPECT_EQ(*once, 1u);
    c = Congestion();
    EXPECT_EQ(c.samples, 1u);
    EXPECT_GT(c.base_rtt, Duration::zero());
    EXPECT_EQ(c.base_rtt, c.last_rtt);
    EXPECT_EQ(c.in_flight, 0u);
  }

  SystemClock clock_;
  LoopThread loop_;
  SecondTransmissionHandler handler_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
  std::unique_ptr<UpstreamScheduler> scheduler_;
};

// The reply comes right after the retransmission: timed from it, the round
// trip would be far shorter than the path's (the call waited 50 ms or more
// for it), and would become the base RTT.
TEST_F(KarnOverRpcClientTest, ACallRetransmittedAfterItsTimeoutGivesNoRoundTrip) {
  Start(/*drop=*/false, milliseconds(50));
  std::optional<uint32_t> transmissions = Getattr("retransmitted");
  ASSERT_TRUE(transmissions.has_value()) << "no reply";
  EXPECT_EQ(*transmissions, 2u);
  loop_.RunSync([&] { EXPECT_EQ(client_->stats().retransmits, 1u); });
  ExpectOnlyTheCallSentOnceIsSampled();
}

TEST_F(KarnOverRpcClientTest, ACallResentAfterAReconnectGivesNoRoundTrip) {
  Start(/*drop=*/true, Duration::zero());
  std::optional<uint32_t> transmissions = Getattr("resent");
  ASSERT_TRUE(transmissions.has_value()) << "no reply";
  EXPECT_EQ(*transmissions, 2u);
  loop_.RunSync([&] { EXPECT_EQ(client_->stats().resent, 1u); });
  ExpectOnlyTheCallSentOnceIsSampled();
}

// ---------------------------------------------------------------------------
// The scheduler over FakeUpstream lanes (test_loop.h) whose calls the test
// answers itself, with a fake clock.

class ReplyAccountingTest : public ::testing::Test {
 protected:
  ReplyAccountingTest()
      : base_(event_base_new()),
        meta_(base_.get()),
        bulk_(base_.get()),
        scheduler_(clock_, meta_, bulk_, Unlimited()) {}

  // The window does not hold any call back here.
  static SchedulerOptions Unlimited() {
    SchedulerOptions o;
    o.congestion.initial_window = 64 << 20;
    return o;
  }

  // Returns a SUCCESS reply record carrying `results`.
  static std::string Record(const std::string& results) {
    return EncodeAcceptedReply(1, kSuccess) + results;
  }
  // Makes a client data call; returns the bytes the scheduler counted it at
  // (what it added to the bytes in flight).
  // With `expected`, the call is made with CallExpecting.
  uint64_t Call(uint32_t proc, const std::string& args,
                std::optional<uint64_t> expected = std::nullopt) {
    const uint64_t before = scheduler_.stats().congestion.in_flight;
    RpcCaller& caller = scheduler_.Caller(CallClass::kClientData);
    auto ignore = [](StatusOr<RpcReply>) {};
    EXPECT_TRUE((expected ? caller.CallExpecting(kNfs, 3, proc, OpaqueAuth{}, args, *expected,
                                                 ignore)
                          : caller.Call(kNfs, 3, proc, OpaqueAuth{}, args, ignore))
                    .ok());
    return scheduler_.stats().congestion.in_flight - before;
  }
  // Answers bulk call `i` with `results`, as a transport that wrote the call
  // `transmissions` times, the last at `sent_at`.
  void Answer(size_t i, const std::string& results, uint32_t transmissions, MonoTime sent_at) {
    const std::string record = Record(results);
    RpcReply reply{*ParseReply(record), record};
    reply.sent_at = std::chrono::time_point_cast<std::chrono::steady_clock::duration>(sent_at);
    reply.transmissions = transmissions;
    ReplyCallback done = std::move(bulk_.calls[i].done);  // (done may grow calls)
    done(std::move(reply));
  }

  FakeClock clock_;
  EventBasePtr base_;  // the lanes' loop: never run, the test answers
  FakeUpstream meta_, bulk_;
  UpstreamScheduler scheduler_;
};

// READ3args ending in a count of 32768 (the scheduler reads the count that
// ends the arguments).
std::string ReadArgs() {
  std::string args(40, '\0');
  args[38] = static_cast<char>(0x80);
  return args;
}

// WRITE "a" is sent at 0 and again (same XID) at 90 ms; its reply comes at
// 100 ms: 10 ms after the retransmission, or 100 ms after the first. WRITE
// "b", sent once at 10 ms, is answered at 110 ms.
TEST_F(ReplyAccountingTest, ARetransmittedCallCountsItsBytesButGivesNoSample) {
  const MonoTime start = clock_.MonoNow();
  const std::string args(1000, 'w');
  const uint64_t a = Call(kWrite, args);
  clock_.Advance(milliseconds(10));
  const uint64_t b = Call(kWrite, args);
  ASSERT_EQ(bulk_.calls.size(), 2u);

  clock_.Advance(milliseconds(90));
  Answer(0, "", 2, start + milliseconds(90));
  CongestionStats c = scheduler_.stats().congestion;
  EXPECT_EQ(c.samples, 0u);
  EXPECT_EQ(c.base_rtt, Duration::zero()) << "timed from the retransmission";
  EXPECT_EQ(c.last_rtt, Duration::zero());
  EXPECT_EQ(c.delivery_rate, 0.0);
  EXPECT_EQ(c.rounds, 0u);
  EXPECT_EQ(c.in_flight, b);

  clock_.Advance(milliseconds(10));
  Answer(1, "", 1, start + milliseconds(10));
  c = scheduler_.stats().congestion;
  EXPECT_EQ(c.samples, 1u);
  EXPECT_EQ(c.base_rtt, Duration(milliseconds(100)));
  EXPECT_EQ(c.last_rtt, Duration(milliseconds(100)));
  EXPECT_EQ(c.rounds, 1u);
  EXPECT_EQ(c.in_flight, 0u);
  // "b"'s sample: the bytes answered since it was sent, "a"'s included,
  // over the 110 ms since the link was last idle (when "a" was sent).
  EXPECT_DOUBLE_EQ(c.delivery_rate, static_cast<double>(a + b) / 0.110);
}

// A WRITE sent at 0 stays in flight, so that the READs are not sent on an
// idle link and give only BBR's sample: the bytes answered since the call
// was sent, over the time since the link was last idle (here 0).
// A READ sent at 10 ms is answered short at 60 ms (100 bytes, at end of
// file); a READ sent at 20 ms is answered in full at 120 ms (its reply
// larger than its count by the headers).
TEST_F(ReplyAccountingTest, AShortReadCountsTheBytesItsReplyCarried) {
  const MonoTime start = clock_.MonoNow();
  const uint64_t write = Call(kWrite, std::string(1000, 'w'));
  clock_.Advance(milliseconds(10));
  const uint64_t short_read = Call(kRead, ReadArgs());
  clock_.Advance(milliseconds(10));
  const uint64_t full_read = Call(kRead, ReadArgs());
  ASSERT_EQ(bulk_.calls.size(), 3u);
  ASSERT_GT(short_read, 32768u);

  clock_.Advance(milliseconds(40));
  const std::string at_eof(100, 'r');
  Answer(1, at_eof, 1, start + milliseconds(10));
  clock_.Advance(milliseconds(60));
  Answer(2, std::string(32768 + 100, 'r'), 1, start + milliseconds(20));

  // The short READ: its own bytes (all it was counted at but the count) and
  // its reply's size on the wire. The full one: what it was counted at,
  // never more.
  const uint64_t short_answered = short_read - 32768 + Record(at_eof).size();
  const CongestionStats c = scheduler_.stats().congestion;
  EXPECT_EQ(c.samples, 2u);
  EXPECT_EQ(c.in_flight, write);
  // The larger sample, the full READ's: both READs answered over 120 ms.
  EXPECT_DOUBLE_EQ(c.delivery_rate, static_cast<double>(short_answered + full_read) / 0.120)
      << "the short READ counted as " << short_read << " bytes, its reply as " << short_answered;
}

// A READ whose caller knows the file ends 1000 bytes into it (a tree walk's
// READ of a small file, asked in whole 32 KiB blocks) is counted in flight
// at its own bytes and those 1000, not at its count: a window counted in
// counts would hold a few such READs where the link carries dozens. A hint
// above the count changes nothing.
TEST_F(ReplyAccountingTest, AReadToAKnownEndIsCountedAtTheBytesItWillBring) {
  const uint64_t full = Call(kRead, ReadArgs());
  const uint64_t own = full - 32768;
  EXPECT_EQ(Call(kRead, ReadArgs(), 1000), own + 1000);
  EXPECT_EQ(Call(kRead, ReadArgs(), 0), own);
  EXPECT_EQ(Call(kRead, ReadArgs(), 1 << 20), full);
}

}  // namespace
}  // namespace nfsedge
