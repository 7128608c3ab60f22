// Leveled logging to stderr: NFSEDGE_LOG(kInfo) << "text " << value;
//
// One line per message: time, level, text. The level threshold is set once at
// start (SetLogLevel) and read with relaxed atomics; logging itself is safe
// from any thread (each line is written with one write(2)).
#ifndef NFSEDGE_RPC_LOG_H_
#define NFSEDGE_RPC_LOG_H_

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace nfsedge {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarn, kError };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// Returns the level named `name` (error, warn, info, debug, trace) iff known.
std::optional<LogLevel> ParseLogLevel(std::string_view name);

class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage();
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;
  std::ostringstream out_;
};

// Turns the streamed expression into void so the macro is one expression
// (safe inside an unbraced if/else).
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace nfsedge

#define NFSEDGE_LOG(level)                                             \
  (::nfsedge::LogLevel::level < ::nfsedge::GetLogLevel())              \
      ? (void)0                                                        \
      : ::nfsedge::LogVoidify() & ::nfsedge::LogMessage(::nfsedge::LogLevel::level).stream()

#endif  // NFSEDGE_RPC_LOG_H_
