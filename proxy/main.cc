// nfsedge: NFSv3 caching proxy for branch offices.
//
//   nfsedge --config FILE          run the proxy
//   nfsedge --check-config FILE    validate FILE and exit (0 = valid)
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "proxy/config.h"
#include "proxy/daemon.h"
#include "rpc/log.h"

namespace {

constexpr const char* kUsage =
    "usage: nfsedge --config FILE\n"
    "       nfsedge --check-config FILE\n"
    "       nfsedge --version\n";

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--config" || arg == "--check-config") && i + 1 < argc) {
      check_only = arg == "--check-config";
      config_path = argv[++i];
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
  std::signal(SIGPIPE, SIG_IGN);
  nfsedge::Daemon daemon(std::move(*config));
  nfsedge::Status s = daemon.Start();
  if (!s.ok()) {
    NFSEDGE_LOG(kError) << "cannot start: " << s.ToString();
    return 1;
  }
  return daemon.Run();
}
