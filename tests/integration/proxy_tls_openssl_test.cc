// proxy_tls_openssl_test: `openssl s_client` against nfsedge's RPC-over-TLS
// (RFC 9289) listener, to show what the server refuses and what a client
// checks. s_client cannot send the AUTH_TLS probe that must precede the
// handshake, so it connects through a TlsProbeRelay (tls_probe_relay.h) that
// sends the probe, checks the STARTTLS reply and then relays the handshake.
//
// Each refusal is asserted in s_client's output and exit status and, where
// nfsedge sees it, in nfsedge's log line for that very connection
// ("client 127.0.0.1:<relay's port>: TLS handshake failed: ..."); each has a
// positive control that differs from it in one setting only:
//   - TLS 1.2 only: refused (nfsedge is TLS 1.3 only);
//   - a wrong name or an untrusted CA on the client side fails verification,
//     the right name with the right CA verifies;
//   - mutual TLS (tls_client_ca_file): no client certificate, or one from
//     another CA, is refused; client.pem is accepted.
// Without the relay (no probe) s_client gets no session at all.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "harness/raw_rpc.h"
#include "tls_chain_fixture.h"
#include "tls_probe_relay.h"

namespace nfsedge::itest {
namespace {

// What s_client prints when nfsedge refuses the handshake: nfsedge closes
// the connection without a TLS alert, the reason is in its own log.
constexpr const char* kClosedByServer = "unexpected eof while reading";
// s_client options: trust ca.pem, the test CA, and stop if verification fails.
constexpr const char* kTrustingCa = "-CAfile {certs}/ca.pem -verify_return_error";

// What one `openssl s_client` run printed (stdout and stderr) and its exit
// status.
struct SClientRun {
  std::string out;
  int exit_code = -1;
};

class OpensslClientTest : public TlsChainTest {
 protected:
  void TearDown() override {
    if (HasFailure() && relay_) std::cerr << "relay errors:\n" << relay_->errors();
    relay_.reset();
    TlsChainTest::TearDown();
  }

  // Starts the probe relay toward nfsedge's NFS port `target`.
  void StartRelay(uint16_t target) {
    auto r = TlsProbeRelay::Start(target);
    ASSERT_TRUE(r.ok()) << r.status().message();
    relay_ = std::move(r).value();
  }
  // Runs `openssl s_client -connect 127.0.0.1:<port> <args>` with the
  // certificate files named relative to certs_ ("{certs}" in `args`), and
  // `input` on its standard input, held open one second more: a TLS 1.3
  // server refuses a client certificate after the client's side of the
  // handshake is done, and s_client must still be reading to see it.
  SClientRun SClient(uint16_t port, std::string args, const std::string& input = "") {
    for (size_t at; (at = args.find("{certs}")) != std::string::npos;) {
      args.replace(at, 7, certs_);
    }
    const std::string in = bed_->dir().path() + "/s_client.in";
    EXPECT_TRUE(WriteFile(in, input).ok());
    const std::string cmd = "(cat " + in + "; sleep 1) | timeout 10 openssl s_client -connect " +
                            "127.0.0.1:" + std::to_string(port) + " " + args + " 2>&1";
    SClientRun run;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) {
      ADD_FAILURE() << "popen: " << cmd;
      return run;
    }
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof(buf), p)) run.out.append(buf, n);
    const int status = pclose(p);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }
  // Runs s_client through the relay; returns the local port of the relay's
  // connection to nfsedge (nfsedge logs the client as 127.0.0.1:<port>) in
  // *upstream_port, 0 (with a failure) if the probe was not answered.
  SClientRun SClientThroughRelay(const std::string& args, uint16_t* upstream_port,
                                 const std::string& input = "") {
    const size_t before = relay_->upgraded_ports().size();
    SClientRun run = SClient(relay_->port(), args, input);
    const std::vector<uint16_t> ports = relay_->upgraded_ports();
    *upstream_port = ports.size() == before + 1 ? ports.back() : 0;
    EXPECT_NE(*upstream_port, 0) << "the relay's AUTH_TLS probe failed: " << relay_->errors();
    return run;
  }
  // Returns the text nfsedge logs about the relay's connection `port`.
  static std::string Client(uint16_t port, const std::string& what) {
    return "client 127.0.0.1:" + std::to_string(port) + ": " + what;
  }
  // Returns "" iff nfsedge's log at `path` shows, within a few seconds, the
  // handshake of the relay's connection `port` failed for `reason` and that
  // connection never established TLS; else what the log shows instead.
  static std::string RefusalMissing(const std::string& path, uint16_t port,
                                    const std::string& reason) {
    const std::string failed = Client(port, "TLS handshake failed: ");
    if (!LogShows(path, failed)) return "no line \"" + failed + "...\"";
    const std::string log = ReadFile(path);
    const size_t at = log.find(failed);
    const std::string line = log.substr(at, log.find('\n', at) - at);
    if (line.find(reason) == std::string::npos) return "not for " + reason + ": " + line;
    if (log.find(Client(port, "TLS established")) != std::string::npos) {
      return "TLS established before: " + line;
    }
    return "";
  }
  // Starts the mutual TLS inner instance and the relay toward it.
  void StartMutualInnerAndRelay() {
    Status s = StartMutualInner();
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_NO_FATAL_FAILURE(StartRelay(kMutualNfsPort));
  }
  // Expects s_client (`run`, the relay's connection `port`) refused by the
  // nfsedge logging to `log` for `reason`.
  static void ExpectRefusedByServer(const SClientRun& run, const std::string& log, uint16_t port,
                                    const std::string& reason) {
    EXPECT_NE(run.exit_code, 0) << run.out;
    EXPECT_NE(run.out.find(kClosedByServer), std::string::npos) << run.out;
    EXPECT_EQ(RefusalMissing(log, port, reason), "");
  }
  // Makes other-client.pem/.key, a client certificate from other-ca.pem.
  void MakeClientCertFromOtherCa() {
    const std::string cmd =
        "cd " + certs_ +
        " && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1"
        " -out other-client.key 2>/dev/null"
        " && openssl req -new -key other-client.key -out other-client.csr"
        " -subj /CN=nfsedge-other-client"
        " && printf 'extendedKeyUsage=clientAuth\\n' > other-client.ext"
        " && openssl x509 -req -in other-client.csr -CA other-ca.pem -CAkey other-ca.key"
        " -CAcreateserial -out other-client.pem -days 2 -extfile other-client.ext 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }

  std::unique_ptr<TlsProbeRelay> relay_;
};

TEST_F(OpensslClientTest, WithoutTheProbeGetsNoSession) {
  // A TLS ClientHello where an RPC record is expected is a malformed record:
  // the connection is closed, no certificate is ever sent.
  SClientRun run = SClient(bed_->proxy()->nfs_port(), "-tls1_3");
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.find("BEGIN CERTIFICATE"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("no peer certificate available"), std::string::npos) << run.out;
}

// The positive control of the cases below: through the relay, s_client with
// the right CA and name completes a TLS 1.3 handshake, and an RPC NULL call
// sent inside TLS is answered.
TEST_F(OpensslClientTest, ThroughTheProbeRelayCompletesATls13Handshake) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(bed_->proxy()->nfs_port()));
  harness::RpcCall null_call;
  null_call.xid = 0x4e554c4c;  // "NULL"
  uint16_t port = 0;
  SClientRun run =
      SClientThroughRelay(std::string(kTrustingCa) + " -verify_hostname nfsedge-upstream", &port,
                          harness::FrameRecord(harness::EncodeCall(null_call)));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("New, TLSv1.3"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("Verify return code: 0 (ok)"), std::string::npos) << run.out;
  // The reply: xid, REPLY, MSG_ACCEPTED, AUTH_NONE verifier, SUCCESS.
  const std::string reply_header("NULL\0\0\0\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24);
  EXPECT_NE(run.out.find(reply_header), std::string::npos) << run.out;
  EXPECT_TRUE(LogShows(bed_->proxy()->log_path(), Client(port, "TLS established")));
}

TEST_F(OpensslClientTest, Tls12IsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(bed_->proxy()->nfs_port()));
  uint16_t port = 0;
  SClientRun run = SClientThroughRelay("-tls1_2 -CAfile {certs}/ca.pem", &port);
  ExpectRefusedByServer(run, bed_->proxy()->log_path(), port, "unsupported protocol");
  EXPECT_NE(run.out.find("no peer certificate available"), std::string::npos) << run.out;
}

// What a client checks: the name in the server's certificate (DNS
// nfsedge-upstream, IP 127.0.0.1) and the CA that signed it.
TEST_F(OpensslClientTest, WrongNameFailsVerificationRightNameVerifies) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(bed_->proxy()->nfs_port()));
  uint16_t port = 0;
  SClientRun wrong =
      SClientThroughRelay(std::string(kTrustingCa) + " -verify_hostname wrong.example", &port);
  EXPECT_NE(wrong.exit_code, 0) << wrong.out;
  EXPECT_NE(wrong.out.find("Verify return code: 62 (hostname mismatch)"), std::string::npos)
      << wrong.out;
  // The client tells why it gives up (a TLS alert); nfsedge logs it.
  EXPECT_EQ(RefusalMissing(bed_->proxy()->log_path(), port, "alert bad certificate"), "");

  for (const char* right : {"-verify_hostname nfsedge-upstream", "-verify_ip 127.0.0.1"}) {
    SCOPED_TRACE(right);
    SClientRun ok = SClientThroughRelay(std::string(kTrustingCa) + " " + right, &port);
    EXPECT_EQ(ok.exit_code, 0) << ok.out;
    EXPECT_NE(ok.out.find("Verify return code: 0 (ok)"), std::string::npos) << ok.out;
    EXPECT_TRUE(LogShows(bed_->proxy()->log_path(), Client(port, "TLS established")));
  }
}

TEST_F(OpensslClientTest, UntrustedCaFailsVerification) {
  ASSERT_NO_FATAL_FAILURE(StartRelay(bed_->proxy()->nfs_port()));
  uint16_t port = 0;
  SClientRun run = SClientThroughRelay(
      "-CAfile {certs}/other-ca.pem -verify_hostname nfsedge-upstream -verify_return_error", &port);
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("Verify return code: 20 (unable to get local issuer certificate)"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(RefusalMissing(bed_->proxy()->log_path(), port, "alert unknown ca"), "");
}

// Mutual TLS: the second inner instance requires a client certificate from
// ca.pem.
TEST_F(OpensslClientTest, MutualTlsRefusesAClientWithoutACertificate) {
  ASSERT_NO_FATAL_FAILURE(StartMutualInnerAndRelay());
  uint16_t port = 0;
  SClientRun run = SClientThroughRelay(kTrustingCa, &port);
  ExpectRefusedByServer(run, mutual_->log_path(), port, "peer did not return a certificate");
}

TEST_F(OpensslClientTest, MutualTlsRefusesACertificateFromAnotherCa) {
  ASSERT_NO_FATAL_FAILURE(MakeClientCertFromOtherCa());
  ASSERT_NO_FATAL_FAILURE(StartMutualInnerAndRelay());
  uint16_t port = 0;
  SClientRun run = SClientThroughRelay(
      std::string(kTrustingCa) + " -cert {certs}/other-client.pem -key {certs}/other-client.key",
      &port);
  ExpectRefusedByServer(run, mutual_->log_path(), port,
                        "certificate verification failed: unable to get local issuer");
}

// The positive control of the two above.
TEST_F(OpensslClientTest, MutualTlsAcceptsTheClientCertificate) {
  ASSERT_NO_FATAL_FAILURE(StartMutualInnerAndRelay());
  uint16_t port = 0;
  SClientRun run = SClientThroughRelay(
      std::string(kTrustingCa) + " -cert {certs}/client.pem -key {certs}/client.key", &port);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("Verify return code: 0 (ok)"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find(kClosedByServer), std::string::npos) << run.out;
  EXPECT_TRUE(LogShows(mutual_->log_path(), Client(port, "TLS established")));
  EXPECT_EQ(ReadFile(mutual_->log_path()).find(Client(port, "TLS handshake failed")),
            std::string::npos);
}

}  // namespace
}  // namespace nfsedge::itest
