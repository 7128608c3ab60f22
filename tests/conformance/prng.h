// Prng: the exerciser's own pseudo-random generator (SplitMix64 seeding a xoshiro256**),
// with its own range reduction, so that a seed gives the same sequence of operations on
// every platform and standard library (std::uniform_int_distribution is not specified
// bit for bit).
//
// Thread safety: a Prng is a value; not safe for concurrent use.

#ifndef NFSEDGE_TESTS_CONFORMANCE_PRNG_H_
#define NFSEDGE_TESTS_CONFORMANCE_PRNG_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nfsedge::fsx {

class Prng {
 public:
  explicit Prng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& s : s_) s = SplitMix(x);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Returns a value in [0, n). REQUIRES: n > 0.
  uint64_t Below(uint64_t n) {
    // Rejection sampling: unbiased and identical everywhere.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do {
      v = Next();
    } while (v >= limit);
    return v % n;
  }

  // Returns a value in [lo, hi]. REQUIRES: lo <= hi.
  uint64_t Range(uint64_t lo, uint64_t hi) { return lo + Below(hi - lo + 1); }

  // Returns true with probability percent/100.
  bool Percent(unsigned percent) { return Below(100) < percent; }

  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  // Appends `n` pseudo-random bytes to `out`.
  void Fill(size_t n, std::string* out) {
    size_t i = out->size();
    out->resize(i + n);
    char* p = out->data();
    const size_t end = i + n;
    while (i < end) {
      uint64_t v = Next();
      for (int b = 0; b < 8 && i < end; ++b, ++i) p[i] = static_cast<char>(v >> (8 * b));
    }
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t s_[4];
};

// FNV-1a, 64 bits: the content and tree fingerprints.
inline uint64_t Fnv1a(const std::string& data, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_PRNG_H_
