// Composite cache keys as byte strings.
//
// Caches keyed by several fields (a handle and a name, a handle and a
// credential) flatten them into one std::string. Variable-length parts are
// length-prefixed so that no two different tuples give the same bytes
// ("ab"+"c" and "a"+"bc" differ), whatever a peer sends.
//
// Thread-safety: plain functions.
#ifndef NFSEDGE_CACHE_CACHE_KEY_H_
#define NFSEDGE_CACHE_CACHE_KEY_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace nfsedge {

inline void AppendU32(std::string* out, uint32_t v) {
  char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
               static_cast<char>(v)};
  out->append(b, 4);
}

inline void AppendU64(std::string* out, uint64_t v) {
  AppendU32(out, static_cast<uint32_t>(v >> 32));
  AppendU32(out, static_cast<uint32_t>(v));
}

// Appends the length of `bytes` (32 bits) and then `bytes`.
inline void AppendPrefixed(std::string* out, std::string_view bytes) {
  AppendU32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

// Reads one AppendPrefixed() part from the front of `*in` into `*bytes` and
// advances `*in` past it. Returns false iff `*in` does not start with one.
inline bool ReadPrefixed(std::string_view* in, std::string_view* bytes) {
  if (in->size() < 4) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(in->data());
  const size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
  if (in->size() - 4 < n) return false;
  *bytes = in->substr(4, n);
  in->remove_prefix(4 + n);
  return true;
}

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_CACHE_KEY_H_
