// ProxyProcess runs the nfsedge binary under test with a TOML config written
// from Options (format: conf/nfsedge.example.toml), logging to a file that
// tests print the tail of when they fail.
//
// Thread safety: not thread-safe (owns a Subprocess).

#ifndef NFSEDGE_TESTS_HARNESS_PROXY_PROCESS_H_
#define NFSEDGE_TESTS_HARNESS_PROXY_PROCESS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/status.h"
#include "harness/subprocess.h"
#include "harness/wait.h"

namespace nfsedge::harness {

// One [[export]] table.
struct ProxyExport {
  std::string path;           // Path clients MNT.
  std::string upstream_path;  // Path MNTed on the upstream.
  std::vector<std::string> clients = {"127.0.0.0/8"};
  std::string access = "rw";  // "rw" or "ro".
  bool root_squash = false;
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;
  std::string extra_toml;  // Raw lines for this table (e.g. "acregmin = 0").
};

// Runs `nfsedge <args>` (ProxyProcess::DefaultBinary()) and returns its exit
// code and output (both streams), e.g. a command over the control socket.
std::pair<int, std::string> RunNfsedge(const std::string& args);

class ProxyProcess {
 public:
  struct Options {
    std::string work_dir;  // REQUIRES: non-empty. nfsedge.toml and nfsedge.log go here.
    std::string binary;    // Empty: DefaultBinary().
    // [server]
    std::string listen = "127.0.0.1";
    uint16_t nfs_port = 30490;
    uint16_t mount_port = 30048;
    std::string rpcbind = "no";
    std::optional<uint64_t> max_record_size;  // Unset: the proxy's default.
    // [upstream]
    std::string upstream_host = "127.0.0.1";
    uint16_t upstream_nfs_port = 20490;
    uint16_t upstream_mount_port = 20048;
    bool privileged_port = false;
    // [log]
    std::string log_level = "debug";
    // [control] socket: empty = <work_dir>/control.sock (or a short path in
    // /tmp named after it when that is too long for a Unix socket), so that
    // proxies running side by side never share one; "none" = no socket.
    std::string control_socket;
    std::vector<ProxyExport> exports;
    // Raw TOML lines appended to [server] / [upstream], and tables appended
    // before the exports (e.g. a [cache] table), for options not modelled here.
    std::string extra_server_toml;
    std::string extra_upstream_toml;
    std::string extra_toml;
    std::vector<std::string> extra_args;
    Millis start_timeout = Millis(20000);
  };

  // The nfsedge binary: $NFSEDGE_BINARY if set, else the path CMake compiled
  // in ($<TARGET_FILE:nfsedge>, or <build>/proxy/nfsedge).
  static std::string DefaultBinary();
  // The config file Start writes. Tables that the extra TOML repeats (a
  // [log], [cache] or [write] table of a bench's --proxy-config) are folded
  // into the ones written before them (FoldTables).
  static std::string RenderConfig(const Options& options);
  // `toml` with every repeated [table] folded into its first occurrence:
  // the later one's lines are moved there and its header dropped, so that
  // appended tables add keys to earlier ones instead of redefining them (a
  // key given twice is still an error, reported by nfsedge). Arrays of
  // tables ([[export]]) and the lines before the first header stay as they
  // are.
  static std::string FoldTables(const std::string& toml);

  // Writes the config, starts `nfsedge --config FILE`, and waits until its NFS
  // and MOUNT ports accept TCP connections. Returns an error (with the log's
  // tail) if the binary is missing, exits, or the deadline passes.
  static StatusOr<std::unique_ptr<ProxyProcess>> Start(const Options& options);

  uint16_t nfs_port() const { return options_.nfs_port; }
  uint16_t mount_port() const { return options_.mount_port; }
  const std::string& host() const { return options_.listen; }
  std::string config_path() const { return options_.work_dir + "/nfsedge.toml"; }
  // The [control] socket's path ("" with control_socket = "none").
  std::string control_socket_path() const;
  const std::string& log_path() const { return process_->log_path(); }
  std::string LogTail(size_t max_lines = 60) const { return process_->LogTail(max_lines); }
  pid_t pid() const { return process_->pid(); }

  bool IsRunning() { return process_->IsRunning(); }
  // SIGTERM; SIGKILL after `grace`. Returns the exit status (a clean
  // shutdown is exit code 0).
  ExitStatus Stop(Millis grace = Millis(15000)) { return process_->Stop(grace); }

 private:
  ProxyProcess(Options options, std::unique_ptr<Subprocess> p)
      : options_(std::move(options)), process_(std::move(p)) {}

  const Options options_;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace nfsedge::harness

#endif  // NFSEDGE_TESTS_HARNESS_PROXY_PROCESS_H_
