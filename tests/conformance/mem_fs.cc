#include "conformance/mem_fs.h"

#include <cerrno>

namespace nfsedge::fsx {

uint64_t MemFs::Ino(Handle h) const {
  auto it = open_.find(h);
  if (it == open_.end()) return 0;
  // A file whose last name is gone is gone here too (no open-unlinked files).
  return model_.has(it->second) ? it->second : 0;
}

int MemFs::Create(const std::string& path, uint32_t mode, Handle* h) {
  uint64_t ino = 0;
  ErrSet e = model_.Create(path, mode, &ino);
  if (!e.success()) return e.First();
  *h = next_handle_++;
  open_[*h] = ino;
  return 0;
}

int MemFs::Open(const std::string& path, Handle* h) {
  uint64_t ino = 0;
  ErrSet e = model_.OpenFile(path, &ino);
  if (!e.success()) return e.First();
  *h = next_handle_++;
  open_[*h] = ino;
  return 0;
}

int MemFs::Close(Handle h) { return open_.erase(h) == 1 ? 0 : -EBADF; }

int64_t MemFs::Pread(Handle h, uint64_t offset, size_t len, std::string* out) {
  const uint64_t ino = Ino(h);
  if (ino == 0) return -EBADF;
  *out = model_.Read(ino, offset, len);
  return static_cast<int64_t>(out->size());
}

int MemFs::Pwrite(Handle h, uint64_t offset, std::string_view data) {
  const uint64_t ino = Ino(h);
  if (ino == 0) return -EBADF;
  model_.Write(ino, offset, std::string(data));
  return 0;
}

int MemFs::Append(const std::string& path, std::string_view data) {
  uint64_t ino = 0;
  ErrSet e = model_.OpenFile(path, &ino);
  if (!e.success()) return e.First();
  model_.Write(ino, model_.node(ino).data.size(), std::string(data));
  return 0;
}

int MemFs::Ftruncate(Handle h, uint64_t size) {
  const uint64_t ino = Ino(h);
  if (ino == 0) return -EBADF;
  model_.Truncate(ino, size);
  return 0;
}

int MemFs::Truncate(const std::string& path, uint64_t size) {
  uint64_t ino = 0;
  ErrSet e = model_.OpenFile(path, &ino);
  if (!e.success()) return e.First();
  model_.Truncate(ino, size);
  return 0;
}

int MemFs::Fsync(Handle h) { return Ino(h) == 0 ? -EBADF : 0; }

int MemFs::Rename(const std::string& from, const std::string& to) {
  return model_.Rename(from, to).First();
}
int MemFs::Link(const std::string& existing, const std::string& path) {
  return model_.Link(existing, path).First();
}
int MemFs::Unlink(const std::string& path) { return model_.Unlink(path).First(); }
int MemFs::Symlink(const std::string& target, const std::string& path) {
  return model_.Symlink(target, path).First();
}
int MemFs::Readlink(const std::string& path, std::string* target) {
  return model_.Readlink(path, target).First();
}
int MemFs::Mkdir(const std::string& path, uint32_t mode) {
  return model_.Mkdir(path, mode).First();
}
int MemFs::Rmdir(const std::string& path) { return model_.Rmdir(path).First(); }
int MemFs::Chmod(const std::string& path, uint32_t mode) {
  return model_.Chmod(path, mode).First();
}
int MemFs::Utimes(const std::string& path, int64_t sec, uint32_t nsec) {
  return model_.Utimes(path, sec, nsec).First();
}
int MemFs::Lstat(const std::string& path, FsStat* st) { return model_.Lstat(path, st).First(); }
int MemFs::ReadDir(const std::string& path, std::vector<std::string>* names) {
  return model_.List(path, names).First();
}

}  // namespace nfsedge::fsx
