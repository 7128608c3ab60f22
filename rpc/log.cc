#include "rpc/log.h"

#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <unordered_map>

namespace nfsedge {

namespace {

std::atomic<LogLevel> g_level{LogLevel::kInfo};
const char* kNames[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR"};
const char* kLowerNames[] = {"trace", "debug", "info", "warn", "error"};

// Output settings and the per-site repeat counters, behind one mutex.
struct Sink {
  std::mutex mu;
  LogOptions options;  // guarded by mu
  bool syslog_open = false;
  struct Site {
    int64_t window_start_ms = 0;
    uint32_t lines = 0;
    uint64_t suppressed = 0;
  };
  std::unordered_map<std::string, Site> sites;  // "file:line"
};

Sink& TheSink() {
  static Sink* sink = new Sink;  // never destroyed: logging may run at exit
  return *sink;
}

const char* BaseName(const char* file) {
  const char* slash = nullptr;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') slash = p;
  }
  return slash ? slash + 1 : file;
}

void AppendJsonString(std::string* out, std::string_view s) {
  *out += '"';
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += c;
        }
    }
  }
  *out += '"';
}

// `s` with control bytes written as \xNN: a client's path or name with a
// newline in it cannot make one text line look like several.
void AppendPrintable(std::string* out, std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      *out += buf;
    } else {
      *out += c;
    }
  }
}

int SyslogPriority(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return LOG_ERR;
    case LogLevel::kWarn: return LOG_WARNING;
    case LogLevel::kInfo: return LOG_INFO;
    default: return LOG_DEBUG;
  }
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }
LogLevel GetLogLevel() { return g_level.load(std::memory_order_relaxed); }

void ConfigureLogging(const LogOptions& options) {
  Sink& s = TheSink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.options = options;
  if (options.output == LogOutput::kSyslog && !s.syslog_open) {
    openlog("nfsedge", LOG_PID | LOG_NDELAY, LOG_DAEMON);
    s.syslog_open = true;
  }
}

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "trace") return LogLevel::kTrace;
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return std::nullopt;
}

std::optional<LogFormat> ParseLogFormat(std::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "kv") return LogFormat::kKeyValue;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

std::optional<LogOutput> ParseLogOutput(std::string_view name) {
  if (name == "stderr") return LogOutput::kStderr;
  if (name == "syslog") return LogOutput::kSyslog;
  return std::nullopt;
}

std::string FormatLogLine(LogFormat format, LogLevel level, const char* file, int line,
                          int64_t unix_ms, std::string_view text) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char stamp[48];
  std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  const int l = static_cast<int>(level);
  const std::string src = std::string(BaseName(file)) + ":" + std::to_string(line);
  std::string out;
  switch (format) {
    case LogFormat::kText:
      out = std::string(stamp) + " " + kNames[l] + " ";
      AppendPrintable(&out, text);
      break;
    case LogFormat::kKeyValue:
      out = std::string("ts=") + stamp + " level=" + kLowerNames[l] + " src=" + src + " msg=";
      AppendJsonString(&out, text);  // quoted, with the same escapes
      break;
    case LogFormat::kJson:
      out = std::string("{\"ts\":\"") + stamp + "\",\"level\":\"" + kLowerNames[l] +
            "\",\"src\":\"" + src + "\",\"msg\":";
      AppendJsonString(&out, text);
      out += "}";
      break;
  }
  out += '\n';
  return out;
}

LogMessage::~LogMessage() {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  Sink& s = TheSink();
  std::string text = out_.str();
  LogOptions o;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    o = s.options;
    if (o.repeat_burst > 0 && limited_) {
      Sink::Site& site = s.sites[std::string(file_) + ":" + std::to_string(line_)];
      if (now_ms - site.window_start_ms >= int64_t{o.repeat_window_s} * 1000) {
        site.window_start_ms = now_ms;
        site.lines = 0;
      }
      if (site.lines >= o.repeat_burst) {
        site.suppressed++;
        return;
      }
      site.lines++;
      if (site.suppressed > 0) {
        text += " (" + std::to_string(site.suppressed) + " similar messages suppressed)";
        site.suppressed = 0;
      }
    }
  }
  if (o.output == LogOutput::kSyslog) {
    std::string line = FormatLogLine(o.format, level_, file_, line_, now_ms, text);
    line.pop_back();
    syslog(SyslogPriority(level_), "%s", line.c_str());
    return;
  }
  std::string line = FormatLogLine(o.format, level_, file_, line_, now_ms, text);
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace nfsedge
