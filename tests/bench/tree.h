// TreeSpec: the deterministic source tree of the treewalk workload, shaped
// like a system include directory: a top level holding a quarter of the
// files and nested directories holding the rest; most files 1-20 KiB, some
// up to 64 KiB, a few up to 200 KiB. Each file's content is the stream
// SeedFor(seed, path).
//
// Thread safety: plain values and free functions.

#ifndef NFSEDGE_TESTS_BENCH_TREE_H_
#define NFSEDGE_TESTS_BENCH_TREE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/status.h"

namespace nfsedge::bench {

struct TreeSpec {
  // Relative paths ("d003/d017"); dirs[0] is the tree's root, "".
  std::vector<std::string> dirs;
  // Relative path -> size.
  std::map<std::string, uint64_t> files;
  uint64_t total_bytes = 0;
};

// REQUIRES: files >= 0, dirs >= 1.
TreeSpec MakeTree(uint64_t seed, int files, int dirs);

// Creates the tree under `root` (which must not exist yet).
harness::Status WriteTree(const TreeSpec& tree, const std::string& root, uint64_t seed);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_TREE_H_
