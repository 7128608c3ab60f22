#include "harness/raw_rpc.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

namespace nfsedge::harness {

XdrWriter& XdrWriter::U32(uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  data_.append(b, 4);
  return *this;
}

XdrWriter& XdrWriter::U64(uint64_t v) {
  U32(static_cast<uint32_t>(v >> 32));
  return U32(static_cast<uint32_t>(v));
}

XdrWriter& XdrWriter::Opaque(const std::string& bytes) {
  U32(static_cast<uint32_t>(bytes.size()));
  return Fixed(bytes);
}

XdrWriter& XdrWriter::Fixed(const std::string& bytes) {
  data_ += bytes;
  data_.append((4 - bytes.size() % 4) % 4, '\0');
  return *this;
}

XdrWriter& XdrWriter::Raw(const std::string& bytes) {
  data_ += bytes;
  return *this;
}

bool XdrReader::U32(uint32_t* v) {
  if (remaining() < 4) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(data_.data() + pos_);
  *v = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
  pos_ += 4;
  return true;
}

bool XdrReader::U64(uint64_t* v) {
  if (remaining() < 8) return false;
  uint32_t hi = 0, lo = 0;
  U32(&hi);
  U32(&lo);
  *v = (uint64_t{hi} << 32) | lo;
  return true;
}

bool XdrReader::Fixed(size_t len, std::string* bytes) {
  size_t padded = len + (4 - len % 4) % 4;
  if (remaining() < padded) return false;
  bytes->assign(data_, pos_, len);
  pos_ += padded;
  return true;
}

bool XdrReader::Opaque(std::string* bytes, uint32_t max_len) {
  size_t saved = pos_;
  uint32_t len = 0;
  if (!U32(&len) || len > max_len || !Fixed(len, bytes)) {
    pos_ = saved;
    return false;
  }
  return true;
}

std::string EncodeAuthSys(const AuthSysParams& p) {
  XdrWriter w;
  w.U32(p.stamp).Opaque(p.machine).U32(p.uid).U32(p.gid).U32(static_cast<uint32_t>(p.gids.size()));
  for (uint32_t g : p.gids) w.U32(g);
  return w.data();
}

std::string EncodeCall(const RpcCall& c) {
  XdrWriter w;
  w.U32(c.xid).U32(c.msg_type).U32(c.rpc_version).U32(c.program).U32(c.version).U32(c.procedure);
  w.U32(c.cred_flavor).Opaque(c.cred_body).U32(c.verf_flavor).Opaque(c.verf_body);
  w.Raw(c.args);
  return w.data();
}

std::string FrameRecord(const std::string& message, size_t max_fragment) {
  if (max_fragment == 0) max_fragment = message.size() ? message.size() : 1;
  std::string out;
  size_t pos = 0;
  do {
    size_t n = std::min(max_fragment, message.size() - pos);
    bool last = pos + n == message.size();
    XdrWriter mark;
    mark.U32(static_cast<uint32_t>(n) | (last ? 0x80000000u : 0));
    out += mark.data();
    out.append(message, pos, n);
    pos += n;
  } while (pos < message.size());
  return out;
}

std::string RpcReply::ToString() const {
  std::ostringstream s;
  s << "xid=" << xid << " reply_stat=" << reply_stat;
  if (reply_stat == kMsgAccepted) {
    s << " accept_stat=" << accept_stat;
    if (accept_stat == kAcceptProgMismatch)
      s << " low=" << mismatch_low << " high=" << mismatch_high;
  } else {
    s << " reject_stat=" << reject_stat;
    if (reject_stat == kRejectRpcMismatch)
      s << " low=" << mismatch_low << " high=" << mismatch_high;
    if (reject_stat == kRejectAuthError) s << " auth_stat=" << auth_stat;
  }
  return s.str();
}

StatusOr<RpcReply> ParseReply(const std::string& message) {
  XdrReader r(message);
  RpcReply rep;
  auto bad = [&](const char* what) {
    return Status::Error(std::string("malformed reply: ") + what + " (" +
                         std::to_string(message.size()) + " bytes)");
  };
  if (!r.U32(&rep.xid) || !r.U32(&rep.msg_type) || !r.U32(&rep.reply_stat)) return bad("header");
  if (rep.msg_type != kRpcReply) return bad("msg_type is not REPLY");
  if (rep.reply_stat == kMsgAccepted) {
    uint32_t verf_flavor = 0;
    std::string verf;
    if (!r.U32(&verf_flavor) || !r.Opaque(&verf, 400) || !r.U32(&rep.accept_stat)) {
      return bad("accepted_reply");
    }
    if (rep.accept_stat == kAcceptProgMismatch &&
        (!r.U32(&rep.mismatch_low) || !r.U32(&rep.mismatch_high))) {
      return bad("prog mismatch_info");
    }
    if (rep.accept_stat == kAcceptSuccess) r.Fixed(r.remaining(), &rep.results);
  } else if (rep.reply_stat == kMsgDenied) {
    if (!r.U32(&rep.reject_stat)) return bad("rejected_reply");
    if (rep.reject_stat == kRejectRpcMismatch) {
      if (!r.U32(&rep.mismatch_low) || !r.U32(&rep.mismatch_high)) return bad("rpc mismatch_info");
    } else if (rep.reject_stat == kRejectAuthError) {
      if (!r.U32(&rep.auth_stat)) return bad("auth_stat");
    } else {
      return bad("unknown reject_stat");
    }
  } else {
    return bad("unknown reply_stat");
  }
  return rep;
}

StatusOr<std::unique_ptr<RawConnection>> RawConnection::Connect(const TcpEndpoint& ep,
                                                                Millis timeout) {
  auto fd = ConnectTcp(ep, timeout);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<RawConnection>(new RawConnection(*fd));
}

Status RawConnection::Send(const std::string& bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    ssize_t n = send(fd_.get(), bytes.data() + pos, bytes.size() - pos, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(std::string("send: ") + std::strerror(errno));
    pos += static_cast<size_t>(n);
  }
  return Status::OK();
}

RawConnection::Outcome RawConnection::ReadExact(size_t n, std::string* out,
                                                const Deadline& deadline) {
  out->clear();
  char buf[65536];
  while (out->size() < n) {
    pollfd pfd{fd_.get(), POLLIN, 0};
    int rc = poll(&pfd, 1, deadline.PollTimeoutMs());
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      if (deadline.Expired()) return Outcome::kTimeout;
      continue;
    }
    ssize_t got = recv(fd_.get(), buf, std::min(sizeof(buf), n - out->size()), MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) return Outcome::kClosed;  // EOF, ECONNRESET, ...
    out->append(buf, static_cast<size_t>(got));
  }
  return Outcome::kRecord;
}

RawConnection::Outcome RawConnection::ReadRecord(std::string* record, Millis timeout) {
  Deadline deadline(timeout);
  record->clear();
  while (true) {
    std::string mark;
    Outcome o = ReadExact(4, &mark, deadline);
    if (o != Outcome::kRecord) return o;
    uint32_t m = 0;
    XdrReader(mark).U32(&m);
    std::string fragment;
    o = ReadExact(m & 0x7fffffffu, &fragment, deadline);
    if (o != Outcome::kRecord) return o;
    *record += fragment;
    if (m & 0x80000000u) return Outcome::kRecord;
  }
}

bool RawConnection::WaitForClose(Millis timeout, int* records) {
  Deadline deadline(timeout);
  int count = 0;
  std::string record;
  Outcome o;
  while ((o = ReadRecord(&record, deadline.Remaining())) == Outcome::kRecord) ++count;
  if (records) *records = count;
  return o == Outcome::kClosed;
}

StatusOr<RpcReply> RawConnection::Call(const RpcCall& call, Millis timeout) {
  Status s = Send(FrameRecord(EncodeCall(call)));
  if (!s.ok()) return s;
  std::string record;
  switch (ReadRecord(&record, timeout)) {
    case Outcome::kRecord:
      return ParseReply(record);
    case Outcome::kClosed:
      return Status::Error("connection closed before a reply");
    case Outcome::kTimeout:
      break;
  }
  return Status::Error("no reply in time");
}

}  // namespace nfsedge::harness
