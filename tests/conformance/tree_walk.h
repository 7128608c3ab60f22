// The canonical text of a tree, read back through any Fs: the exerciser's final check
// (what a backend holds equals what the model expects) and the fingerprint it prints,
// which tests compare between runs of one seed (directly against the server, through
// the proxy, with the kernel client, with libnfs) and with the server's disk.
//
// Thread safety: functions; an Fs is used from the calling thread only.

#ifndef NFSEDGE_TESTS_CONFORMANCE_TREE_WALK_H_
#define NFSEDGE_TESTS_CONFORMANCE_TREE_WALK_H_

#include <cstdint>
#include <string>

#include "conformance/fs.h"

namespace nfsedge::fsx {

// One line of the canonical text (see Model::Canonical()). `data` is a file's contents
// or a symlink's target.
std::string CanonicalLine(const std::string& path, FileType type, uint32_t mode, uint64_t size,
                          uint64_t nlink, const std::string& data);

// Reads the whole tree under `root` through `fs` (readdir, lstat, read every file,
// readlink every symlink) into *out, in Model::Canonical() form with paths relative to
// `root`. Returns 0, or -errno and sets *error to the call that failed.
int CanonicalTree(Fs& fs, const std::string& root, std::string* out, std::string* error);

// Removes `path` and everything under it through `fs` (lstat, readdir, unlink, rmdir;
// symlinks are not followed). Returns 0, or -errno and sets *error; a missing `path` is
// success.
int RemoveTree(Fs& fs, const std::string& path, std::string* error);

// The fingerprint of a canonical text: 16 hex digits.
std::string Fingerprint(const std::string& canonical);

// The first line that differs between two canonical texts, for messages
// ("model: ... / fs: ..."); empty iff equal.
std::string FirstDifference(const std::string& want, const std::string& got);

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_TREE_WALK_H_
