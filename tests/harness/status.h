// Status and StatusOr<T> for the test harness: an error is a value carrying a
// human-readable message that tests print when they fail or skip.
//
// The harness keeps its own small types instead of the proxy's so that it
// builds (and can start a real upstream server) while the proxy does not.
//
// Thread safety: values; a const Status may be read from several threads.

#ifndef NFSEDGE_TESTS_HARNESS_STATUS_H_
#define NFSEDGE_TESTS_HARNESS_STATUS_H_

#include <string>
#include <utility>
#include <variant>

namespace nfsedge::harness {

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK.

  static Status OK() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !error_; }
  // Returns "OK" iff ok(), else the error message.
  const std::string& message() const { return message_; }
  std::string ToString() const { return ok() ? "OK" : message_; }

  // Explicitly drops an error nobody needs to look at (e.g. in cleanup).
  void IgnoreError() const {}

 private:
  explicit Status(std::string message) : error_(true), message_(std::move(message)) {}

  bool error_ = false;
  std::string message_ = "OK";
};

// Either a T or an error Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design.
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT
  // REQUIRES: !status.ok() for the constructor above (an OK status has no value).

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_STATUS_H_
