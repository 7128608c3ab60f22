// MemFs: an Fs kept in memory, on a Model of its own. It gives the model's answers (the
// lowest errno when several are allowed), so that the exerciser, its determinism and
// its failure reports can be tested without a server, and a seed's fingerprint can be
// computed anywhere (nfsedge-fsx --mem).
//
// Thread safety: not thread-safe (see Fs).

#ifndef NFSEDGE_TESTS_CONFORMANCE_MEM_FS_H_
#define NFSEDGE_TESTS_CONFORMANCE_MEM_FS_H_

#include <map>
#include <string>

#include "conformance/fs.h"
#include "conformance/model.h"

namespace nfsedge::fsx {

class MemFs : public Fs {
 public:
  MemFs() = default;

  std::string Describe() const override { return "mem:"; }
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
  // The inode of open handle `h`, 0 if `h` is not open or its file is gone.
  uint64_t Ino(Handle h) const;

  Model model_;
  std::map<Handle, uint64_t> open_;
  Handle next_handle_ = 1;
};

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_MEM_FS_H_
