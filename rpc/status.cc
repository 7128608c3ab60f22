#include "rpc/status.h"

#include <cstring>

namespace nfsedge {

namespace {
const char* CodeName(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kProtocolError: return "protocol error";
    case StatusCode::kCancelled: return "cancelled";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}
}  // namespace

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

Status InvalidArgument(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }
Status IoError(std::string msg) { return Status(StatusCode::kIoError, std::move(msg)); }
Status ProtocolError(std::string msg) { return Status(StatusCode::kProtocolError, std::move(msg)); }
Status Unavailable(std::string msg) { return Status(StatusCode::kUnavailable, std::move(msg), true); }
Status Timeout(std::string msg) { return Status(StatusCode::kTimeout, std::move(msg)); }
Status ResourceExhausted(std::string msg) {
  return Status(StatusCode::kResourceExhausted, std::move(msg), true);
}
Status ErrnoError(const std::string& what, int err) {
  return Status(StatusCode::kIoError, what + ": " + std::strerror(err));
}

}  // namespace nfsedge
