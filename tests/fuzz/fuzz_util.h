// Helpers shared by the libFuzzer targets of tests/fuzz.
//
// FUZZ_CHECK states a property every input must keep (round-trip stability,
// bounds the proxy relies on); a broken one aborts, which libFuzzer reports
// as a crash with the input saved. Only for the targets: project code never
// aborts on peer input (STYLE habit 5).
//
// Thread-safety: stateless.
#ifndef NFSEDGE_TESTS_FUZZ_FUZZ_UTIL_H_
#define NFSEDGE_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace nfsedge::fuzz {

inline std::string_view AsView(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace nfsedge::fuzz

#endif  // NFSEDGE_TESTS_FUZZ_FUZZ_UTIL_H_
