// RPC-over-TLS (RFC 9289): the AUTH_TLS probe's encoding, and RpcClient
// against RpcServer over loopback with certificates made by the openssl CLI
// (tests/tools/make_test_certs.sh): upgrade, wrong CA, wrong name, server
// without TLS, mutual TLS.
#include "rpc/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>

#include "rpc/rpc_client.h"
#include "rpc/rpc_server.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

TEST(TlsProbeTest, ProbeIsANullCallWithAuthTls) {
  std::string probe = EncodeTlsProbe(42, 100003, 3);
  ParsedCall p = ParseCall(probe);
  ASSERT_EQ(p.error, CallError::kNone);
  EXPECT_EQ(p.header.xid, 42u);
  EXPECT_EQ(p.header.prog, 100003u);
  EXPECT_EQ(p.header.vers, 3u);
  EXPECT_EQ(p.header.proc, 0u);
  EXPECT_EQ(p.header.cred.flavor, 7u);
  EXPECT_TRUE(p.header.cred.body.empty());
  EXPECT_EQ(p.header.verf.flavor, kAuthNone);
  EXPECT_EQ(p.args_offset, probe.size());
  EXPECT_TRUE(IsTlsProbe(p.header));
  CallHeader other = p.header;
  other.proc = 1;
  EXPECT_FALSE(IsTlsProbe(other));
  other = p.header;
  other.cred.flavor = kAuthSys;
  EXPECT_FALSE(IsTlsProbe(other));
}

TEST(TlsProbeTest, StartTlsReplyCarriesTheVerifier) {
  std::string reply = EncodeStartTlsReply(9);
  // xid, REPLY, MSG_ACCEPTED, verifier AUTH_NONE "STARTTLS", SUCCESS.
  std::string expected;
  XdrWriter w(&expected);
  for (uint32_t v : {9u, 1u, 0u, 0u, 8u}) w.WriteU32(v);
  w.WriteFixed("STARTTLS");
  w.WriteU32(0);
  EXPECT_EQ(reply, expected);
  EXPECT_TRUE(CheckStartTlsReply(reply, 9).ok());
  EXPECT_FALSE(CheckStartTlsReply(reply, 10).ok());  // another xid
}

TEST(TlsProbeTest, OtherAnswersAreRefusals) {
  EXPECT_FALSE(CheckStartTlsReply(EncodeAcceptedReply(5, kSuccess), 5).ok());  // no verifier
  Status denied = CheckStartTlsReply(EncodeAuthErrorReply(5, kAuthBadCred), 5);
  EXPECT_FALSE(denied.ok());
  EXPECT_NE(denied.message().find("does not offer TLS"), std::string::npos) << denied.message();
  EXPECT_FALSE(CheckStartTlsReply(EncodeAcceptedReply(5, kProcUnavail), 5).ok());
  std::string truncated = EncodeStartTlsReply(5);
  truncated.resize(20);
  EXPECT_FALSE(CheckStartTlsReply(truncated, 5).ok());
  EXPECT_FALSE(CheckStartTlsReply("", 5).ok());
}

// Echoes arguments, prefixed with "tls:" iff the call came over TLS.
class EchoHandler : public CallHandler {
 public:
  void HandleCall(std::unique_ptr<IncomingCall> call) override {
    calls++;
    call->ReplySuccess((call->tls() ? "tls:" : "plain:") + std::string(call->args()));
  }
  int calls = 0;
};

class TlsLoopbackTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/nfsedge-tls-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::string cmd = "sh " NFSEDGE_SOURCE_DIR "/tests/tools/make_test_certs.sh " + dir_;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  static void TearDownTestSuite() {
    std::string cmd = "rm -rf " + dir_;
    (void)std::system(cmd.c_str());
  }
  static std::string File(const char* name) { return dir_ + "/" + name; }

  void StartServer(bool tls, const std::string& client_ca = "") {
    ServerOptions so;
    if (tls) {
      StatusOr<SslCtxPtr> ctx =
          MakeServerTlsContext({File("server.pem"), File("server.key"), client_ca});
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      so.tls = *ctx;
    }
    server_ = std::make_unique<RpcServer>(loop_.base(), so, &handler_);
    StatusOr<uint16_t> p = server_->Listen(*ResolveAddress("127.0.0.1", 0));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    port_ = *p;
  }
  void StartClient(TlsClientConfig tc) {
    ClientOptions o;
    o.server = *ResolveAddress("127.0.0.1", port_);
    o.reconnect_min = std::chrono::milliseconds(10);
    o.reconnect_max = std::chrono::milliseconds(50);
    o.timeout = std::chrono::seconds(2);
    StatusOr<SslCtxPtr> ctx = MakeClientTlsContext(tc);
    ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
    o.tls = *ctx;
    o.tls_server_name = tc.server_name;
    client_ = std::make_unique<RpcClient>(loop_.base(), o);
    client_->Start();
  }
  void TearDown() override {
    loop_.RunSync([this] {
      client_.reset();
      server_.reset();
    });
  }
  // Sends one call and returns its result (or the error).
  std::string Call(const std::string& args) {
    std::string out;
    loop_.RunSync([&] {
      Status s = client_->Call(1, 1, 1, OpaqueAuth{}, args, [&out](StatusOr<RpcReply> r) {
        out = r.ok() ? std::string(r->results()) : "error: " + r.status().ToString();
      });
      if (!s.ok()) out = "refused: " + s.ToString();
    });
    for (int i = 0; i < 500; ++i) {
      std::string got;
      loop_.RunSync([&] { got = out; });
      if (!got.empty()) return got;
      usleep(10000);
    }
    return "(no result)";
  }

  static std::string dir_;
  LoopThread loop_;
  EchoHandler handler_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcClient> client_;
  uint16_t port_ = 0;
};
std::string TlsLoopbackTest::dir_;

TEST_F(TlsLoopbackTest, CallsFlowInsideTls) {
  StartServer(true);
  StartClient({File("ca.pem"), "nfsedge-upstream", "", ""});
  loop_.Start();
  EXPECT_EQ(Call("hello"), "tls:hello");
  std::string big(300000, 'x');
  EXPECT_EQ(Call(big), "tls:" + big);
  loop_.RunSync([&] {
    EXPECT_EQ(server_->stats().tls_upgrades, 1u);
    EXPECT_EQ(client_->connections_up(), 1);
    // The replies went (the TLS filter encrypts them as they are added):
    // none still counts against max_held_call_bytes.
    EXPECT_EQ(server_->held_call_bytes(), 0u);
  });
}

TEST_F(TlsLoopbackTest, IpAddressNameIsChecked) {
  StartServer(true);
  StartClient({File("ca.pem"), "127.0.0.1", "", ""});
  loop_.Start();
  EXPECT_EQ(Call("ip"), "tls:ip");
}

TEST_F(TlsLoopbackTest, WrongCaIsRefusedAndRetried) {
  StartServer(true);
  StartClient({File("other-ca.pem"), "nfsedge-upstream", "", ""});
  loop_.Start();
  EXPECT_NE(Call("x").find("error"), std::string::npos);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.calls, 0);
    EXPECT_EQ(client_->connections_up(), 0);
    EXPECT_GE(client_->stats().reconnects, 2u);  // retried, never plaintext
  });
}

TEST_F(TlsLoopbackTest, WrongNameIsRefused) {
  StartServer(true);
  StartClient({File("ca.pem"), "some-other-host", "", ""});
  loop_.Start();
  EXPECT_NE(Call("x").find("error"), std::string::npos);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.calls, 0);
    EXPECT_EQ(client_->connections_up(), 0);
  });
}

TEST_F(TlsLoopbackTest, ServerWithoutTlsIsNotUsedInPlaintext) {
  StartServer(false);
  StartClient({File("ca.pem"), "nfsedge-upstream", "", ""});
  loop_.Start();
  EXPECT_NE(Call("x").find("error"), std::string::npos);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.calls, 0);
    EXPECT_GE(server_->stats().auth_errors, 1u);  // the probe got AUTH_BADCRED
  });
}

// A peer that accepts TCP and never answers the AUTH_TLS probe (or a path
// that drops what follows the connect) does not hold the connection for
// ever: the setup times out (at the call timeout, 2 s here) and the
// connection is tried again.
TEST_F(TlsLoopbackTest, APeerThatNeverAnswersTheProbeIsTriedAgain) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 8), 0);  // the kernel accepts; nothing ever reads
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  port_ = ntohs(a.sin_port);
  StartClient({File("ca.pem"), "127.0.0.1", "", ""});
  loop_.Start();
  uint64_t reconnects = 0;
  for (int i = 0; i < 60 && reconnects == 0; ++i) {
    usleep(100000);
    loop_.RunSync([&] { reconnects = client_->stats().reconnects; });
  }
  EXPECT_GE(reconnects, 1u) << "the connection waits for the probe's reply for ever";
  close(listener);
}

TEST_F(TlsLoopbackTest, MutualTlsNeedsAClientCertificate) {
  StartServer(true, File("ca.pem"));
  StartClient({File("ca.pem"), "nfsedge-upstream", "", ""});
  loop_.Start();
  EXPECT_NE(Call("x").find("error"), std::string::npos);
  loop_.RunSync([&] {
    EXPECT_EQ(handler_.calls, 0);
    EXPECT_GE(server_->stats().tls_failures, 1u);
    client_.reset();
  });
  loop_.RunSync([&] {
    StartClient({File("ca.pem"), "nfsedge-upstream", File("client.pem"), File("client.key")});
  });
  EXPECT_EQ(Call("mtls"), "tls:mtls");
}

// RFC 9289: the client offers ALPN "sunrpc" and the server selects it; a
// client that offers only another protocol is refused. A handshake over a
// pair of memory BIOs, with the contexts nfsedge builds.
TEST_F(TlsLoopbackTest, AlpnSunrpcIsOfferedAndSelected) {
  StatusOr<SslCtxPtr> server = MakeServerTlsContext({File("server.pem"), File("server.key"), ""});
  StatusOr<SslCtxPtr> client = MakeClientTlsContext({File("ca.pem"), "nfsedge-upstream", "", ""});
  ASSERT_TRUE(server.ok() && client.ok());
  // Returns true iff the handshake completes; `c` and `s` stay for checks.
  auto handshake = [&](SSL* c, SSL* s) {
    BIO *cb = nullptr, *sb = nullptr;
    BIO_new_bio_pair(&cb, 0, &sb, 0);
    SSL_set_bio(c, cb, cb);
    SSL_set_bio(s, sb, sb);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    for (int i = 0; i < 20; ++i) {
      const int rc = SSL_do_handshake(c), rs = SSL_do_handshake(s);
      if (rc == 1 && rs == 1) return true;
      if ((rc != 1 && SSL_get_error(c, rc) != SSL_ERROR_WANT_READ) ||
          (rs != 1 && SSL_get_error(s, rs) != SSL_ERROR_WANT_READ)) {
        return false;
      }
    }
    return false;
  };
  SSL* c = NewClientSsl(client->get(), "nfsedge-upstream");
  SSL* s = SSL_new(server->get());
  ASSERT_TRUE(handshake(c, s)) << TlsErrorText();
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(c, &proto, &len);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(proto), len), "sunrpc");
  EXPECT_TRUE(AlpnAcceptable(c));
  SSL_free(c);
  SSL_free(s);
  // A client offering only another protocol.
  c = NewClientSsl(client->get(), "nfsedge-upstream");
  static const unsigned char kH2[] = {2, 'h', '2'};
  ASSERT_EQ(SSL_set_alpn_protos(c, kH2, sizeof(kH2)), 0);
  s = SSL_new(server->get());
  EXPECT_FALSE(handshake(c, s)) << "the server took a client that offered no \"sunrpc\"";
  ERR_clear_error();
  SSL_free(c);
  SSL_free(s);
}

TEST(TlsContextTest, BadFilesAreClearErrors) {
  StatusOr<SslCtxPtr> c = MakeClientTlsContext({"/nonexistent/ca.pem", "x", "", ""});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/ca.pem"), std::string::npos);
  StatusOr<SslCtxPtr> s = MakeServerTlsContext({"/nonexistent/cert.pem", "/nonexistent/k", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("/nonexistent/cert.pem"), std::string::npos);
}

}  // namespace
}  // namespace nfsedge
