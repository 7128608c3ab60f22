// Status and StatusOr<T>: the error values of the WAN emulator.
//
// A Status is either OK or carries a code and a message. The WAN emulator is a test tool that is
// built on its own (it must not depend on the rest of nfsedge compiling), so it keeps this small
// copy instead of linking the proxy's status library.
//
// Thread safety: values; distinct objects may be used from distinct threads freely, a single
// object needs external synchronization like any value type.

#ifndef NFSEDGE_TESTS_WAN_STATUS_H_
#define NFSEDGE_TESTS_WAN_STATUS_H_

#include <optional>
#include <string>
#include <utility>

namespace nfsedge::wan {

class [[nodiscard]] Status {
 public:
  enum class Code { kOk, kInvalidArgument, kIOError };

  Status() = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  std::string ToString() const {
    switch (code_) {
      case Code::kOk:
        return "OK";
      case Code::kInvalidArgument:
        return "invalid argument: " + message_;
      case Code::kIOError:
        return "I/O error: " + message_;
    }
    return message_;
  }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
};

// Holds either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok()
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design.
  StatusOr(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design.

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace nfsedge::wan

#endif  // NFSEDGE_TESTS_WAN_STATUS_H_
