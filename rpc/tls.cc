#include "rpc/tls.h"

#include <arpa/inet.h>
#include <cstring>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "rpc/xdr_codec.h"

namespace nfsedge {

std::string EncodeTlsProbe(uint32_t xid, uint32_t prog, uint32_t vers) {
  CallHeader h;
  h.xid = xid;
  h.prog = prog;
  h.vers = vers;
  h.proc = 0;
  h.cred.flavor = kAuthTls;
  return EncodeCallHeader(h);
}

bool IsTlsProbe(const CallHeader& h) { return h.proc == 0 && h.cred.flavor == kAuthTls; }

std::string EncodeStartTlsReply(uint32_t xid) {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(xid);
  w.WriteU32(kReply);
  w.WriteU32(kMsgAccepted);
  w.WriteU32(kAuthNone);
  w.WriteOpaque(kStartTls);
  w.WriteU32(kSuccess);
  return out;
}

Status CheckStartTlsReply(std::string_view record, uint32_t xid) {
  StatusOr<ReplyHeader> h = ParseReply(record);
  if (!h.ok()) return h.status();
  if (h->xid != xid) return ProtocolError("reply to the TLS probe has another xid");
  if (h->reply_stat == kMsgDenied) {
    return ProtocolError(h->reject_stat == kAuthError
                             ? "server refused AUTH_TLS (auth_stat " +
                                   std::to_string(h->auth_stat) + "): it does not offer TLS"
                             : std::string("server refused the TLS probe (RPC_MISMATCH)"));
  }
  if (h->accept_stat != kSuccess) {
    return ProtocolError("server answered the TLS probe with accept_stat " +
                         std::to_string(h->accept_stat));
  }
  // ParseReply skipped the verifier: read it again.
  XdrReader r(record);
  uint32_t skip, flavor;
  std::string body;
  if (!r.ReadU32(&skip) || !r.ReadU32(&skip) || !r.ReadU32(&skip) || !r.ReadU32(&flavor) ||
      !r.ReadOpaque(&body, kMaxAuthBytes)) {
    return ProtocolError("reply to the TLS probe truncated");
  }
  if (flavor != kAuthNone || body != kStartTls) {
    return ProtocolError("server answered the TLS probe without the STARTTLS verifier");
  }
  return Status::Ok();
}

namespace {

// Returns `ssl`'s failed certificate verification, if any, and the errors
// `next` yields until 0, as text; `fallback` if there is nothing to say.
template <typename NextError>
std::string DescribeTlsFailure(SSL* ssl, NextError next, const char* fallback) {
  std::string out;
  if (ssl != nullptr) {
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
      out = std::string("certificate verification failed: ") + X509_verify_cert_error_string(v);
    }
  }
  while (unsigned long e = next()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace

std::string TlsErrorText(SSL* ssl) {
  return DescribeTlsFailure(ssl, [] { return ERR_get_error(); }, "TLS error");
}

std::string TlsBuffereventError(bufferevent* bev) {
  std::string out =
      DescribeTlsFailure(bufferevent_openssl_get_ssl(bev),
                         [bev] { return bufferevent_get_openssl_error(bev); },
                         "TLS connection closed");
  ERR_clear_error();
  return out;
}

namespace {

StatusOr<SslCtxPtr> NewContext(const SSL_METHOD* method) {
  SslCtxPtr ctx(SSL_CTX_new(method), SslCtxDeleter());
  if (!ctx) return Status(StatusCode::kInternal, "SSL_CTX_new: " + TlsErrorText());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_3_VERSION);
  return ctx;
}

// RFC 9289's ALPN identifier, in the wire form (a length byte, then the name).
constexpr unsigned char kAlpnSunrpc[] = {6, 's', 'u', 'n', 'r', 'p', 'c'};

// The server's choice: "sunrpc" if the client offers it. A client that
// offers other protocols only is refused (no_application_protocol); one
// that offers none goes on without ALPN.
int SelectSunrpc(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                 unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kAlpnSunrpc, sizeof(kAlpnSunrpc), in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

Status LoadCertAndKey(SSL_CTX* ctx, const std::string& cert, const std::string& key) {
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) {
    return InvalidArgument("cannot load certificate " + cert + ": " + TlsErrorText());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return InvalidArgument("cannot load key " + key + ": " + TlsErrorText());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return InvalidArgument("key " + key + " does not match certificate " + cert);
  }
  return Status::Ok();
}

Status LoadCa(SSL_CTX* ctx, const std::string& ca) {
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) {
    return InvalidArgument("cannot load CA file " + ca + ": " + TlsErrorText());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SslCtxPtr> MakeClientTlsContext(const TlsClientConfig& config) {
  StatusOr<SslCtxPtr> ctx = NewContext(TLS_client_method());
  if (!ctx.ok()) return ctx;
  if (config.ca_file.empty()) return InvalidArgument("TLS client needs a CA file");
  Status s = LoadCa(ctx->get(), config.ca_file);
  if (s.ok() && !config.cert_file.empty()) {
    s = LoadCertAndKey(ctx->get(), config.cert_file, config.key_file);
  }
  if (!s.ok()) return s;
  SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER, nullptr);
  // RFC 9289: the client offers ALPN "sunrpc".
  if (SSL_CTX_set_alpn_protos(ctx->get(), kAlpnSunrpc, sizeof(kAlpnSunrpc)) != 0) {
    return Status(StatusCode::kInternal, "cannot set ALPN: " + TlsErrorText());
  }
  return ctx;
}

StatusOr<SslCtxPtr> MakeServerTlsContext(const TlsServerConfig& config) {
  StatusOr<SslCtxPtr> ctx = NewContext(TLS_server_method());
  if (!ctx.ok()) return ctx;
  Status s = LoadCertAndKey(ctx->get(), config.cert_file, config.key_file);
  if (s.ok() && !config.client_ca_file.empty()) {
    s = LoadCa(ctx->get(), config.client_ca_file);
    if (s.ok()) {
      SSL_CTX_set_client_CA_list(ctx->get(), SSL_load_client_CA_file(config.client_ca_file.c_str()));
      SSL_CTX_set_verify(ctx->get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
  }
  if (!s.ok()) return s;
  SSL_CTX_set_alpn_select_cb(ctx->get(), SelectSunrpc, nullptr);
  return ctx;
}

bool AlpnAcceptable(const SSL* ssl) {
  const unsigned char* proto = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl, &proto, &len);
  // None selected: a server without ALPN (tolerated); anything else than
  // "sunrpc" is another protocol.
  return len == 0 || (len == sizeof(kAlpnSunrpc) - 1 &&
                      std::memcmp(proto, kAlpnSunrpc + 1, len) == 0);
}

bufferevent* NewTlsFilter(event_base* base, bufferevent* underlying, SSL* ssl,
                          bufferevent_ssl_state state) {
  // Some releases free `ssl` when the filter cannot be made, some do not:
  // a reference of our own, dropped below, makes either free it once.
  SSL_up_ref(ssl);
  bufferevent* tls =
      bufferevent_openssl_filter_new(base, underlying, ssl, state, BEV_OPT_CLOSE_ON_FREE);
  SSL_free(ssl);
  return tls;
}

SSL* NewClientSsl(SSL_CTX* ctx, const std::string& server_name) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr || server_name.empty()) return ssl;
  in6_addr a6;
  in_addr a4;
  bool is_ip = inet_pton(AF_INET, server_name.c_str(), &a4) == 1 ||
               inet_pton(AF_INET6, server_name.c_str(), &a6) == 1;
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), server_name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, server_name.c_str());
    SSL_set1_host(ssl, server_name.c_str());
  }
  return ssl;
}

}  // namespace nfsedge
