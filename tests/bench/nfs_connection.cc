#include "nfs_connection.h"

// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include <fcntl.h>
#include <unistd.h>

namespace nfsedge::bench {

struct NfsConnection::Pending {
  NfsConnection* conn;
  Callback cb;
  Decode decode;
};

std::string NfsReply::Describe() const {
  if (!rpc_ok) return "RPC: " + rpc_error;
  if (status == 0) return "OK";
  return harness::NfsStatName(status);
}

StatusOr<std::unique_ptr<NfsConnection>> NfsConnection::Connect(
    const harness::TcpEndpoint& endpoint, harness::Millis timeout) {
  auto fd = harness::ConnectTcp(endpoint, timeout);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<NfsConnection> c(new NfsConnection());
  c->rpc_ = rpc_init_context();
  if (c->rpc_ == nullptr) {
    close(*fd);
    return Status::Error("rpc_init_context failed");
  }
  // libnfs takes the connected socket over and closes it with the context.
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL, 0) | O_NONBLOCK);
  rpc_set_fd(c->rpc_, *fd);
  rpc_set_auth(c->rpc_, libnfs_authunix_create("nfsedge-bench", 0, 0, 0, nullptr));
  return c;
}

NfsConnection::~NfsConnection() {
  // Destroying the context runs the callbacks of calls in flight (cancelled);
  // they see no connection and only free themselves.
  for (Pending* p : pending_) p->conn = nullptr;
  if (rpc_ != nullptr) rpc_destroy_context(rpc_);
}

int NfsConnection::fd() const { return rpc_get_fd(rpc_); }
short NfsConnection::events() const { return static_cast<short>(rpc_which_events(rpc_)); }

bool NfsConnection::Service(short revents) {
  if (failed_) return false;
  if (rpc_service(rpc_, revents) < 0) {
    failed_ = true;
    const char* e = rpc_get_error(rpc_);
    error_ = std::string("connection failed: ") + (e ? e : "?");
    return false;
  }
  return true;
}

void NfsConnection::OnReply(rpc_context* /*rpc*/, int status, void* data, void* private_data) {
  std::unique_ptr<Pending> p(static_cast<Pending*>(private_data));
  NfsConnection* conn = p->conn;
  if (conn == nullptr) return;  // The connection is being destroyed.
  conn->pending_.erase(p.get());
  --conn->in_flight_;
  ++conn->replies_;
  NfsReply reply;
  if (status == RPC_STATUS_SUCCESS) {
    reply.rpc_ok = true;
    p->decode(data, &reply);
  } else if (status == RPC_STATUS_ERROR && data != nullptr) {
    reply.rpc_error = static_cast<const char*>(data);
  } else {
    reply.rpc_error = status == RPC_STATUS_CANCEL ? "cancelled" : "failed or timed out";
  }
  p->cb(reply);
}

Status NfsConnection::Queue(const char* name, Callback cb, Decode decode,
                            const std::function<int(void*)>& queue) {
  if (failed_) return Status::Error(std::string(name) + ": " + error_);
  auto* p = new Pending{this, std::move(cb), std::move(decode)};
  if (queue(p) != 0) {
    delete p;
    const char* e = rpc_get_error(rpc_);
    return Status::Error(std::string("cannot queue ") + name + ": " + (e ? e : "?"));
  }
  pending_.insert(p);
  ++in_flight_;
  counts_.Add(name);
  return Status::OK();
}

}  // namespace nfsedge::bench
