// RawNfs: connection set-up, the synchronous call loop, conversions.
// Procedures are in raw_nfs_ops.cc (NFSv3), raw_nfs_mount.cc (MOUNTv3) and
// raw_nfs_util.cc (multi-call conveniences).

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/raw_nfs_impl.h"

namespace nfsedge::harness {
namespace {

// Lives on the stack of Run() until the callback has fired or the context
// has been torn down (which fires it with an error or cancel status).
struct PendingCall {
  bool done = false;
  bool success = false;
  std::string error;
  const std::function<void(void*)>* on_reply = nullptr;
};

void OnCallDone(rpc_context* /*rpc*/, int status, void* data, void* private_data) {
  auto* p = static_cast<PendingCall*>(private_data);
  if (p->done) return;
  p->done = true;
  if (status == RPC_STATUS_SUCCESS) {
    p->success = true;
    if (*p->on_reply) (*p->on_reply)(data);
  } else if (status == RPC_STATUS_ERROR && data != nullptr) {
    p->error = static_cast<const char*>(data);
  } else {
    p->error = status == RPC_STATUS_CANCEL ? "call cancelled" : "call failed";
  }
}

AUTH* MakeAuth(const Credential& c) {
  std::vector<uint32_t> groups = c.groups;
  return libnfs_authunix_create(c.machine.c_str(), c.uid, c.gid,
                                static_cast<uint32_t>(groups.size()),
                                groups.empty() ? nullptr : groups.data());
}

}  // namespace

RawNfs::Impl::~Impl() {
  if (rpc != nullptr) rpc_destroy_context(rpc);
}

bool RawNfs::Impl::Run(const Issue& issue, const std::function<void(void*)>& on_reply,
                       Millis timeout, std::string* error) {
  if (broken || rpc == nullptr) {
    *error = "not connected (an earlier call failed)";
    return false;
  }
  PendingCall pending;
  pending.on_reply = &on_reply;
  if (issue(rpc, OnCallDone, &pending) != 0) {
    const char* e = rpc_get_error(rpc);
    *error = std::string("could not queue the call: ") + (e ? e : "?");
    return false;
  }
  Deadline deadline(timeout);
  while (!pending.done) {
    if (deadline.Expired()) {
      pending.error = "no reply within " + std::to_string(timeout.count()) + " ms";
      break;
    }
    pollfd pfd{rpc_get_fd(rpc), static_cast<short>(rpc_which_events(rpc)), 0};
    int n = poll(&pfd, 1, deadline.PollTimeoutMs(Millis(100)));
    if (n < 0 && errno != EINTR) {
      pending.error = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
      if (!pending.done) {
        const char* e = rpc_get_error(rpc);
        pending.error = std::string("connection failed: ") + (e ? e : "?");
      }
      break;
    }
  }
  if (!pending.success) {
    // Tear the context down now, while `pending` is alive: libnfs calls the
    // callbacks of calls still queued.
    std::string why = pending.error;
    broken = true;
    rpc_destroy_context(rpc);
    rpc = nullptr;
    *error = why;
    return false;
  }
  return true;
}

StatusOr<std::unique_ptr<RawNfs>> RawNfs::Connect(const Options& options) {
  auto fd = ConnectTcp(options.endpoint, options.timeout);
  if (!fd.ok()) return fd.status();
  uint16_t port = LocalPort(*fd);
  auto impl = std::make_unique<Impl>();
  impl->rpc = rpc_init_context();
  if (impl->rpc == nullptr) {
    close(*fd);
    return Status::Error("rpc_init_context failed");
  }
  // The socket is ours (libnfs cannot choose a source address or decline a
  // privileged port as root); libnfs takes it over, marks it connected on
  // the first POLLOUT and closes it in rpc_destroy_context().
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL, 0) | O_NONBLOCK);
  rpc_set_fd(impl->rpc, *fd);
  rpc_set_auth(impl->rpc, MakeAuth(options.credential));
  return std::unique_ptr<RawNfs>(new RawNfs(std::move(impl), options.timeout, port));
}

RawNfs::RawNfs(std::unique_ptr<Impl> impl, Millis timeout, uint16_t local_port)
    : impl_(std::move(impl)), timeout_(timeout), local_port_(local_port) {}

RawNfs::~RawNfs() = default;

void RawNfs::SetCredential(const Credential& cred) {
  if (impl_->rpc != nullptr) rpc_set_auth(impl_->rpc, MakeAuth(cred));
}

bool RawNfs::connected() const { return !impl_->broken && impl_->rpc != nullptr; }

// ---- Conversions ----

Fattr ToFattr(const fattr3& a) {
  Fattr f;
  f.type = a.type;
  f.mode = a.mode;
  f.nlink = a.nlink;
  f.uid = a.uid;
  f.gid = a.gid;
  f.size = a.size;
  f.used = a.used;
  f.rdev1 = a.rdev.specdata1;
  f.rdev2 = a.rdev.specdata2;
  f.fsid = a.fsid;
  f.fileid = a.fileid;
  f.atime = {a.atime.seconds, a.atime.nseconds};
  f.mtime = {a.mtime.seconds, a.mtime.nseconds};
  f.ctime = {a.ctime.seconds, a.ctime.nseconds};
  return f;
}

std::optional<Fattr> ToFattr(const post_op_attr& a) {
  if (!a.attributes_follow) return std::nullopt;
  return ToFattr(a.post_op_attr_u.attributes);
}

Wcc ToWcc(const wcc_data& w) {
  Wcc out;
  if (w.before.attributes_follow) {
    const wcc_attr& b = w.before.pre_op_attr_u.attributes;
    out.before =
        WccAttr{b.size, {b.mtime.seconds, b.mtime.nseconds}, {b.ctime.seconds, b.ctime.nseconds}};
  }
  out.after = ToFattr(w.after);
  return out;
}

std::string ToString(const nfs_fh3& fh) {
  return std::string(fh.data.data_val ? fh.data.data_val : "", fh.data.data_len);
}

std::string ToHandle(const post_op_fh3& fh) {
  return fh.handle_follows ? ToString(fh.post_op_fh3_u.handle) : std::string();
}

nfs_fh3 ToFh(const std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_len = static_cast<u_int>(bytes.size());
  fh.data.data_val = const_cast<char*>(bytes.data());
  return fh;
}

sattr3 ToSattr(const Sattr& s) {
  sattr3 a{};
  a.mode.set_it = s.mode.has_value();
  a.mode.set_mode3_u.mode = s.mode.value_or(0);
  a.uid.set_it = s.uid.has_value();
  a.uid.set_uid3_u.uid = s.uid.value_or(0);
  a.gid.set_it = s.gid.has_value();
  a.gid.set_gid3_u.gid = s.gid.value_or(0);
  a.size.set_it = s.size.has_value();
  a.size.set_size3_u.size = s.size.value_or(0);
  a.atime.set_it = static_cast<time_how>(s.atime_how);
  a.atime.set_atime_u.atime = {s.atime.seconds, s.atime.nseconds};
  a.mtime.set_it = static_cast<time_how>(s.mtime_how);
  a.mtime.set_mtime_u.mtime = {s.mtime.seconds, s.mtime.nseconds};
  return a;
}

char* Str(const std::string& s) { return const_cast<char*>(s.c_str()); }

}  // namespace nfsedge::harness
