// nfsedge: NFSv3 caching proxy for branch offices.
//
//   nfsedge --config FILE          run the proxy
//   nfsedge --check-config FILE    validate FILE and exit (0 = valid)
//   nfsedge COMMAND [ARG] [--socket PATH | --config FILE]
//                                  talk to the running daemon over its control
//                                  socket (proxy/control.h): status,
//                                  drop-cache [PATH], flush, warm PATH, reload
#include <malloc.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "proxy/config.h"
#include "proxy/control.h"
#include "proxy/daemon.h"
#include "rpc/log.h"

namespace {

constexpr const char* kUsage =
    "usage: nfsedge --config FILE\n"
    "       nfsedge --check-config FILE\n"
    "       nfsedge --version\n"
    "       nfsedge status|flush|reload [--socket PATH | --config FILE]\n"
    "       nfsedge drop-cache [PATH] [--socket PATH | --config FILE]\n"
    "       nfsedge warm PATH [--socket PATH | --config FILE]\n"
    "  (the control socket is [control] socket of --config FILE, by default of\n"
    "   /etc/nfsedge/nfsedge.toml, else /run/nfsedge/control.sock)\n";

constexpr const char* kDefaultConfig = "/etc/nfsedge/nfsedge.toml";

bool IsCommand(const std::string& a) {
  return a == "status" || a == "drop-cache" || a == "flush" || a == "warm" || a == "reload";
}

// `nfsedge COMMAND ...`: a client of the control socket.
int RunCommand(int argc, char** argv) {
  std::string command = argv[1], argument, socket, config_path;
  bool explicit_config = false;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else if (arg == "--config" && i + 1 < argc) {
      config_path = argv[++i];
      explicit_config = true;
    } else if (arg == "--socket" || arg == "--config") {
      std::fprintf(stderr, "nfsedge %s: %s needs a %s\n%s", command.c_str(), argv[i],
                   arg == "--socket" ? "PATH" : "FILE", kUsage);
      return 2;
    } else if (arg.empty()) {
      // "drop-cache $DIR" with DIR unset must not become "drop-cache" (all).
      std::fprintf(stderr, "nfsedge %s: an empty PATH\n%s", command.c_str(), kUsage);
      return 2;
    } else if (arg.rfind("--", 0) != 0 && argument.empty()) {
      argument = arg;
    } else {
      std::fprintf(stderr, "nfsedge %s: unexpected argument '%s'\n%s", command.c_str(), argv[i],
                   kUsage);
      return 2;
    }
  }
  bool needs_arg = command == "warm";
  bool takes_arg = needs_arg || command == "drop-cache";
  if (needs_arg && argument.empty()) {
    std::fprintf(stderr, "nfsedge %s: needs the PATH (as clients see it) to walk\n%s",
                 command.c_str(), kUsage);
    return 2;
  }
  if (!takes_arg && !argument.empty()) {
    std::fprintf(stderr, "nfsedge %s: unexpected argument '%s'\n%s", command.c_str(),
                 argument.c_str(), kUsage);
    return 2;
  }
  if (socket.empty()) {
    if (config_path.empty()) config_path = kDefaultConfig;
    nfsedge::StatusOr<nfsedge::Config> config = nfsedge::LoadConfig(config_path);
    if (config.ok()) {
      socket = config->control.socket;
    } else if (explicit_config) {
      std::fprintf(stderr, "nfsedge: invalid config:\n%s\n", config.status().message().c_str());
      return 2;
    } else {
      socket = nfsedge::ControlConfig().socket;
    }
  }
  if (socket.empty()) {
    std::fprintf(stderr, "nfsedge: the config turns the control socket off ([control] socket)\n");
    return 2;
  }
  return nfsedge::RunControlCommand(socket, command, argument);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && IsCommand(argv[1])) return RunCommand(argc, argv);
  std::string config_path;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--config" || arg == "--check-config") && i + 1 < argc) {
      check_only = arg == "--check-config";
      config_path = argv[++i];
    } else if (arg == "--config" || arg == "--check-config") {
      std::fprintf(stderr, "nfsedge: %s needs a FILE\n%s", argv[i], kUsage);
      return 2;
    } else if (arg == "--version") {
      std::printf("nfsedge 0.1.0\n");
      return 0;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "nfsedge: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (config_path.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  nfsedge::StatusOr<nfsedge::Config> config = nfsedge::LoadConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "nfsedge: invalid config:\n%s\n", config.status().message().c_str());
    return 1;
  }
  if (check_only) {
    std::printf("%s: OK (%zu export(s))\n", config_path.c_str(), config->exports.size());
    return 0;
  }
  nfsedge::SetLogLevel(config->log_level);
  nfsedge::ConfigureLogging(config->log);
  std::signal(SIGPIPE, SIG_IGN);
  // Records of up to a few MiB (gathered WRITEs, READ replies) are built and
  // freed on every round trip. By default glibc maps each one afresh or
  // gives the heap's top back to the kernel after it: every round trip then
  // pays a page fault per 4 KiB of every copy. Keep such buffers in the heap
  // and keep up to 64 MiB of freed heap for the next ones.
  mallopt(M_MMAP_THRESHOLD, 8 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  nfsedge::Daemon daemon(std::move(*config));
  nfsedge::Status s = daemon.Start();
  if (!s.ok()) {
    NFSEDGE_LOG(kError) << "cannot start: " << s.ToString();
    return 1;
  }
  return daemon.Run();
}
