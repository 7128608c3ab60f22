// RPC-over-TLS (RFC 9289): the AUTH_TLS probe and OpenSSL contexts.
//
// A client that wants TLS sends a NULL call whose credential has flavor
// AUTH_TLS (7) and an empty body. A server able to do TLS answers it with an
// accepted, SUCCESS reply whose verifier has flavor AUTH_NONE and the 8 bytes
// "STARTTLS"; then the client starts a TLS handshake on the same TCP
// connection and RPC records flow inside TLS. nfsedge insists on TLS 1.3.
//
// Thread-safety: free functions are pure; an SSL_CTX is shared read-only by
// the connections of one event loop after it is built.
#ifndef NFSEDGE_RPC_TLS_H_
#define NFSEDGE_RPC_TLS_H_

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rpc/rpc_message.h"
#include "rpc/status.h"

namespace nfsedge {

inline constexpr uint32_t kAuthTls = 7;
inline constexpr std::string_view kStartTls = "STARTTLS";

// Returns the AUTH_TLS probe (NULL procedure of `prog`/`vers`) as a call
// message without record mark.
std::string EncodeTlsProbe(uint32_t xid, uint32_t prog, uint32_t vers);

// Returns true iff `h` is an AUTH_TLS probe: procedure 0 with an AUTH_TLS
// credential.
bool IsTlsProbe(const CallHeader& h);

// Returns the server's answer to a probe: MSG_ACCEPTED, verifier AUTH_NONE
// "STARTTLS", SUCCESS (no results).
std::string EncodeStartTlsReply(uint32_t xid);

// Returns OK iff `record` is a reply to call `xid` that accepts the probe
// (the verifier above); otherwise an error saying what the server answered.
Status CheckStartTlsReply(std::string_view record, uint32_t xid);

struct SslCtxDeleter {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using SslCtxPtr = std::shared_ptr<SSL_CTX>;

struct TlsClientConfig {
  std::string ca_file;      // trusted CAs for the server's certificate (required)
  std::string server_name;  // name the certificate must carry; also sent as SNI
  std::string cert_file;    // optional client certificate (PEM)
  std::string key_file;     // its key (PEM); required with cert_file
};

struct TlsServerConfig {
  std::string cert_file;       // server certificate chain (PEM)
  std::string key_file;        // its key (PEM)
  std::string client_ca_file;  // if set, clients must present a certificate from these CAs
};

// Builds a TLS 1.3-only client context that verifies the peer and offers
// ALPN "sunrpc" (RFC 9289). Returns an error naming the file and OpenSSL's
// reason iff a file cannot be loaded.
StatusOr<SslCtxPtr> MakeClientTlsContext(const TlsClientConfig& config);
// Builds a TLS 1.3-only server context that selects ALPN "sunrpc" when the
// client offers it, refuses a client that offers only other protocols, and
// goes on without ALPN with a client that offers none.
StatusOr<SslCtxPtr> MakeServerTlsContext(const TlsServerConfig& config);
// Returns true iff the handshake on `ssl` selected ALPN "sunrpc", or none (a
// peer without ALPN): false for another protocol.
bool AlpnAcceptable(const SSL* ssl);

// Returns a new client SSL for `ctx` that checks the peer's certificate for
// `server_name` (DNS name or IP address) and sends it as SNI when it is a
// DNS name; nullptr on allocation failure.
SSL* NewClientSsl(SSL_CTX* ctx, const std::string& server_name);
// Puts a TLS filter with `ssl` over `underlying` (BEV_OPT_CLOSE_ON_FREE: the
// filter frees both when it goes). Returns null if it cannot be made (out
// of memory), `underlying` still the caller's: `ssl` is then never freed
// twice, whether the libevent 2.1 release frees it on that path or not (if
// not, it is left, not freed).
bufferevent* NewTlsFilter(event_base* base, bufferevent* underlying, SSL* ssl,
                          bufferevent_ssl_state state);

// Returns OpenSSL's queued errors as text (and clears the queue); `ssl`, if
// given, adds its certificate verification result when that failed.
std::string TlsErrorText(SSL* ssl = nullptr);

// Returns why the TLS bufferevent `bev` (bufferevent_openssl) failed: its
// OpenSSL errors and the certificate verification result.
std::string TlsBuffereventError(bufferevent* bev);

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_TLS_H_
