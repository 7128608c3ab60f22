// Small file-system helpers for tests: a self-removing temporary directory,
// whole-file read/write and the tail of a log.
//
// Thread safety: TempDir is not thread-safe; the free functions are.

#ifndef NFSEDGE_TESTS_HARNESS_FILES_H_
#define NFSEDGE_TESTS_HARNESS_FILES_H_

#include <cstddef>
#include <string>

#include "harness/status.h"

namespace nfsedge::harness {

// A directory created under $TMPDIR (default /tmp) and removed, with its
// contents, on destruction unless NFSEDGE_KEEP_TEST_DIRS is set in the
// environment (for post-mortems).
class TempDir {
 public:
  // Creates <tmp>/nfsedge-<prefix>-XXXXXX. Check ok() before use.
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // Returns path() + "/" + name.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Creates `path` and missing parents with `mode`.
Status MakeDirs(const std::string& path, unsigned mode = 0755);
// Removes `path` recursively; missing is fine.
void RemoveTree(const std::string& path);
Status WriteFile(const std::string& path, const std::string& contents);
// Returns the contents, or "" if the file cannot be read.
std::string ReadFile(const std::string& path);
// Returns the last `max_lines` lines of `path` (at most the last 64 KiB).
std::string TailOfFile(const std::string& path, size_t max_lines = 40);

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_FILES_H_
