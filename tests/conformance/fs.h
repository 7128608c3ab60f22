// Fs: the file-system operations nfsedge-fsx exercises, as one interface with several
// backends: PosixFs (system calls on a local or NFS-mounted path), LibnfsFs (the libnfs
// high-level sync API, one NFSv3 client connection per instance) and MemFs (in memory,
// for hermetic tests of the exerciser itself).
//
// Paths are relative to the backend's root, components separated by '/', no leading or
// trailing '/' ("" is the root). Every call returns 0 (or a byte count) on success and
// -errno on failure, so that the exerciser can compare the error class with its model.
// The last component of a path is a symbolic link followed by Create, Open, Append,
// Truncate, Chmod and Utimes, and not by the others (as on Linux); the exerciser never
// makes such calls on a symlink.
//
// Thread safety: an Fs is not thread-safe; one exerciser uses it from one thread.

#ifndef NFSEDGE_TESTS_CONFORMANCE_FS_H_
#define NFSEDGE_TESTS_CONFORMANCE_FS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nfsedge::fsx {

enum class FileType { kFile, kDir, kSymlink, kOther };

struct FsStat {
  FileType type = FileType::kOther;
  uint32_t mode = 0;  // Permission bits only (mode & 07777).
  uint64_t size = 0;
  uint64_t nlink = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
};

// An open file of one Fs. Values are the backend's own; never shared between backends.
using Handle = int;

class Fs {
 public:
  virtual ~Fs() = default;

  // What this backend is, for logs ("posix:/mnt/x", "libnfs:nfs://...").
  virtual std::string Describe() const = 0;

  // open(path, O_RDWR | O_CREAT | O_EXCL, mode). Sets *h iff it returns 0.
  [[nodiscard]] virtual int Create(const std::string& path, uint32_t mode, Handle* h) = 0;
  // open(path, O_RDWR). Sets *h iff it returns 0.
  [[nodiscard]] virtual int Open(const std::string& path, Handle* h) = 0;
  [[nodiscard]] virtual int Close(Handle h) = 0;
  // Reads up to `len` bytes at `offset` into *out (replacing it), looping over short
  // reads until `len` bytes or end of file. Returns the byte count or -errno.
  [[nodiscard]] virtual int64_t Pread(Handle h, uint64_t offset, size_t len, std::string* out) = 0;
  // Writes all of `data` at `offset` (looping over short writes). Returns 0 or -errno.
  [[nodiscard]] virtual int Pwrite(Handle h, uint64_t offset, std::string_view data) = 0;
  // open(path, O_WRONLY | O_APPEND), write all of `data`, close.
  [[nodiscard]] virtual int Append(const std::string& path, std::string_view data) = 0;
  [[nodiscard]] virtual int Ftruncate(Handle h, uint64_t size) = 0;
  [[nodiscard]] virtual int Truncate(const std::string& path, uint64_t size) = 0;
  [[nodiscard]] virtual int Fsync(Handle h) = 0;

  [[nodiscard]] virtual int Rename(const std::string& from, const std::string& to) = 0;
  [[nodiscard]] virtual int Link(const std::string& existing, const std::string& path) = 0;
  [[nodiscard]] virtual int Unlink(const std::string& path) = 0;
  [[nodiscard]] virtual int Symlink(const std::string& target, const std::string& path) = 0;
  [[nodiscard]] virtual int Readlink(const std::string& path, std::string* target) = 0;
  [[nodiscard]] virtual int Mkdir(const std::string& path, uint32_t mode) = 0;
  [[nodiscard]] virtual int Rmdir(const std::string& path) = 0;
  [[nodiscard]] virtual int Chmod(const std::string& path, uint32_t mode) = 0;
  // Sets both atime and mtime to sec + nsec (nsec a multiple of 1000: utimes has
  // microseconds).
  [[nodiscard]] virtual int Utimes(const std::string& path, int64_t sec, uint32_t nsec) = 0;
  [[nodiscard]] virtual int Lstat(const std::string& path, FsStat* st) = 0;
  // The names in directory `path`, without "." and "..", in the server's order.
  [[nodiscard]] virtual int ReadDir(const std::string& path, std::vector<std::string>* names) = 0;
};

// "ENOENT" for -ENOENT or ENOENT, "OK" for 0, "E<n>" for names it does not know.
std::string ErrnoName(int err);

// Joins two relative paths ("" is the root).
inline std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_FS_H_
