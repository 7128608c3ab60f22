// Model: the exerciser's in-memory picture of the working directory: every name, its
// type, permission bits, link count, file contents and symlink target, and the mtime
// when the exerciser set it with utimes (and nothing has changed it since). Each call
// applies POSIX (Linux) semantics and returns the results it allows (ErrSet); it
// changes the model only when success is expected.
//
// Paths are relative to the working directory, without "." or ".." components, and
// never pass through a symbolic link: the exerciser only builds paths from directories
// the model knows, from existing non-directories (to provoke ENOTDIR) and from missing
// names (ENOENT). A symlink is never followed; calls that would follow one are not
// generated.
//
// Thread safety: not thread-safe.

#ifndef NFSEDGE_TESTS_CONFORMANCE_MODEL_H_
#define NFSEDGE_TESTS_CONFORMANCE_MODEL_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "conformance/fs.h"

namespace nfsedge::fsx {

// The results a call may have: success (the empty set) or any of a set of errnos. NFS
// clients and servers differ in which errno they give when several conditions apply or
// when POSIX allows more than one (unlink of a directory: EISDIR or EPERM); a set
// accepts each of them. errnos >= 64 are not representable (none is needed).
class ErrSet {
 public:
  ErrSet() = default;  // Success.
  ErrSet(std::initializer_list<int> errnos) {
    for (int e : errnos) Add(e);
  }

  bool success() const { return mask_ == 0; }
  ErrSet& Add(int err) {
    if (err > 0 && err < 64) mask_ |= uint64_t{1} << err;
    return *this;
  }
  ErrSet& Add(const ErrSet& other) {
    mask_ |= other.mask_;
    return *this;
  }
  // Returns true iff `result` (0 or -errno) is an allowed result.
  bool Matches(int64_t result) const {
    if (result >= 0) return success();
    const int64_t e = -result;
    return e < 64 && (mask_ >> e & 1) != 0;
  }
  // The lowest errno in the set, as -errno; 0 if success.
  int First() const;
  // "OK" or "ENOENT|EEXIST".
  std::string ToString() const;

 private:
  uint64_t mask_ = 0;
};

class Model {
 public:
  struct Node {
    FileType type = FileType::kFile;
    uint32_t mode = 0;
    uint64_t links = 0;  // Names of a file or symlink (directories: see NlinkOf()).
    std::string data;    // File contents, or the symlink target.
    std::map<std::string, uint64_t> entries;  // Directories: name -> inode.
    bool mtime_known = false;                 // Set by Utimes(), cleared by changes.
    int64_t mtime_sec = 0;
    uint32_t mtime_nsec = 0;
  };
  struct Entry {
    std::string path;
    uint64_t ino = 0;
    FileType type = FileType::kFile;
  };

  // The working directory itself, empty, with mode `root_mode`.
  explicit Model(uint32_t root_mode = 0755);

  // --- namespace calls (POSIX semantics; success changes the model) ---
  ErrSet Create(const std::string& path, uint32_t mode, uint64_t* ino);  // O_CREAT|O_EXCL
  ErrSet Mkdir(const std::string& path, uint32_t mode);
  ErrSet Rmdir(const std::string& path);
  ErrSet Unlink(const std::string& path);
  ErrSet Rename(const std::string& from, const std::string& to);
  ErrSet Link(const std::string& existing, const std::string& path);
  ErrSet Symlink(const std::string& target, const std::string& path);
  ErrSet Readlink(const std::string& path, std::string* target) const;
  ErrSet Chmod(const std::string& path, uint32_t mode);
  ErrSet Utimes(const std::string& path, int64_t sec, uint32_t nsec);
  ErrSet Lstat(const std::string& path, FsStat* st) const;
  // Sorted names of directory `path`.
  ErrSet List(const std::string& path, std::vector<std::string>* names) const;
  // open(path, O_RDWR) of an existing file: sets *ino.
  ErrSet OpenFile(const std::string& path, uint64_t* ino) const;

  // --- data of an open file (REQUIRES: ino is a file) ---
  void Write(uint64_t ino, uint64_t offset, const std::string& data);
  void Truncate(uint64_t ino, uint64_t size);
  // Returns the bytes a read of `len` at `offset` gives (short at end of file).
  std::string Read(uint64_t ino, uint64_t offset, size_t len) const;

  // --- what the exerciser chooses from ---
  // Every name under the root, depth first, names in sorted order.
  std::vector<Entry> Entries() const;
  // Every directory (the root is ""), in the same order.
  std::vector<std::string> Dirs() const;
  // Returns the inode `path` names (0 if none; symlinks not followed).
  uint64_t InodeOf(const std::string& path) const;
  const Node& node(uint64_t ino) const { return nodes_.at(ino); }
  bool has(uint64_t ino) const { return nodes_.count(ino) != 0; }
  // Link count a stat reports: names for files and symlinks, 2 + subdirectories for
  // directories.
  uint64_t NlinkOf(uint64_t ino) const;
  size_t inode_count() const { return nodes_.size(); }

  // One line per name, sorted by path:
  //   "<path> <f|d|l> <mode octal|-> <size|-> <nlink> <content fnv1a hex|target>"
  // Identical to CanonicalTree() of a backend holding the same tree.
  std::string Canonical() const;

 private:
  struct Parent {
    uint64_t dir = 0;  // 0: the parent does not resolve to a directory (see err).
    std::string name;
    ErrSet err;
  };
  // Resolves all but the last component of `path`.
  Parent ResolveParent(const std::string& path) const;
  // Resolves the whole path (no following); 0 and *err set if it does not resolve.
  uint64_t Resolve(const std::string& path, ErrSet* err) const;
  uint64_t NewNode(FileType type, uint32_t mode);
  void Touch(uint64_t dir);  // An entry changed: the directory's mtime is unknown.
  void DropName(uint64_t ino);

  std::map<uint64_t, Node> nodes_;
  uint64_t next_ino_ = 2;
  static constexpr uint64_t kRoot = 1;
};

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_MODEL_H_
