// Leveled, structured logging: NFSEDGE_LOG(kInfo) << "text " << value;
//
// One line per message, in the format chosen at start (and on reload):
//   text:   2024-05-01T10:00:00.123Z INFO text
//   kv:     ts=2024-05-01T10:00:00.123Z level=info src=daemon.cc:42 msg="text"
//   json:   {"ts":"2024-05-01T10:00:00.123Z","level":"info","src":"daemon.cc:42","msg":"text"}
// to stderr (one write(2) per line) or to syslog (facility daemon).
//
// Repeats are rate-limited per call site: at most `repeat_burst` lines from
// one NFSEDGE_LOG statement per `repeat_window_s` seconds; the lines held
// back are counted and reported with the next line that site logs
// ("(N similar messages suppressed)"). A burst of 0 turns the limit off.
// Lines logged on request (NFSEDGE_LOG_ASKED: the counters on SIGUSR1 and
// at exit) are never held back.
//
// Thread-safety: logging is safe from any thread. The level is read with
// relaxed atomics; SetLogLevel and ConfigureLogging may be called at any
// time (reload) and apply to the lines that follow.
#ifndef NFSEDGE_RPC_LOG_H_
#define NFSEDGE_RPC_LOG_H_

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace nfsedge {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarn, kError };
enum class LogFormat { kText, kKeyValue, kJson };
enum class LogOutput { kStderr, kSyslog };

struct LogOptions {
  LogFormat format = LogFormat::kText;
  LogOutput output = LogOutput::kStderr;
  uint32_t repeat_burst = 20;
  uint32_t repeat_window_s = 60;
};

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void ConfigureLogging(const LogOptions& options);
// Returns the level named `name` (error, warn, info, debug, trace) iff known.
std::optional<LogLevel> ParseLogLevel(std::string_view name);
// Returns the format named `name` (text, kv, json) iff known.
std::optional<LogFormat> ParseLogFormat(std::string_view name);
// Returns the output named `name` (stderr, syslog) iff known.
std::optional<LogOutput> ParseLogOutput(std::string_view name);

// Returns one formatted line (with '\n') for `text` logged at `level` from
// `file`:`line` at wall-clock time `unix_ms`; used by LogMessage.
std::string FormatLogLine(LogFormat format, LogLevel level, const char* file, int line,
                          int64_t unix_ms, std::string_view text);

class LogMessage {
 public:
  // `limited` = false: the line is never held back by the repeat limit
  // (lines an administrator asked for, like the counters on SIGUSR1).
  explicit LogMessage(LogLevel level, const char* file = __builtin_FILE(),
                      int line = __builtin_LINE(), bool limited = true)
      : level_(level), file_(file), line_(line), limited_(limited) {}
  ~LogMessage();
  std::ostream& stream() { return out_; }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  bool limited_;
  std::ostringstream out_;
};

// Turns the streamed expression into void so the macro is one expression
// (safe inside an unbraced if/else).
struct LogVoidify {
  void operator&(std::ostream&) {}
};

}  // namespace nfsedge

#define NFSEDGE_LOG(level)                                                             \
  (::nfsedge::LogLevel::level < ::nfsedge::GetLogLevel())                              \
      ? (void)0                                                                        \
      : ::nfsedge::LogVoidify() &                                                      \
            ::nfsedge::LogMessage(::nfsedge::LogLevel::level, __FILE__, __LINE__).stream()

// Like NFSEDGE_LOG, without the repeat limit: for lines logged on request.
#define NFSEDGE_LOG_ASKED(level)                                                            \
  (::nfsedge::LogLevel::level < ::nfsedge::GetLogLevel())                                   \
      ? (void)0                                                                             \
      : ::nfsedge::LogVoidify() &                                                           \
            ::nfsedge::LogMessage(::nfsedge::LogLevel::level, __FILE__, __LINE__, false).stream()

#endif  // NFSEDGE_RPC_LOG_H_
