// Deterministic file content for the benchmarks: byte i of the stream named by
// `seed` is a pure function of (seed, i), so a writer can produce any range and
// a reader can check any range it receives, in any order, without keeping the
// data. Also whole-file helpers for fixtures written (and results checked)
// directly in the upstream's exported directory.
//
// Thread safety: all functions are thread-safe (no shared state).

#ifndef NFSEDGE_TESTS_BENCH_CONTENT_H_
#define NFSEDGE_TESTS_BENCH_CONTENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/status.h"

namespace nfsedge::bench {

using harness::Status;
using harness::StatusOr;

// Returns a seed derived from `base` and `name` (FNV-1a mixed), so each file
// of a run has its own stream.
uint64_t SeedFor(uint64_t base, const std::string& name);

// Fills out[0, len) with bytes [offset, offset + len) of stream `seed`.
void FillContent(uint64_t seed, uint64_t offset, char* out, size_t len);

// Returns -1 iff data[0, len) equals bytes [offset, offset + len) of stream
// `seed`; else the file offset of the first byte that differs.
int64_t FirstMismatch(uint64_t seed, uint64_t offset, const char* data, size_t len);

// Creates (or truncates) `path` holding the first `size` bytes of `seed`.
Status WriteContentFile(const std::string& path, uint64_t seed, uint64_t size);

// Returns OK iff `path` holds exactly the first `size` bytes of `seed`.
Status VerifyContentFile(const std::string& path, uint64_t seed, uint64_t size);

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_CONTENT_H_
