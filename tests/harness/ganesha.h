// Ganesha runs nfs-ganesha 4.3 (FSAL VFS) in the foreground as the real NFSv3
// upstream: NFSv3 + MOUNTv3 only, TCP only, no NLM/RQUOTA/UDP, fixed ports,
// attribute cache off (Attr_Expiration_Time = 0, so changes made directly in
// the exported directories are visible at once), No_Root_Squash.
//
// REQUIRES: PrivateNetwork::Enter() and a running Rpcbind (ganesha's
// registration failure is fatal at start-up).
//
// Traps handled: a bad config does not stop ganesha, it runs on with "No
// export entries found" (Start() checks the log and fails); NFSv3 clients
// must mount the export's real Path (Pseudo is set to the same path).
//
// Emulated server disk: with Options::disk_sync_us > 0, ganesha runs with
// libnfsedge_slow_disk.so preloaded (tests/harness/slow_disk.c). Every
// fsync/fdatasync then costs disk_sync_us plus the bytes written since the
// previous flush at disk_mbps MB/s, one flush at a time for the whole server
// (no group commit). FSAL_VFS answers each FILE_SYNC / DATA_SYNC WRITE with
// pwritev() + fsync() and each COMMIT with fsync(), so this sets what a
// synchronous commit upstream costs, as nfsedge-wan sets what the WAN costs.
// Without it ganesha's fsync on the test machine's disk costs next to nothing.
//
// Thread safety: not thread-safe (owns a Subprocess).

#ifndef NFSEDGE_TESTS_HARNESS_GANESHA_H_
#define NFSEDGE_TESTS_HARNESS_GANESHA_H_

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/status.h"
#include "harness/subprocess.h"
#include "harness/wait.h"

namespace nfsedge::harness {

class Ganesha {
 public:
  struct Export {
    std::string path;                // Absolute; created (mode 0777) if missing.
    std::string access_type = "RW";  // "RW", "RO", ...
    std::string squash = "No_Root_Squash";
  };
  struct Options {
    std::string work_dir;  // REQUIRES: non-empty. Config, logs, recovery dir.
    // Empty: one export at <work_dir>/export.
    std::vector<Export> exports;
    std::string bind_address = "127.0.0.1";
    uint16_t nfs_port = 20490;
    uint16_t mount_port = 20048;
    std::string binary = "/usr/bin/ganesha.nfsd";
    Millis start_timeout = Millis(30000);
    // The emulated disk (see above): fixed cost of each flush in
    // microseconds; 0 = the real disk only (nothing is preloaded).
    uint32_t disk_sync_us = 0;
    // Rate at which a flush writes the bytes written since the previous one,
    // 10^6 bytes/s. REQUIRES: >= 1 when disk_sync_us > 0.
    uint32_t disk_mbps = 200;
    // The library to preload; empty = DefaultSlowDiskLibrary().
    std::string slow_disk_library;
  };

  // $NFSEDGE_SLOW_DISK_LIBRARY if set, else the path CMake compiled in
  // ($<TARGET_FILE:nfsedge_slow_disk>).
  static std::string DefaultSlowDiskLibrary();

  // Writes the config, starts ganesha, waits for "NFS SERVER INITIALIZED" in
  // its log and for its NFS port to accept connections. Returns an error (with
  // the log's tail) if it exits, reports a config error, or the deadline
  // passes; ganesha is stopped in that case. With disk_sync_us > 0, also if
  // the library is missing, disk_mbps is 0 or out of range, or ganesha did not
  // report the emulation active.
  static StatusOr<std::unique_ptr<Ganesha>> Start(const Options& options);

  // Returns the config file text for `options` (exports filled in).
  static std::string RenderConfig(const Options& options);

  // Path of export `i` (the path NFSv3 clients MNT).
  const std::string& export_path(size_t i = 0) const { return options_.exports.at(i).path; }
  uint16_t nfs_port() const { return options_.nfs_port; }
  uint16_t mount_port() const { return options_.mount_port; }
  const std::string& host() const { return options_.bind_address; }
  std::string log_path() const { return options_.work_dir + "/ganesha.log"; }
  // The tails of ganesha's log and of its stdout/stderr.
  std::string LogTail(size_t max_lines = 40) const;

  const Options& options() const { return options_; }
  bool IsRunning() { return process_->IsRunning(); }
  // SIGKILL, as a crash: no clean shutdown. Returns how it ended.
  ExitStatus Kill() {
    process_->Signal(SIGKILL);
    return process_->Stop();
  }
  // SIGTERM (a clean exit takes up to ~2 s), SIGKILL after 15 s.
  ExitStatus Stop() { return process_->Stop(Millis(15000)); }

 private:
  Ganesha(Options options, std::unique_ptr<Subprocess> p)
      : options_(std::move(options)), process_(std::move(p)) {}

  const Options options_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_GANESHA_H_
