// The only file that includes libnfs' headers (see libnfs_fs.h).
#include "conformance/libnfs_fs.h"

#include <fcntl.h>
#include <nfsc/libnfs.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

namespace nfsedge::fsx {
namespace {

constexpr int kTimeoutMs = 60000;

class LibnfsFs : public Fs {
 public:
  LibnfsFs(std::string url, nfs_context* ctx) : url_(std::move(url)), ctx_(ctx) {}
  ~LibnfsFs() override {
    for (auto& [h, fh] : open_) nfs_close(ctx_, fh);
    nfs_destroy_context(ctx_);
  }

  std::string Describe() const override { return "libnfs:" + url_; }

  int Create(const std::string& path, uint32_t mode, Handle* h) override {
    nfsfh* fh = nullptr;
    int rc =
        nfs_create(ctx_, P(path).c_str(), O_RDWR | O_CREAT | O_EXCL, static_cast<int>(mode), &fh);
    return rc < 0 ? rc : Keep(fh, h);
  }

  int Open(const std::string& path, Handle* h) override {
    nfsfh* fh = nullptr;
    int rc = nfs_open(ctx_, P(path).c_str(), O_RDWR, &fh);
    return rc < 0 ? rc : Keep(fh, h);
  }

  int Close(Handle h) override {
    auto it = open_.find(h);
    if (it == open_.end()) return -EBADF;
    int rc = nfs_close(ctx_, it->second);
    open_.erase(it);
    return rc < 0 ? rc : 0;
  }

  int64_t Pread(Handle h, uint64_t offset, size_t len, std::string* out) override {
    nfsfh* fh = Fh(h);
    if (fh == nullptr) return -EBADF;
    out->resize(len);
    size_t done = 0;
    while (done < len) {
      int n = nfs_pread(ctx_, fh, offset + done, len - done, out->data() + done);
      if (n < 0) {
        out->clear();
        return n;
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    out->resize(done);
    return static_cast<int64_t>(done);
  }

  int Pwrite(Handle h, uint64_t offset, std::string_view data) override {
    nfsfh* fh = Fh(h);
    if (fh == nullptr) return -EBADF;
    return WriteAll(fh, data, true, offset);
  }

  int Append(const std::string& path, std::string_view data) override {
    nfsfh* fh = nullptr;
    int rc = nfs_open(ctx_, P(path).c_str(), O_WRONLY | O_APPEND, &fh);
    if (rc < 0) return rc;
    rc = WriteAll(fh, data, false, 0);
    int closed = nfs_close(ctx_, fh);
    return rc != 0 ? rc : (closed < 0 ? closed : 0);
  }

  int Ftruncate(Handle h, uint64_t size) override {
    nfsfh* fh = Fh(h);
    if (fh == nullptr) return -EBADF;
    return Rc(nfs_ftruncate(ctx_, fh, size));
  }

  int Truncate(const std::string& path, uint64_t size) override {
    return Rc(nfs_truncate(ctx_, P(path).c_str(), size));
  }

  int Fsync(Handle h) override {
    nfsfh* fh = Fh(h);
    if (fh == nullptr) return -EBADF;
    return Rc(nfs_fsync(ctx_, fh));
  }

  int Rename(const std::string& from, const std::string& to) override {
    return Rc(nfs_rename(ctx_, P(from).c_str(), P(to).c_str()));
  }
  int Link(const std::string& existing, const std::string& path) override {
    return Rc(nfs_link(ctx_, P(existing).c_str(), P(path).c_str()));
  }
  int Unlink(const std::string& path) override { return Rc(nfs_unlink(ctx_, P(path).c_str())); }
  int Symlink(const std::string& target, const std::string& path) override {
    return Rc(nfs_symlink(ctx_, target.c_str(), P(path).c_str()));
  }

  int Readlink(const std::string& path, std::string* target) override {
    char* buf = nullptr;
    int rc = nfs_readlink2(ctx_, P(path).c_str(), &buf);
    if (rc < 0) return rc;
    *target = buf != nullptr ? buf : "";
    std::free(buf);
    return 0;
  }

  int Mkdir(const std::string& path, uint32_t mode) override {
    return Rc(nfs_mkdir2(ctx_, P(path).c_str(), static_cast<int>(mode)));
  }
  int Rmdir(const std::string& path) override { return Rc(nfs_rmdir(ctx_, P(path).c_str())); }
  int Chmod(const std::string& path, uint32_t mode) override {
    return Rc(nfs_chmod(ctx_, P(path).c_str(), static_cast<int>(mode)));
  }

  int Utimes(const std::string& path, int64_t sec, uint32_t nsec) override {
    struct timeval tv[2];
    tv[0].tv_sec = tv[1].tv_sec = static_cast<time_t>(sec);
    tv[0].tv_usec = tv[1].tv_usec = static_cast<suseconds_t>(nsec / 1000);
    return Rc(nfs_utimes(ctx_, P(path).c_str(), tv));
  }

  int Lstat(const std::string& path, FsStat* st) override {
    struct nfs_stat_64 s;
    int rc = nfs_lstat64(ctx_, P(path).c_str(), &s);
    if (rc < 0) return rc;
    const auto mode = static_cast<mode_t>(s.nfs_mode);
    st->type = S_ISREG(mode)   ? FileType::kFile
               : S_ISDIR(mode) ? FileType::kDir
               : S_ISLNK(mode) ? FileType::kSymlink
                               : FileType::kOther;
    st->mode = mode & 07777;
    st->size = s.nfs_size;
    st->nlink = s.nfs_nlink;
    st->mtime_sec = static_cast<int64_t>(s.nfs_mtime);
    st->mtime_nsec = static_cast<uint32_t>(s.nfs_mtime_nsec);
    return 0;
  }

  int ReadDir(const std::string& path, std::vector<std::string>* names) override {
    nfsdir* dir = nullptr;
    int rc = nfs_opendir(ctx_, P(path).c_str(), &dir);
    if (rc < 0) return rc;
    names->clear();
    while (nfsdirent* e = nfs_readdir(ctx_, dir)) {
      if (std::strcmp(e->name, ".") != 0 && std::strcmp(e->name, "..") != 0) {
        names->push_back(e->name);
      }
    }
    nfs_closedir(ctx_, dir);
    return 0;
  }

 private:
  static std::string P(const std::string& path) { return "/" + path; }
  static int Rc(int rc) { return rc < 0 ? rc : 0; }

  int Keep(nfsfh* fh, Handle* h) {
    *h = next_handle_++;
    open_[*h] = fh;
    return 0;
  }
  nfsfh* Fh(Handle h) const {
    auto it = open_.find(h);
    return it == open_.end() ? nullptr : it->second;
  }

  int WriteAll(nfsfh* fh, std::string_view data, bool positional, uint64_t offset) {
    size_t done = 0;
    while (done < data.size()) {
      int n = positional
                  ? nfs_pwrite(ctx_, fh, offset + done, data.size() - done, data.data() + done)
                  : nfs_write(ctx_, fh, data.size() - done, data.data() + done);
      if (n < 0) return n;
      if (n == 0) return -EIO;
      done += static_cast<size_t>(n);
    }
    return 0;
  }

  const std::string url_;
  nfs_context* const ctx_;
  std::map<Handle, nfsfh*> open_;
  Handle next_handle_ = 1;
};

}  // namespace

std::unique_ptr<Fs> ConnectLibnfs(const std::string& url, std::string* error) {
  nfs_context* ctx = nfs_init_context();
  if (ctx == nullptr) {
    *error = "nfs_init_context failed";
    return nullptr;
  }
  nfs_set_dircache(ctx, 0);  // before parsing, so that the URL may turn it back on
  nfs_url* u = nfs_parse_url_dir(ctx, url.c_str());
  if (u == nullptr) {
    *error = "bad URL " + url + ": " + nfs_get_error(ctx);
    nfs_destroy_context(ctx);
    return nullptr;
  }
  nfs_set_timeout(ctx, kTimeoutMs);
  int rc = nfs_mount(ctx, u->server, u->path);
  nfs_destroy_url(u);
  if (rc != 0) {
    *error = "mount " + url + ": " + nfs_get_error(ctx);
    nfs_destroy_context(ctx);
    return nullptr;
  }
  nfs_umask(ctx, 0);
  return std::make_unique<LibnfsFs>(url, ctx);
}

}  // namespace nfsedge::fsx
