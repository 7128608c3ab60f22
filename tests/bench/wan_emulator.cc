#include "wan_emulator.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "harness/files.h"
#include "harness/wait.h"
#include "json.h"

namespace nfsedge::bench {
namespace {

using harness::Millis;
using harness::Status;
using harness::StatusOr;

constexpr Millis kStartTimeout(10000);
constexpr Millis kStatsTimeout(10000);
// The emulator must always stop by itself: a week, far beyond any run.
constexpr const char* kDuration = "604800";

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

}  // namespace

WanDelta WanStats::Minus(const WanStats& earlier) const {
  WanDelta d;
  d.calls = calls.Minus(earlier.calls);
  d.up_bytes = up_bytes - earlier.up_bytes;
  d.down_bytes = down_bytes - earlier.down_bytes;
  return d;
}

StatusOr<WanStats> ParseWanStats(const std::string& text) {
  auto json = Json::Parse(text);
  if (!json.ok()) return json.status();
  if (json->type() != Json::Type::kObject) return Status::Error("stats: not an object");
  WanStats s;
  s.up_bytes = static_cast<uint64_t>(json->NumberOr("up_bytes", 0));
  s.down_bytes = static_cast<uint64_t>(json->NumberOr("down_bytes", 0));
  s.connections = static_cast<uint64_t>(json->NumberOr("connections", 0));
  s.malformed_records = static_cast<uint64_t>(json->NumberOr("malformed_records", 0));
  s.non_rpc_streams = static_cast<uint64_t>(json->NumberOr("non_rpc_streams", 0));
  const Json* by_name = json->Find("calls_by_name");
  if (by_name == nullptr) return Status::Error("stats: no calls_by_name");
  for (const auto& [name, n] : by_name->members()) {
    s.calls.Add(name, static_cast<uint64_t>(n.number()));
  }
  return s;
}

StatusOr<std::unique_ptr<WanEmulator>> WanEmulator::Start(const Options& o) {
  const std::string stats = o.work_dir + "/wan-stats.json";
  const std::string log = o.work_dir + "/wan.log";
  std::vector<std::string> argv = {o.binary,
                                   "--duration",
                                   kDuration,
                                   "--stats",
                                   stats,
                                   "--delay-ms",
                                   Number(o.link.rtt_ms / 2),
                                   "--rate-bps",
                                   std::to_string(o.link.rate_bps),
                                   "--queue-bytes",
                                   std::to_string(o.link.queue_bytes)};
  for (const Target& t : o.targets) {
    argv.push_back("--map");
    argv.push_back("127.0.0.1:0=127.0.0.1:" + std::to_string(t.port) + (t.rpc ? "" : ",rpc=0"));
  }
  auto p = harness::Subprocess::Start(argv, log);
  if (!p.ok()) return p.status();
  std::unique_ptr<WanEmulator> w(new WanEmulator(std::move(p).value(), stats));
  std::string line;
  bool ready = harness::WaitUntil(
      [&] {
        std::string text = harness::ReadFile(log);
        size_t at = text.find("nfsedge-wan ready ");
        if (at == std::string::npos) return false;
        size_t end = text.find('\n', at);
        if (end == std::string::npos) return false;
        line = text.substr(at, end - at);
        return true;
      },
      kStartTimeout);
  if (!ready) {
    return Status::Error("nfsedge-wan did not become ready:\n" + w->process_->LogTail(20));
  }
  // "nfsedge-wan ready 127.0.0.1:41234=127.0.0.1:20490 ...", in --map order.
  std::istringstream items(line.substr(std::string("nfsedge-wan ready ").size()));
  std::string item;
  while (items >> item) {
    size_t colon = item.find(':'), eq = item.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon) {
      return Status::Error("cannot parse the ready line: " + line);
    }
    w->ports_.push_back(static_cast<uint16_t>(std::stoi(item.substr(colon + 1, eq - colon - 1))));
  }
  if (w->ports_.size() != o.targets.size()) return Status::Error("ready line: " + line);
  return w;
}

StatusOr<WanStats> WanEmulator::ReadStats() const {
  return ParseWanStats(harness::ReadFile(stats_path_));
}

StatusOr<WanStats> WanEmulator::Snapshot() {
  if (stopped_ || !process_->IsRunning()) {
    return Status::Error("nfsedge-wan is not running:\n" + process_->LogTail(20));
  }
  // The file is replaced atomically (rename): wait for it to reappear.
  unlink(stats_path_.c_str());
  process_->Signal(SIGUSR1);
  bool written = harness::WaitUntil([&] { return access(stats_path_.c_str(), F_OK) == 0; },
                                    kStatsTimeout, Millis(1));
  if (!written) return Status::Error("nfsedge-wan wrote no stats on SIGUSR1");
  return ReadStats();
}

StatusOr<WanStats> WanEmulator::Stop() {
  if (stopped_) return final_;
  stopped_ = true;
  unlink(stats_path_.c_str());
  harness::ExitStatus exit = process_->Stop(Millis(10000));
  if (!exit.success()) {
    final_ =
        Status::Error("nfsedge-wan exited with " + exit.ToString() + ":\n" + process_->LogTail(20));
  } else {
    final_ = ReadStats();
  }
  return final_;
}

}  // namespace nfsedge::bench
