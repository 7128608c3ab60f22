// RpcClient's RPC-over-TLS setup (RFC 9289): the STARTTLS probe's reply,
// then the handshake, on one connection.
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>

#include "rpc/log.h"
#include "rpc/rpc_client.h"

namespace nfsedge {

void RpcClient::OnProbeReply(int i) {
  Conn& c = conns_[i];
  std::string record;
  RecordReader::Result r = c.reader->Next(bufferevent_get_input(c.bev.get()), &record);
  if (r == RecordReader::Result::kNeedMore) return;
  Status ok = r == RecordReader::Result::kTooLarge ? ProtocolError("oversized reply to the probe")
                                                   : CheckStartTlsReply(record, c.probe_xid);
  if (!ok.ok()) {
    TlsFailed(i, ok.message());
    return;
  }
  if (evbuffer_get_length(bufferevent_get_input(c.bev.get())) != 0) {
    TlsFailed(i, "bytes after the STARTTLS reply");
    return;
  }
  StartHandshake(i);
}

void RpcClient::TlsFailed(int i, const std::string& why) {
  NFSEDGE_LOG(kWarn) << options_.name << ": TLS to " << options_.server.ToString()
                     << " failed: " << why;
  ConnLost(i, "TLS: " + why);
}

void RpcClient::StartHandshake(int i) {
  Conn& c = conns_[i];
  SSL* ssl = NewClientSsl(options_.tls.get(), options_.tls_server_name);
  if (ssl == nullptr) {
    TlsFailed(i, "SSL_new: " + TlsErrorText());
    return;
  }
  // The filter takes over the TCP bufferevent (and frees it, and the SSL).
  bufferevent* tcp = c.bev.get();
  bufferevent_setcb(tcp, nullptr, nullptr, nullptr, nullptr);
  bufferevent* tls = NewTlsFilter(base_, tcp, ssl, BUFFEREVENT_SSL_CONNECTING);
  if (tls == nullptr) {
    TlsFailed(i, "cannot set up the TLS filter");
    return;
  }
  (void)c.bev.release();
  c.bev.reset(tls);
  bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
  c.reader = std::make_unique<RecordReader>(options_.max_record_size);
  c.state = Conn::State::kHandshaking;
  SetCallbacks(i);
}

}  // namespace nfsedge
