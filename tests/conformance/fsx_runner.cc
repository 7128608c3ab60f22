#include "conformance/fsx_runner.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "conformance/posix_fs.h"
#include "conformance/tree_walk.h"
#include "harness/files.h"

#ifndef NFSEDGE_FSX_BINARY
#define NFSEDGE_FSX_BINARY "nfsedge-fsx"
#endif
#ifndef NFSEDGE_FSX_STATIC_BINARY
#define NFSEDGE_FSX_STATIC_BINARY ""
#endif

namespace nfsedge::fsx_test {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

std::string FsxBinary() { return FromEnv("NFSEDGE_FSX_BINARY", NFSEDGE_FSX_BINARY); }
std::string FsxStaticBinary() {
  return FromEnv("NFSEDGE_FSX_STATIC_BINARY", NFSEDGE_FSX_STATIC_BINARY);
}

std::string NfsUrl(const std::string& host, uint16_t nfs_port, uint16_t mount_port,
                   const std::string& export_path) {
  return "nfs://" + host + export_path + "?version=3&nfsport=" + std::to_string(nfs_port) +
         "&mountport=" + std::to_string(mount_port);
}

std::string FingerprintOf(const std::string& output, uint64_t seed) {
  const std::string prefix = "nfsedge-fsx: OK seed=" + std::to_string(seed) + " ";
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    size_t at = line.find(" fingerprint=");
    if (at == std::string::npos) continue;
    at += 13;
    return line.substr(at, line.find(' ', at) - at);
  }
  return "";
}

harness::StatusOr<std::unique_ptr<FsxProcess>> FsxProcess::Start(const std::string& binary,
                                                                 std::vector<std::string> args,
                                                                 const std::string& log_path,
                                                                 uint64_t seed) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  std::unique_ptr<FsxProcess> p(new FsxProcess());
  p->start_ = Now();
  auto sub = harness::Subprocess::Start({.argv = argv, .log_path = log_path, .env = {}});
  if (!sub.ok()) return sub.status();
  p->process_ = std::move(sub).value();
  p->log_path_ = log_path;
  p->seed_ = seed;
  return p;
}

FsxOutcome FsxProcess::Wait(harness::Millis timeout) {
  FsxOutcome out;
  std::optional<harness::ExitStatus> exit = process_->WaitForExit(timeout);
  if (exit) {
    out.exit = *exit;
  } else {
    out.exit = process_->Stop(harness::Millis(2000));
    out.output = "(nfsedge-fsx did not finish in time and was stopped)\n";
  }
  out.seconds = Now() - start_;
  out.output += harness::ReadFile(log_path_);
  out.fingerprint = FingerprintOf(out.output, seed_);
  return out;
}

FsxOutcome RunFsx(const std::vector<std::string>& args, const std::string& log_path, uint64_t seed,
                  harness::Millis timeout) {
  auto p = FsxProcess::Start(FsxBinary(), args, log_path, seed);
  if (!p.ok()) {
    FsxOutcome out;
    out.output = p.status().message();
    return out;
  }
  return (*p)->Wait(timeout);
}

std::string ModelFingerprint(uint64_t seed, const std::vector<std::string>& options,
                             const std::string& log_path) {
  std::vector<std::string> args = {"--mem", "--seed", std::to_string(seed)};
  args.insert(args.end(), options.begin(), options.end());
  return RunFsx(args, log_path, seed, harness::Millis(900000)).fingerprint;
}

std::string DiskCanonical(const std::string& dir, std::string* error) {
  fsx::PosixFs fs(dir);
  std::string text;
  if (fsx::CanonicalTree(fs, "", &text, error) != 0) return "";
  return text;
}

}  // namespace nfsedge::fsx_test
