// The client-facing RPC server against hostile peers, over real loopback
// sockets: a client that pipelines calls and never reads the replies (in
// plaintext and inside TLS), one that closes in the middle of a reply, and
// a process out of file descriptors.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rpc/record_marking.h"
#include "rpc/rpc_server.h"
#include "rpc/tls.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

constexpr uint32_t kProgram = 100003;
constexpr size_t kBulkReplyBytes = 64 * 1024;

// Answers every call at once with `results` of `reply_bytes` bytes. Used on
// the loop thread only.
class BulkReplier : public CallHandler {
 public:
  explicit BulkReplier(size_t reply_bytes) : results_(reply_bytes, 'r') {}
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    calls++;
    call->ReplySuccess(results_);
  }
  size_t calls = 0;

 private:
  std::string results_;
};

// Keeps every call unanswered until the test answers it. Used on the loop
// thread only.
class Holder : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override { held.push_back(std::move(call)); }
  std::vector<std::unique_ptr<IncomingCall>> held;
};

// A client socket with a small receive buffer (no autotuning), so that
// replies it does not read soon stay on the server's side.
class SlowReader {
 public:
  explicit SlowReader(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int small = 16 * 1024;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~SlowReader() {
    ssl_.reset();
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return fd_ >= 0; }

  // Sends the AUTH_TLS probe and, once it is answered, does the TLS
  // handshake (as a client of `ctx` that expects `name`): from then on
  // Send() and ReadRecord() go through TLS. Returns true iff it succeeded.
  bool StartTls(SSL_CTX* ctx, const std::string& name) {
    std::optional<std::string> r;
    if (!Send(EncodeRecord(EncodeTlsProbe(1, kProgram, 3))) || !(r = ReadRecord()) ||
        !CheckStartTlsReply(*r, 1).ok()) {
      return false;
    }
    ssl_.reset(NewClientSsl(ctx, name));
    if (!ssl_) return false;
    // Counts the TLS records received (their 5-byte headers).
    SSL_set_msg_callback(ssl_.get(), [](int write_p, int, int content_type, const void*, size_t,
                                        SSL*, void* arg) {
      if (!write_p && content_type == SSL3_RT_HEADER) ++*static_cast<size_t*>(arg);
    });
    SSL_set_msg_callback_arg(ssl_.get(), &records_in_);
    return SSL_set_fd(ssl_.get(), fd_) == 1 && SSL_connect(ssl_.get()) == 1;
  }
  // TLS records received so far.
  size_t records_in() const { return records_in_; }

  // Sends `bytes` in full (blocking; call from a thread of its own when the
  // server may stop reading, unless in TLS).
  bool Send(const std::string& bytes) {
    for (size_t off = 0; off < bytes.size();) {
      const size_t left = bytes.size() - off;
      ssize_t n = ssl_ ? SSL_write(ssl_.get(), bytes.data() + off, static_cast<int>(left))
                       : send(fd_, bytes.data() + off, left, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Returns the next reply record iff one arrives within 5 s.
  std::optional<std::string> ReadRecord() {
    for (;;) {
      std::string record;
      if (reader_.Next(&buffer_, &record) == RecordReader::Result::kRecord) return record;
      pollfd p{fd_, POLLIN, 0};
      if (!(ssl_ && SSL_pending(ssl_.get()) > 0) && poll(&p, 1, 5000) <= 0) return std::nullopt;
      char buf[65536];
      ssize_t n = ssl_ ? SSL_read(ssl_.get(), buf, sizeof(buf)) : recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

  // Returns true iff the peer closes the connection within `ms` (what it
  // sends before, a TLS alert say, is read and dropped).
  bool ClosedWithin(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[4096];
      if (recv(fd_, buf, sizeof(buf), 0) <= 0) return true;
    }
  }

  // Closes the socket with unread data in it (the peer sees a reset).
  void Abort() {
    ssl_.reset();
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd_);
    fd_ = -1;
  }

 private:
  struct SslFree {
    void operator()(SSL* s) const { SSL_free(s); }
  };
  int fd_ = -1;
  std::unique_ptr<SSL, SslFree> ssl_;
  RecordReader reader_{64 << 20};
  std::string buffer_;
  size_t records_in_ = 0;
};

class HostilePeerTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_.Start(); }
  void TearDown() override {
    loop_.RunSync([this] { server_.reset(); });
  }

  void StartServer(const ServerOptions& so, CallHandler* handler) {
    loop_.RunSync([&] {
      server_ = std::make_unique<RpcServer>(loop_.base(), so, handler);
      port_ = *server_->Listen(*ResolveAddress("127.0.0.1", 0));
    });
  }

  // Returns `count` once it has not changed for 300 ms (at most 10 s).
  size_t Settled(const std::function<size_t()>& count) {
    size_t last = count();
    for (int i = 0; i < 40; ++i) {
      usleep(300000);
      size_t now = count();
      if (now == last) return now;
      last = now;
    }
    return last;
  }

  void PipelineWithoutReading(SlowReader& c, BulkReplier& handler, uint32_t calls,
                              bool from_thread);

  LoopThread loop_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

// Sends `calls` NULL calls on `c` (whose replies carry 64 KiB each) without
// reading a reply until the server has stopped taking calls; then reads
// every reply.
void HostilePeerTest::PipelineWithoutReading(SlowReader& c, BulkReplier& handler, uint32_t calls,
                                             bool from_thread) {
  std::string bytes;
  for (uint32_t xid = 1; xid <= calls; ++xid) {
    bytes += EncodeRecord(MakeCall(xid, kProgram, 3, 0, ""));
  }
  std::thread sender;
  if (from_thread) {
    sender = std::thread([&] { EXPECT_TRUE(c.Send(bytes)); });
  } else {
    ASSERT_TRUE(c.Send(bytes));
  }
  // The client reads nothing: what the kernel's buffers hold aside (a few
  // MiB), the replies must wait in the proxy, which stops taking calls.
  size_t answered = Settled([&] {
    size_t n;
    loop_.RunSync([&] { n = handler.calls; });
    return n;
  });
  EXPECT_LT(answered * kBulkReplyBytes, 16u << 20) << answered << " calls answered, unread";
  // Once the client reads, every call is answered, in order: nothing lost.
  for (uint32_t xid = 1; xid <= calls; ++xid) {
    std::optional<std::string> r = c.ReadRecord();
    ASSERT_TRUE(r) << xid;
    ASSERT_EQ(ParseReply(*r)->xid, xid);
  }
  if (sender.joinable()) sender.join();
}

TEST_F(HostilePeerTest, UnreadRepliesStopTheReadingOfCalls) {
  BulkReplier handler(kBulkReplyBytes);
  ServerOptions so;
  so.max_record_size = 128 * 1024;
  StartServer(so, &handler);
  SlowReader c(port_);
  ASSERT_TRUE(c.connected());
  PipelineWithoutReading(c, handler, 1000, /*from_thread=*/true);
}

// Makes a test CA and server certificate, and TLS contexts for a server
// with it and a client that trusts the CA.
void MakeTlsContexts(SslCtxPtr* server, SslCtxPtr* client) {
  char tmpl[] = "/tmp/nfsedge-hostile-tls-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string make = "sh " NFSEDGE_SOURCE_DIR "/tests/tools/make_test_certs.sh " + dir;
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  StatusOr<SslCtxPtr> server_ctx =
      MakeServerTlsContext({dir + "/server.pem", dir + "/server.key", ""});
  StatusOr<SslCtxPtr> client_ctx = MakeClientTlsContext({dir + "/ca.pem", "", "", ""});
  (void)std::system(("rm -rf " + dir).c_str());
  ASSERT_TRUE(server_ctx.ok() && client_ctx.ok());
  *server = *server_ctx;
  *client = *client_ctx;
}

TEST_F(HostilePeerTest, UnreadRepliesStopTheReadingOfCallsInsideTls) {
  SslCtxPtr server_ctx, client_ctx;
  ASSERT_NO_FATAL_FAILURE(MakeTlsContexts(&server_ctx, &client_ctx));
  BulkReplier handler(kBulkReplyBytes);
  ServerOptions so;
  so.max_record_size = 128 * 1024;
  so.tls = server_ctx;
  StartServer(so, &handler);
  SlowReader c(port_);
  ASSERT_TRUE(c.StartTls(client_ctx.get(), "nfsedge-upstream"));
  // 44 KB of calls fit in the kernel's buffers: sent from this thread.
  PipelineWithoutReading(c, handler, 1000, /*from_thread=*/false);
}

// Each reply inside TLS is one TLS record, its record mark with it: not a
// record of four bytes (and its 22 bytes of TLS overhead, and a seal) and
// another for the reply.
TEST_F(HostilePeerTest, AReplyInsideTlsIsOneTlsRecord) {
  SslCtxPtr server_ctx, client_ctx;
  ASSERT_NO_FATAL_FAILURE(MakeTlsContexts(&server_ctx, &client_ctx));
  BulkReplier handler(100);
  ServerOptions so;
  so.tls = server_ctx;
  StartServer(so, &handler);
  SlowReader c(port_);
  ASSERT_TRUE(c.StartTls(client_ctx.get(), "nfsedge-upstream"));
  ASSERT_TRUE(c.Send(EncodeRecord(MakeCall(1, kProgram, 3, 0, ""))));
  ASSERT_TRUE(c.ReadRecord());  // after the handshake's own records and tickets
  const size_t before = c.records_in();
  for (uint32_t xid = 2; xid <= 21; ++xid) {
    ASSERT_TRUE(c.Send(EncodeRecord(MakeCall(xid, kProgram, 3, 0, ""))));
    std::optional<std::string> r = c.ReadRecord();
    ASSERT_TRUE(r);
    ASSERT_EQ(ParseReply(*r)->xid, xid);
  }
  EXPECT_EQ(c.records_in() - before, 20u) << "TLS records for 20 replies";
}

// A client that sends bytes that are not TLS right behind the AUTH_TLS
// probe, in the same segment: the handshake fails as the server starts it.
// The failure is counted and the connection closed, not left open until
// the idle timeout (for ever with none).
TEST_F(HostilePeerTest, NotTlsBehindTheProbeFailsTheHandshakeAtOnce) {
  SslCtxPtr server_ctx, client_ctx;
  ASSERT_NO_FATAL_FAILURE(MakeTlsContexts(&server_ctx, &client_ctx));
  BulkReplier handler(16);
  ServerOptions so;
  so.tls = server_ctx;
  so.idle_timeout = Duration::zero();
  StartServer(so, &handler);
  SlowReader c(port_);
  ASSERT_TRUE(c.connected());
  const std::string not_tls(200, 'G');
  ASSERT_TRUE(c.Send(EncodeRecord(EncodeTlsProbe(1, kProgram, 3)) + not_tls));
  EXPECT_TRUE(c.ClosedWithin(3000)) << "the server closed the connection";
  size_t failures = 0, connections = 1;
  for (int i = 0; i < 100 && connections > 0; ++i) {
    loop_.RunSync([&] {
      failures = server_->stats().tls_failures;
      connections = server_->connection_count();
    });
    if (connections > 0) usleep(10000);
  }
  EXPECT_EQ(failures, 1u);
  EXPECT_EQ(connections, 0u);
}

TEST_F(HostilePeerTest, ClientClosingMidReplyClosesOnlyThatConnection) {
  BulkReplier handler(kBulkReplyBytes);
  ServerOptions so;
  so.max_record_size = 128 * 1024;
  StartServer(so, &handler);
  auto c = std::make_unique<SlowReader>(port_);
  std::string bytes;
  for (uint32_t xid = 1; xid <= 20; ++xid) bytes += EncodeRecord(MakeCall(xid, kProgram, 3, 0, ""));
  ASSERT_TRUE(c->Send(bytes));
  ASSERT_TRUE(c->ReadRecord());  // one reply taken, the rest on their way
  c->Abort();
  size_t open = Settled([&] {
    size_t n;
    loop_.RunSync([&] { n = server_->connection_count(); });
    return n;
  });
  EXPECT_EQ(open, 0u);
  SlowReader next(port_);
  ASSERT_TRUE(next.Send(EncodeRecord(MakeCall(7, kProgram, 3, 0, ""))));
  std::optional<std::string> r = next.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 7u);
}

// Out of file descriptors, accept() fails: the listener pauses (a few times
// a second, not a busy loop) and takes the waiting client once descriptors
// are back.
TEST_F(HostilePeerTest, OutOfDescriptorsTheListenerPausesThenAccepts) {
  BulkReplier handler(16);
  StartServer(ServerOptions{}, &handler);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Every descriptor taken but one, for the client's socket.
  std::vector<int> held;
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd; (fd = open("/dev/null", O_RDONLY)) >= 0;) held.push_back(fd);
  ASSERT_FALSE(held.empty());
  close(held.back());
  held.pop_back();
  SlowReader c(port_);
  const bool connected = c.connected();
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  for (int fd : held) close(fd);
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_TRUE(connected);
  uint64_t paused = 0;
  loop_.RunSync([&] { paused = server_->stats().accept_paused; });
  EXPECT_GE(paused, 1u) << "accept() failed: the listener pauses";
  EXPECT_LE(paused, 4u) << "at most one failure per 250 ms pause";
  ASSERT_TRUE(c.Send(EncodeRecord(MakeCall(9, kProgram, 3, 0, ""))));
  std::optional<std::string> r = c.ReadRecord();
  ASSERT_TRUE(r) << "accepted once descriptors are back";
  EXPECT_EQ(ParseReply(*r)->xid, 9u);
}

// A client that sends its calls and closes, again and again: the calls of
// its closed connections, still being worked on, count against it. Past
// as many as its open connections may have (max_connections_per_client x
// max_calls_per_connection) its connections are not read, so it cannot
// make the proxy hold its calls without bound.
TEST_F(HostilePeerTest, CallsOfClosedConnectionsHoldTheClientsNextConnection) {
  Holder handler;
  ServerOptions so;
  so.max_calls_per_connection = 4;
  so.max_connections_per_client = 1;
  StartServer(so, &handler);
  auto open = [&] {
    return Settled([&] {
      size_t n;
      loop_.RunSync([&] { n = server_->connection_count(); });
      return n;
    });
  };
  auto held = [&] {
    size_t n;
    loop_.RunSync([&] { n = handler.held.size(); });
    return n;
  };
  // Two connections, each closed with two calls unanswered (a connection
  // with 4 in flight is not read, and would not see its client close).
  for (uint32_t round = 0; round < 2; ++round) {
    ASSERT_EQ(open(), 0u);
    SlowReader c(port_);
    std::string bytes;
    for (uint32_t xid = 1; xid <= 2; ++xid) bytes += EncodeRecord(MakeCall(xid, kProgram, 3, 0, ""));
    ASSERT_TRUE(c.Send(bytes));
    ASSERT_EQ(Settled(held), 2u * (round + 1));
  }
  ASSERT_EQ(open(), 0u);
  SlowReader next(port_);
  ASSERT_TRUE(next.Send(EncodeRecord(MakeCall(9, kProgram, 3, 0, ""))));
  EXPECT_EQ(Settled(held), 4u) << "read while 4 calls of a closed connection are held";
  loop_.RunSync([&] { handler.held.front()->ReplySuccess(""); });  // into the void
  ASSERT_EQ(Settled(held), 5u) << "read once one of them is answered";
  loop_.RunSync([&] { handler.held.back()->ReplySuccess(""); });
  std::optional<std::string> r = next.ReadRecord();
  ASSERT_TRUE(r);
  EXPECT_EQ(ParseReply(*r)->xid, 9u);
  loop_.RunSync([&] { handler.held.clear(); });  // released unanswered
}

}  // namespace
}  // namespace nfsedge
