#include "tree.h"

#include <cmath>
#include <cstdio>

#include "content.h"
#include "harness/files.h"

namespace nfsedge::bench {
namespace {

// A small deterministic generator (splitmix64).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Unit() { return static_cast<double>(Next() >> 11) / 9007199254740992.0; }
  // Uniform in [0, n).
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }
  // Log-uniform in [lo, hi).
  uint64_t LogUniform(double lo, double hi) {
    return static_cast<uint64_t>(std::exp(std::log(lo) + Unit() * (std::log(hi) - std::log(lo))));
  }

 private:
  uint64_t state_;
};

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() ? name : dir + "/" + name;
}

}  // namespace

TreeSpec MakeTree(uint64_t seed, int files, int dirs) {
  Rng rng(SeedFor(seed, "tree-shape"));
  TreeSpec t;
  t.dirs.push_back("");
  char name[32];
  for (int i = 1; i < dirs; ++i) {
    // Half the directories sit at the top level, the others under an
    // earlier one: depths of 1 to about 6, as in /usr/include.
    size_t parent = rng.Unit() < 0.5 ? 0 : rng.Below(t.dirs.size());
    std::snprintf(name, sizeof(name), "d%03d", i);
    t.dirs.push_back(Join(t.dirs[parent], name));
  }
  for (int i = 0; i < files; ++i) {
    size_t dir = rng.Unit() < 0.25 ? 0 : rng.Below(t.dirs.size());
    double u = rng.Unit();
    uint64_t size = u < 0.85   ? rng.LogUniform(1024, 20480)
                    : u < 0.97 ? rng.LogUniform(20480, 65536)
                               : rng.LogUniform(65536, 204800);
    std::snprintf(name, sizeof(name), "f%04d.h", i);
    t.files[Join(t.dirs[dir], name)] = size;
    t.total_bytes += size;
  }
  return t;
}

harness::Status WriteTree(const TreeSpec& tree, const std::string& root, uint64_t seed) {
  for (const std::string& dir : tree.dirs) {
    harness::Status s = harness::MakeDirs(dir.empty() ? root : root + "/" + dir);
    if (!s.ok()) return s;
  }
  for (const auto& [path, size] : tree.files) {
    harness::Status s = WriteContentFile(root + "/" + path, SeedFor(seed, path), size);
    if (!s.ok()) return s;
  }
  return harness::Status::OK();
}

}  // namespace nfsedge::bench
