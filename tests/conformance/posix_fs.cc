#include "conformance/posix_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace nfsedge::fsx {
namespace {

int Err() { return -errno; }

int WriteAll(int fd, std::string_view data, bool positional, uint64_t offset) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = positional ? ::pwrite(fd, data.data() + done, data.size() - done,
                                      static_cast<off_t>(offset + done))
                           : ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Err();
    }
    if (n == 0) return -EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

PosixFs::~PosixFs() = default;

std::string PosixFs::Full(const std::string& path) const {
  if (path.empty()) return root_;
  if (!root_.empty() && root_.back() == '/') return root_ + path;
  return root_ + "/" + path;
}

int PosixFs::Create(const std::string& path, uint32_t mode, Handle* h) {
  int fd = ::open(Full(path).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return Err();
  *h = fd;
  return 0;
}

int PosixFs::Open(const std::string& path, Handle* h) {
  int fd = ::open(Full(path).c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Err();
  *h = fd;
  return 0;
}

int PosixFs::Close(Handle h) { return ::close(h) == 0 ? 0 : Err(); }

int64_t PosixFs::Pread(Handle h, uint64_t offset, size_t len, std::string* out) {
  out->resize(len);
  size_t done = 0;
  while (done < len) {
    ssize_t n = ::pread(h, out->data() + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      out->clear();
      return Err();
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  return static_cast<int64_t>(done);
}

int PosixFs::Pwrite(Handle h, uint64_t offset, std::string_view data) {
  return WriteAll(h, data, true, offset);
}

int PosixFs::Append(const std::string& path, std::string_view data) {
  int fd = ::open(Full(path).c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return Err();
  int rc = WriteAll(fd, data, false, 0);
  if (::close(fd) != 0 && rc == 0) rc = Err();
  return rc;
}

int PosixFs::Ftruncate(Handle h, uint64_t size) {
  return ::ftruncate(h, static_cast<off_t>(size)) == 0 ? 0 : Err();
}

int PosixFs::Truncate(const std::string& path, uint64_t size) {
  return ::truncate(Full(path).c_str(), static_cast<off_t>(size)) == 0 ? 0 : Err();
}

int PosixFs::Fsync(Handle h) { return ::fsync(h) == 0 ? 0 : Err(); }

int PosixFs::Rename(const std::string& from, const std::string& to) {
  return ::rename(Full(from).c_str(), Full(to).c_str()) == 0 ? 0 : Err();
}

int PosixFs::Link(const std::string& existing, const std::string& path) {
  return ::link(Full(existing).c_str(), Full(path).c_str()) == 0 ? 0 : Err();
}

int PosixFs::Unlink(const std::string& path) {
  return ::unlink(Full(path).c_str()) == 0 ? 0 : Err();
}

int PosixFs::Symlink(const std::string& target, const std::string& path) {
  return ::symlink(target.c_str(), Full(path).c_str()) == 0 ? 0 : Err();
}

int PosixFs::Readlink(const std::string& path, std::string* target) {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink(Full(path).c_str(), buf.data(), buf.size());
  if (n < 0) return Err();
  buf.resize(static_cast<size_t>(n));
  *target = std::move(buf);
  return 0;
}

int PosixFs::Mkdir(const std::string& path, uint32_t mode) {
  return ::mkdir(Full(path).c_str(), mode) == 0 ? 0 : Err();
}

int PosixFs::Rmdir(const std::string& path) { return ::rmdir(Full(path).c_str()) == 0 ? 0 : Err(); }

int PosixFs::Chmod(const std::string& path, uint32_t mode) {
  return ::chmod(Full(path).c_str(), mode) == 0 ? 0 : Err();
}

int PosixFs::Utimes(const std::string& path, int64_t sec, uint32_t nsec) {
  struct timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = static_cast<time_t>(sec);
  ts[0].tv_nsec = ts[1].tv_nsec = static_cast<long>(nsec);
  return ::utimensat(AT_FDCWD, Full(path).c_str(), ts, 0) == 0 ? 0 : Err();
}

int PosixFs::Lstat(const std::string& path, FsStat* st) {
  struct stat s;
  if (::lstat(Full(path).c_str(), &s) != 0) return Err();
  st->type = S_ISREG(s.st_mode)   ? FileType::kFile
             : S_ISDIR(s.st_mode) ? FileType::kDir
             : S_ISLNK(s.st_mode) ? FileType::kSymlink
                                  : FileType::kOther;
  st->mode = s.st_mode & 07777;
  st->size = static_cast<uint64_t>(s.st_size);
  st->nlink = s.st_nlink;
  st->mtime_sec = s.st_mtim.tv_sec;
  st->mtime_nsec = static_cast<uint32_t>(s.st_mtim.tv_nsec);
  return 0;
}

int PosixFs::ReadDir(const std::string& path, std::vector<std::string>* names) {
  DIR* d = ::opendir(Full(path).c_str());
  if (d == nullptr) return Err();
  names->clear();
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names->push_back(e->d_name);
    }
    errno = 0;
  }
  int rc = errno != 0 ? Err() : 0;
  ::closedir(d);
  return rc;
}

}  // namespace nfsedge::fsx
