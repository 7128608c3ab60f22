// nfsedge-load: many NFSv3 clients (libnfs, one TCP connection each) doing a
// mixed, verified workload against a server or nfsedge for a while; reports
// calls/s, latency percentiles per procedure, errors and verification, and
// exits non-zero on any error or wrong byte. See docs/robustness.md ("Load").
//
// Layout in the export: <dir>/shared/s<i> (read-only files of known content,
// written at the start) and <dir>/c<id>/f<n> (each connection's own files).

#include <poll.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "load/load_connection.h"

namespace nfsedge::load {
namespace {

// The value of `field` (kB) in /proc/<pid>/status, or 0.
uint64_t ProcStatusKb(int pid, const char* field) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) == 0) return std::stoull(line.substr(prefix.size()));
  }
  return 0;
}

// Creates <dir> and <dir>/shared with the shared files through `c`.
std::string Prepare(const LoadOptions& o, LoadConnection& c, SharedFiles* shared) {
  int status = 0;
  std::string fh;
  std::string err = c.SyncLookup(c.root_fh(), o.dir, &fh, &status);
  if (!err.empty()) return err;
  if (status == 0) return "'" + o.dir + "' exists in the export: remove it or choose --dir";
  if (!(err = c.SyncMkdir(c.root_fh(), o.dir, &shared->top_fh)).empty()) return err;
  if (!(err = c.SyncMkdir(shared->top_fh, "shared", &shared->dir_fh)).empty()) return err;
  fsx::Prng rng(MixKey(o.seed, 0x5a, 0));
  for (int i = 0; i < o.shared_files; ++i) {
    SharedFile f;
    f.name = "s" + std::to_string(i);
    f.size = rng.Range(4096, o.shared_max_bytes);
    f.key = MixKey(o.seed, 0, static_cast<uint64_t>(i) + 1);
    if (!(err = c.SyncCreate(shared->dir_fh, f.name, &f.fh)).empty()) return err;
    std::string data;
    for (uint64_t at = 0; at < f.size; at += o.max_io) {
      data.resize(std::min<uint64_t>(o.max_io, f.size - at));
      FillContent(f.key, at, data.size(), data.data());
      if (!(err = c.SyncWrite(f.fh, at, data)).empty()) return f.name + ": " + err;
    }
    shared->files.push_back(std::move(f));
  }
  return "";
}

struct ThreadResult {
  LoadStats stats;
  uint64_t load_calls = 0;  // calls answered between the start and the end of the load
};

// Drives `conns` until each has finished its final checks or failed.
void Run(const LoadOptions& o, const std::vector<LoadConnection*>& conns, ThreadResult* result,
         Clock::time_point end) {
  const uint64_t calls_at_start = result->stats.Calls();
  bool final = false;
  std::vector<pollfd> pfds;
  std::vector<LoadConnection*> live;
  auto last_check = Clock::now();
  while (true) {
    const auto now = Clock::now();
    if (!final && now >= end) {
      final = true;
      result->load_calls = result->stats.Calls() - calls_at_start;
    }
    pfds.clear();
    live.clear();
    for (LoadConnection* c : conns) {
      if (!c->done() && !c->busy()) c->IssueNext(final);
      if (c->done()) continue;
      live.push_back(c);
      pfds.push_back(pollfd{c->fd(), c->events(), 0});
    }
    if (live.empty()) break;
    const int n = poll(pfds.data(), pfds.size(), 50);
    for (size_t i = 0; n > 0 && i < live.size(); ++i) {
      if (pfds[i].revents != 0) live[i]->Service(pfds[i].revents);
    }
    if (now - last_check > std::chrono::milliseconds(200)) {
      for (LoadConnection* c : live) c->CheckDeadline(now);
      last_check = now;
    }
  }
  if (!final) result->load_calls = result->stats.Calls() - calls_at_start;
}

// Compares `path` on the server's disk with `want`. Returns "" iff equal.
std::string CompareFile(const std::string& path, const std::string& want) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return path + ": cannot open";
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (got.size() != want.size()) {
    return path + ": " + std::to_string(got.size()) + " bytes, expected " +
           std::to_string(want.size());
  }
  if (got != want) {
    size_t at = 0;
    while (got[at] == want[at]) ++at;
    return path + ": wrong data at offset " + std::to_string(at);
  }
  return "";
}

// Checks every file of the healthy connections, and the shared files, on
// the server's disk. Returns the number of files compared.
uint64_t VerifyDisk(const LoadOptions& o, const SharedFiles& shared,
                    const std::vector<std::unique_ptr<LoadConnection>>& conns, LoadStats* stats) {
  const std::string top = o.verify_dir + "/" + o.dir;
  uint64_t files = 0;
  std::string want;
  for (const SharedFile& f : shared.files) {
    want.resize(f.size);
    FillContent(f.key, 0, f.size, want.data());
    std::string err = CompareFile(top + "/shared/" + f.name, want);
    if (!err.empty()) stats->Error(true, "disk: " + err);
    ++files;
  }
  for (const auto& c : conns) {
    if (c->failed()) continue;  // its model is not to be trusted
    const std::string dir = top + "/c" + std::to_string(c->id()) + "/";
    for (const OwnFile& f : c->files()) {
      f.Expected(0, f.size, &want);
      std::string err = CompareFile(dir + f.name, want);
      if (!err.empty()) stats->Error(true, "disk: " + err);
      ++files;
    }
    for (const std::string& name : c->removed()) {
      struct stat st;
      if (stat((dir + name).c_str(), &st) == 0)
        stats->Error(true, "disk: " + dir + name + " exists");
    }
  }
  return files;
}

double Percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()));
  return sorted[i] / 1000.0;
}

void PrintLatencies(LoadStats& s, double seconds) {
  std::printf("%-12s %10s %9s %8s %8s %8s %8s %8s\n", "procedure", "calls", "calls/s", "p50 ms",
              "p90 ms", "p99 ms", "p99.9 ms", "max ms");
  std::vector<uint32_t> all;
  for (size_t p = 0; p < kProcs; ++p) {
    std::vector<uint32_t>& v = s.latency_us[p];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    all.insert(all.end(), v.begin(), v.end());
    std::printf("%-12s %10zu %9.0f %8.2f %8.2f %8.2f %8.2f %8.2f\n", ProcName(static_cast<Proc>(p)),
                v.size(), v.size() / seconds, Percentile(v, 0.5), Percentile(v, 0.9),
                Percentile(v, 0.99), Percentile(v, 0.999), v.back() / 1000.0);
  }
  std::sort(all.begin(), all.end());
  std::printf("%-12s %10zu %9.0f %8.2f %8.2f %8.2f %8.2f %8.2f\n", "all", all.size(),
              all.size() / seconds, Percentile(all, 0.5), Percentile(all, 0.9),
              Percentile(all, 0.99), Percentile(all, 0.999), all.empty() ? 0 : all.back() / 1000.0);
}

int Main(int argc, char** argv) {
  LoadOptions o;
  const std::string parse = ParseOptions(argc, argv, &o);
  if (!parse.empty()) {
    std::fprintf(stderr, "%s\n", parse.c_str());
    return parse == Usage() ? 0 : 2;
  }
  std::printf("nfsedge-load: %d connections, %d thread(s), %.0f s, seed %" PRIu64 ", %s:%u\n",
              o.connections, o.threads, o.duration_s, o.seed, o.server.c_str(), o.nfs_port);
  std::fflush(stdout);

  SharedFiles shared;
  LoadStats setup_stats;
  {
    LoadConnection setup(-1, o, nullptr, &setup_stats);
    std::string err = setup.Connect();
    if (err.empty()) err = Prepare(o, setup, &shared);
    if (!err.empty()) {
      std::fprintf(stderr, "nfsedge-load: set-up: %s\n", err.c_str());
      return 1;
    }
  }
  const uint64_t rss_before = ProcStatusKb(o.proxy_pid, "VmRSS");
  std::vector<ThreadResult> results(o.threads);
  std::vector<std::unique_ptr<LoadConnection>> conns;
  const auto connect_start = Clock::now();
  for (int i = 0; i < o.connections; ++i) {
    conns.push_back(std::make_unique<LoadConnection>(i, o, &shared, &results[i % o.threads].stats));
    const std::string err = conns.back()->Connect();
    if (!err.empty()) {
      std::fprintf(stderr, "nfsedge-load: connection %d: %s\n", i, err.c_str());
      return 1;
    }
  }
  const double connect_s = std::chrono::duration<double>(Clock::now() - connect_start).count();
  const uint64_t rss_connected = ProcStatusKb(o.proxy_pid, "VmRSS");
  std::printf("connected %d in %.1f s\n", o.connections, connect_s);
  std::fflush(stdout);

  std::atomic<bool> running{true};
  std::atomic<uint64_t> rss_max{rss_connected};
  std::thread sampler([&] {
    while (running.load()) {
      const uint64_t rss = ProcStatusKb(o.proxy_pid, "VmRSS");
      if (rss > rss_max.load()) rss_max.store(rss);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(o.duration_s));
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    std::vector<LoadConnection*> mine;
    for (size_t i = t; i < conns.size(); i += o.threads) mine.push_back(conns[i].get());
    threads.emplace_back([&o, mine, &results, t, end] { Run(o, mine, &results[t], end); });
  }
  for (std::thread& t : threads) t.join();
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();
  running.store(false);
  sampler.join();
  const uint64_t hwm = ProcStatusKb(o.proxy_pid, "VmHWM");

  LoadStats stats;
  uint64_t load_calls = 0;
  for (ThreadResult& r : results) {
    stats.Merge(r.stats);
    load_calls += r.load_calls;
  }
  const uint64_t disk_files = o.verify_dir.empty() ? 0 : VerifyDisk(o, shared, conns, &stats);
  const double load_s = std::max(1e-3, std::min(total_s, o.duration_s));

  std::printf("load %.1f s, final commits and read-backs %.1f s\n", load_s, total_s - load_s);
  PrintLatencies(stats, total_s);
  std::printf("read %.1f MB (%.1f MB verified, %" PRIu64 " short reads), written %.1f MB\n",
              stats.bytes_read / 1e6, stats.bytes_verified / 1e6, stats.short_reads,
              stats.bytes_written / 1e6);
  if (o.proxy_pid > 0) {
    std::printf("server memory: VmRSS %" PRIu64 " KiB before the connections, %" PRIu64
                " KiB with all connected (%.1f KiB per connection), max %" PRIu64
                " KiB during the load; VmHWM %" PRIu64 " KiB\n",
                rss_before, rss_connected,
                (static_cast<double>(rss_connected) - rss_before) / o.connections, rss_max.load(),
                hwm);
  }
  if (!o.verify_dir.empty()) std::printf("disk: %" PRIu64 " files compared\n", disk_files);
  for (const std::string& m : stats.messages) std::fprintf(stderr, "error: %s\n", m.c_str());
  const bool pass = stats.errors == 0 && stats.mismatches == 0;
  std::printf(
      "result: %s calls=%" PRIu64 " load_calls_per_s=%.0f errors=%" PRIu64 " mismatches=%" PRIu64
      " verified_bytes=%" PRIu64 " disk_files=%" PRIu64 " rss_before_kb=%" PRIu64
      " rss_connected_kb=%" PRIu64 " rss_max_kb=%" PRIu64 " hwm_kb=%" PRIu64 "\n",
      pass ? "PASS" : "FAIL", stats.Calls(), load_calls / load_s, stats.errors, stats.mismatches,
      stats.bytes_verified, disk_files, rss_before, rss_connected, rss_max.load(), hwm);
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace nfsedge::load

int main(int argc, char** argv) { return nfsedge::load::Main(argc, argv); }
