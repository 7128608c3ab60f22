#include "harness/ganesha.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "harness/files.h"
#include "harness/slow_disk_params.h"

#ifndef NFSEDGE_SLOW_DISK_LIBRARY
#define NFSEDGE_SLOW_DISK_LIBRARY "libnfsedge_slow_disk.so"
#endif

namespace nfsedge::harness {

using Options = Ganesha::Options;

namespace {

Options WithDefaults(Ganesha::Options o) {
  if (o.exports.empty()) {
    o.exports.emplace_back();
    o.exports.back().path = o.work_dir + "/export";
  }
  return o;
}

// The environment that preloads the emulated disk into ganesha (none when
// it is off), or an error if it is asked for and cannot be had.
StatusOr<std::vector<std::string>> SlowDiskEnv(const Options& o) {
  std::vector<std::string> env;
  if (o.disk_sync_us == 0) return env;
  if (o.disk_sync_us > NFSEDGE_DISK_MAX_SYNC_US) {
    return Status::Error("Ganesha: disk_sync_us " + std::to_string(o.disk_sync_us) +
                         " is out of range (at most " + std::to_string(NFSEDGE_DISK_MAX_SYNC_US) +
                         ")");
  }
  if (o.disk_mbps == 0 || o.disk_mbps > NFSEDGE_DISK_MAX_MBPS) {
    return Status::Error("Ganesha: disk_mbps " + std::to_string(o.disk_mbps) +
                         " is out of range (1.." + std::to_string(NFSEDGE_DISK_MAX_MBPS) + ")");
  }
  const std::string lib =
      o.slow_disk_library.empty() ? Ganesha::DefaultSlowDiskLibrary() : o.slow_disk_library;
  // The loader wants it absolute (a relative path would be ganesha's cwd's).
  char* absolute = lib.empty() ? nullptr : realpath(lib.c_str(), nullptr);
  if (absolute == nullptr || access(absolute, R_OK) != 0) {
    std::free(absolute);
    return Status::Error("Ganesha: the emulated disk library was not found at '" + lib +
                         "' (build the `nfsedge_slow_disk` target or set "
                         "NFSEDGE_SLOW_DISK_LIBRARY)");
  }
  env.push_back("LD_PRELOAD=" + std::string(absolute));
  std::free(absolute);
  env.push_back("NFSEDGE_DISK_SYNC_US=" + std::to_string(o.disk_sync_us));
  env.push_back("NFSEDGE_DISK_MBPS=" + std::to_string(o.disk_mbps));
  return env;
}

}  // namespace

std::string Ganesha::DefaultSlowDiskLibrary() {
  const char* env = std::getenv("NFSEDGE_SLOW_DISK_LIBRARY");
  return env && *env ? env : NFSEDGE_SLOW_DISK_LIBRARY;
}

std::string Ganesha::RenderConfig(const Options& in) {
  Options o = WithDefaults(in);
  std::ostringstream c;
  c << "NFS_CORE_PARAM {\n"
    << "  Protocols = 3;\n"
    << "  Enable_NLM = false;\n"
    << "  Enable_RQUOTA = false;\n"
    << "  Enable_UDP = false;\n"
    << "  NFS_Port = " << o.nfs_port << ";\n"
    << "  MNT_Port = " << o.mount_port << ";\n"
    << "  Bind_addr = " << o.bind_address << ";\n"
    << "}\n"
    << "NFSv4 { RecoveryRoot = " << o.work_dir << "/recov; Graceless = true; }\n";
  int id = 1;
  for (const Export& e : o.exports) {
    c << "EXPORT {\n"
      << "  Export_Id = " << id++ << ";\n"
      << "  Path = " << e.path << ";\n"
      << "  Pseudo = " << e.path << ";\n"
      << "  Access_Type = " << e.access_type << ";\n"
      << "  Squash = " << e.squash << ";\n"
      << "  SecType = sys;\n"
      << "  Protocols = 3;\n"
      << "  Transports = TCP;\n"
      << "  Attr_Expiration_Time = 0;\n"
      << "  FSAL { Name = VFS; }\n"
      << "}\n";
  }
  c << "LOG { Default_Log_Level = EVENT; }\n";
  return c.str();
}

std::string Ganesha::LogTail(size_t max_lines) const {
  return "--- ganesha.log ---\n" + TailOfFile(log_path(), max_lines) +
         "--- ganesha stdout/stderr ---\n" + process_->LogTail(max_lines);
}

StatusOr<std::unique_ptr<Ganesha>> Ganesha::Start(const Options& in) {
  if (in.work_dir.empty()) return Status::Error("Ganesha: work_dir is required");
  Options o = WithDefaults(in);
  auto env = SlowDiskEnv(o);
  if (!env.ok()) return env.status();
  for (const std::string& dir : {o.work_dir, o.work_dir + "/recov"}) {
    Status s = MakeDirs(dir);
    if (!s.ok()) return s;
  }
  for (const Export& e : o.exports) {
    Status s = MakeDirs(e.path, 0777);
    if (!s.ok()) return s;
  }
  const std::string conf = o.work_dir + "/ganesha.conf";
  const std::string log = o.work_dir + "/ganesha.log";
  Status s = WriteFile(conf, RenderConfig(o));
  if (!s.ok()) return s;
  s = WriteFile(log, "");
  if (!s.ok()) return s;

  Subprocess::Options run;
  run.argv = {o.binary, "-F", "-f", conf, "-L", log, "-p", o.work_dir + "/ganesha.pid",
              "-N", "NIV_EVENT"};
  run.log_path = o.work_dir + "/ganesha.stdout";
  run.env = std::move(env).value();
  auto p = Subprocess::Start(run);
  if (!p.ok()) return p.status();
  std::unique_ptr<Ganesha> g(new Ganesha(o, std::move(p).value()));

  bool died = false;
  bool ready = WaitUntil(
      [&] {
        if (!g->process_->IsRunning()) return died = true;
        return ReadFile(log).find("NFS SERVER INITIALIZED") != std::string::npos &&
               TcpConnectable(o.bind_address, o.nfs_port) &&
               TcpConnectable(o.bind_address, o.mount_port);
      },
      o.start_timeout);
  std::string why;
  if (died) {
    why = "ganesha exited: " + g->process_->Stop().ToString();
  } else if (!ready) {
    why = "ganesha not ready in time";
  } else {
    std::string text = ReadFile(log) + ReadFile(o.work_dir + "/ganesha.stdout");
    for (const char* trap : {"No export entries found", "Config File"}) {
      if (text.find(trap) != std::string::npos) why = std::string("ganesha config error: ") + trap;
    }
    // The library says so at load; the loader only warns when it cannot
    // preload.
    if (why.empty() && o.disk_sync_us > 0 &&
        text.find("nfsedge_slow_disk: active") == std::string::npos) {
      why = "the emulated disk is not active in ganesha (LD_PRELOAD failed?)";
    }
  }
  if (!why.empty()) {
    std::string tail = g->LogTail();
    g->Stop();
    return Status::Error(why + "\n" + tail);
  }
  return g;
}

}  // namespace nfsedge::harness
