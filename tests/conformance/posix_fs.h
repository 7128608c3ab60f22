// PosixFs: the Fs backend of system calls (open, pread, pwrite, ftruncate, rename, ...)
// on paths under a local directory, which may be an NFS mount made by the kernel client.
// It builds without libnfs, into the static nfsedge-fsx-static that runs in the
// User-Mode Linux guest.
//
// Modes passed to Create() and Mkdir() are those the exerciser expects to read back, so
// the process's umask must be 0 (nfsedge-fsx sets it in main()).
//
// Thread safety: not thread-safe (see Fs).

#ifndef NFSEDGE_TESTS_CONFORMANCE_POSIX_FS_H_
#define NFSEDGE_TESTS_CONFORMANCE_POSIX_FS_H_

#include <string>

#include "conformance/fs.h"

namespace nfsedge::fsx {

class PosixFs : public Fs {
 public:
  // `root` is the directory paths are relative to ("/" or "." or "/mnt").
  explicit PosixFs(std::string root) : root_(std::move(root)) {}
  ~PosixFs() override;

  std::string Describe() const override { return "posix:" + root_; }
  int Create(const std::string& path, uint32_t mode, Handle* h) override;
  int Open(const std::string& path, Handle* h) override;
  int Close(Handle h) override;
  int64_t Pread(Handle h, uint64_t offset, size_t len, std::string* out) override;
  int Pwrite(Handle h, uint64_t offset, std::string_view data) override;
  int Append(const std::string& path, std::string_view data) override;
  int Ftruncate(Handle h, uint64_t size) override;
  int Truncate(const std::string& path, uint64_t size) override;
  int Fsync(Handle h) override;
  int Rename(const std::string& from, const std::string& to) override;
  int Link(const std::string& existing, const std::string& path) override;
  int Unlink(const std::string& path) override;
  int Symlink(const std::string& target, const std::string& path) override;
  int Readlink(const std::string& path, std::string* target) override;
  int Mkdir(const std::string& path, uint32_t mode) override;
  int Rmdir(const std::string& path) override;
  int Chmod(const std::string& path, uint32_t mode) override;
  int Utimes(const std::string& path, int64_t sec, uint32_t nsec) override;
  int Lstat(const std::string& path, FsStat* st) override;
  int ReadDir(const std::string& path, std::vector<std::string>* names) override;

 private:
  std::string Full(const std::string& path) const;

  const std::string root_;
};

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_POSIX_FS_H_
