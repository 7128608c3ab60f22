// Status and StatusOr<T>: errors as values.
//
// A Status is either OK or a code with a message. It also says whether the
// failed operation may safely be retried: a timed-out non-idempotent NFS call
// (CREATE, REMOVE, ...) may have run upstream, so retrying it is not safe.
//
// Thread-safety: plain values; distinct objects may be used from any thread.
#ifndef NFSEDGE_RPC_STATUS_H_
#define NFSEDGE_RPC_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace nfsedge {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad input: config, arguments, peer data
  kNotFound,
  kIoError,           // OS-level failure
  kTimeout,           // deadline passed
  kUnavailable,       // peer not reachable now; may come back
  kResourceExhausted, // a configured limit is reached
  kProtocolError,     // peer broke the protocol
  kCancelled,         // shutting down
  kInternal,
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, bool retry_safe = false)
      : code_(code), message_(std::move(message)), retry_safe_(retry_safe) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Returns true iff repeating the failed operation cannot do harm twice.
  bool retry_safe() const { return retry_safe_; }
  std::string ToString() const;

  // Marks a status as deliberately ignored.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  bool retry_safe_ = false;
};

Status InvalidArgument(std::string msg);
Status IoError(std::string msg);
Status ProtocolError(std::string msg);
Status Unavailable(std::string msg);
Status Timeout(std::string msg);
Status ResourceExhausted(std::string msg);
// Returns an IoError with strerror(err) appended.
Status ErrnoError(const std::string& what, int err);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_RPC_STATUS_H_
