// The metrics endpoint (proxy/metrics_http.h) over real loopback sockets:
// its answers to good and bad requests, its bound on connections and the
// deadline that closes a client too slow to send its request.
#include "proxy/metrics_http.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_loop.h"

namespace nfsedge {
namespace {

using namespace std::chrono_literals;

class MetricsHttpTest : public ::testing::Test {
 protected:
  void Start(MetricsHttpOptions options = {}) {
    registry_.Add([](MetricsWriter& w) { w.Gauge("nfsedge_test_value", "A value.", {}, 42); });
    loop_.Start();
    loop_.RunSync([&] {
      server_ = std::make_unique<MetricsHttpServer>(loop_.base(), registry_, &stats_, options);
      StatusOr<uint16_t> p = server_->Listen("127.0.0.1:0");
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      port_ = *p;
    });
  }
  void TearDown() override {
    loop_.RunSync([&] { server_.reset(); });
  }
  // Sends `request` on a new connection; returns the whole response.
  std::string Ask(const std::string& request) {
    BlockingClient c(port_);
    EXPECT_TRUE(c.connected());
    c.SendRaw(request);
    std::string r;
    EXPECT_TRUE(c.WaitClosed(5s, &r)) << "not closed after its reply";
    return r;
  }
  MetricsHttpStats Stats() {
    MetricsHttpStats s;
    loop_.RunSync([&] { s = stats_; });
    return s;
  }
  size_t Open() {
    size_t n = 0;
    loop_.RunSync([&] { n = server_->connections(); });
    return n;
  }

  MetricsRegistry registry_;
  MetricsHttpStats stats_;
  LoopThread loop_;
  std::unique_ptr<MetricsHttpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(MetricsHttpTest, GetAndHeadOfMetrics) {
  Start();
  const std::string get = Ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(get.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << get;
  EXPECT_NE(get.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << get;
  EXPECT_NE(get.find("\r\n\r\n# HELP nfsedge_test_value A value.\n"), std::string::npos) << get;
  EXPECT_NE(get.find("\nnfsedge_test_value 42\n"), std::string::npos) << get;
  const size_t body = get.find("\r\n\r\n") + 4;
  EXPECT_NE(get.find("Content-Length: " + std::to_string(get.size() - body) + "\r\n"),
            std::string::npos)
      << get;

  const std::string head = Ask("HEAD /metrics?x=1 HTTP/1.0\n\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
  EXPECT_EQ(head.find("nfsedge_test_value"), std::string::npos) << "no body for HEAD: " << head;
  EXPECT_EQ(Stats().scrapes, 2u);
}

TEST_F(MetricsHttpTest, OtherPathsMethodsAndGarbageGetTheirErrors) {
  Start();
  EXPECT_EQ(Ask("GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
  const std::string post = Ask("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(post.rfind("HTTP/1.1 405 Method Not Allowed\r\n", 0), 0u) << post;
  EXPECT_NE(post.find("Allow: GET, HEAD\r\n"), std::string::npos) << post;
  EXPECT_EQ(Ask("\x16\x03\x01 hello\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u);
  EXPECT_EQ(Ask("GET /metrics\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u);
  const std::string big = Ask("GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(big.rfind("HTTP/1.1 431 ", 0), 0u) << big.substr(0, 100);
  const MetricsHttpStats s = Stats();
  EXPECT_EQ(s.scrapes, 0u);
  EXPECT_EQ(s.bad_requests, 3u);
  for (int i = 0; i < 400 && Open() > 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(Open(), 0u) << "every connection closed after its reply";
}

// A request with a body (or a second request) the server does not read: its
// reply arrives whole, not cut by a reset of the connection.
TEST_F(MetricsHttpTest, BytesLeftUnreadDoNotCutTheReply) {
  Start();
  const std::string r = Ask("GET /metrics HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n" +
                            std::string(100000, 'x'));
  EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_NE(r.find("\nnfsedge_test_value 42\n"), std::string::npos) << r;
}

// Connections past the bound are closed at once; the open ones are closed
// at their deadline if their request never comes whole, and the endpoint
// then answers again.
TEST_F(MetricsHttpTest, ConnectionsAreBoundedAndSlowOnesClosedAtTheDeadline) {
  MetricsHttpOptions o;
  o.max_connections = 3;
  o.deadline = 400ms;
  Start(o);
  // Three clients answered that never close: they hold the three places
  // until a new connection needs one (the oldest goes) or the deadline.
  std::vector<std::unique_ptr<BlockingClient>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<BlockingClient>(port_));
    ASSERT_TRUE(held.back()->connected());
    held.back()->SendRaw("GET /metrics HTTP/1.1\r\n\r\n");
    for (int k = 0; k < 200 && Stats().scrapes < held.size(); ++k) std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(Stats().scrapes, 3u);
  ASSERT_EQ(Open(), 3u);
  EXPECT_EQ(Ask("GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(Stats().displaced, 1u);
  EXPECT_EQ(Stats().refused, 0u);
  std::string sent;

  // They are closed at the deadline; so is a client that never finishes its
  // head.
  for (int i = 0; i < 400 && Open() != 0; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(Open(), 0u);
  BlockingClient slow(port_);
  ASSERT_TRUE(slow.connected());
  slow.SendRaw("GET /met");
  EXPECT_TRUE(slow.WaitClosed(5s, &sent)) << "closed at the deadline";
  EXPECT_EQ(sent, "");
  EXPECT_EQ(Stats().timed_out, 3u) << "the two answered left, and the slow one";
  EXPECT_EQ(Open(), 0u);
  EXPECT_EQ(Ask("GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
}

// Connections that never send a whole request (a port scanner, a stuck
// client) do not shut the scraper out: a new one takes the oldest's place.
TEST_F(MetricsHttpTest, HeadsThatNeverEndGiveWayToAScrape) {
  MetricsHttpOptions o;
  o.max_connections = 3;
  Start(o);
  std::vector<std::unique_ptr<BlockingClient>> slow;
  for (int i = 0; i < 3; ++i) {
    slow.push_back(std::make_unique<BlockingClient>(port_));
    ASSERT_TRUE(slow.back()->connected());
    slow.back()->SendRaw("GET /met");
    for (int k = 0; k < 200 && Open() < slow.size(); ++k) std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(Open(), 3u);
  EXPECT_EQ(Ask("GET /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(Stats().displaced, 1u);
  EXPECT_EQ(Stats().refused, 0u);
  std::string sent;
  EXPECT_TRUE(slow[0]->WaitClosed(2s, &sent)) << "the oldest head gave way";
}

}  // namespace
}  // namespace nfsedge
