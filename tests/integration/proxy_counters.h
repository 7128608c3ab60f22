// Reading the counters nfsedge logs (on SIGUSR1 and at exit) in
// integration tests.
#ifndef NFSEDGE_TESTS_INTEGRATION_PROXY_COUNTERS_H_
#define NFSEDGE_TESTS_INTEGRATION_PROXY_COUNTERS_H_

#include <cstdint>
#include <string>

namespace nfsedge::itest {

// Returns the value of ` key=N` on the last line of `log` starting with
// `prefix`, or -1.
inline int64_t Counter(const std::string& log, const std::string& prefix, const std::string& key) {
  const size_t line = log.rfind(prefix);
  if (line == std::string::npos) return -1;
  const size_t at = log.find(" " + key + "=", line);
  if (at == std::string::npos || at > log.find('\n', line)) return -1;
  return std::stoll(log.substr(at + key.size() + 2));
}

// Returns the last line of `log` starting with `prefix` (from the prefix on).
inline std::string LastLine(const std::string& log, const std::string& prefix) {
  const size_t at = log.rfind(prefix);
  if (at == std::string::npos) return "";
  return log.substr(at, log.find('\n', at) - at);
}

}  // namespace nfsedge::itest

#endif  // NFSEDGE_TESTS_INTEGRATION_PROXY_COUNTERS_H_
