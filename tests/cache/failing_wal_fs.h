// A RocksDB file system for tests whose write-ahead log files fail, as a
// disk with an I/O error does.
#ifndef NFSEDGE_TESTS_CACHE_FAILING_WAL_FS_H_
#define NFSEDGE_TESTS_CACHE_FAILING_WAL_FS_H_

#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>

namespace nfsedge {

// A file system whose write-ahead log files refuse appends and syncs while
// `failing` is set, as a disk with an I/O error does, and count the syncs
// asked of them.
class FailingWalFs : public rocksdb::FileSystemWrapper {
 public:
  explicit FailingWalFs(std::shared_ptr<rocksdb::FileSystem> base)
      : rocksdb::FileSystemWrapper(std::move(base)) {}
  const char* Name() const override { return "FailingWalFs"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    if (failing_open) {
      refused_opens++;
      return rocksdb::IOStatus::IOError("injected at open");
    }
    rocksdb::IOStatus s = target()->NewWritableFile(name, o, out, dbg);
    if (s.ok() && name.ends_with(".log")) {
      *out = std::make_unique<File>(std::move(*out), failing, log_syncs);
    }
    return s;
  }
  std::atomic<bool> failing{false};
  std::atomic<bool> failing_open{false};  // no file can be made (the database cannot open)
  std::atomic<int> refused_opens{0};      // files not made for failing_open
  std::atomic<int> log_syncs{0};          // syncs of write-ahead log files asked

 private:
  class File : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> f, const std::atomic<bool>& failing,
         std::atomic<int>& syncs)
        : rocksdb::FSWritableFileOwnerWrapper(std::move(f)), failing_(failing), syncs_(syncs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& d, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (failing_) return rocksdb::IOStatus::IOError("injected");
      return FSWritableFileOwnerWrapper::Append(d, o, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& d, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& v,
                             rocksdb::IODebugContext* dbg) override {
      if (failing_) return rocksdb::IOStatus::IOError("injected");
      return FSWritableFileOwnerWrapper::Append(d, o, v, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      syncs_++;
      if (failing_) return rocksdb::IOStatus::IOError("injected");
      return FSWritableFileOwnerWrapper::Sync(o, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      syncs_++;
      if (failing_) return rocksdb::IOStatus::IOError("injected");
      return FSWritableFileOwnerWrapper::Fsync(o, dbg);
    }

   private:
    const std::atomic<bool>& failing_;
    std::atomic<int>& syncs_;
  };
};

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_CACHE_FAILING_WAL_FS_H_
