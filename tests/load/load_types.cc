#include "load/load_types.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace nfsedge::load {
namespace {

constexpr const char* kProcNames[kProcs] = {"GETATTR", "LOOKUP", "ACCESS", "READDIRPLUS", "READ",
                                            "WRITE",   "COMMIT", "CREATE", "REMOVE",      "MKDIR"};
constexpr const char* kMixNames[kMixOps] = {"getattr", "lookup", "access", "readdirplus", "read",
                                            "write",   "commit", "create", "remove"};
constexpr size_t kMaxMessages = 20;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Parses an unsigned number with an optional K/M/G suffix into *v.
bool Number(const char* text, uint64_t* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long n = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  uint64_t scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1ull << 10, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1ull << 20, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1ull << 30, ++end;
  if (*end != '\0') return false;
  *v = n * scale;
  return true;
}

// "read=30,write=10": the weights named are set, the others kept.
std::string ParseMix(const std::string& text, std::array<unsigned, kMixOps>* mix) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return "--mix: '" + item + "' is not name=weight";
    const std::string name = item.substr(0, eq);
    size_t i = 0;
    while (i < kMixOps && name != kMixNames[i]) ++i;
    uint64_t w = 0;
    if (i == kMixOps) return "--mix: unknown operation '" + name + "'";
    if (!Number(item.c_str() + eq + 1, &w) || w > 1000) {
      return "--mix: weight of " + name + " must be 0-1000";
    }
    (*mix)[i] = static_cast<unsigned>(w);
  }
  unsigned total = 0;
  for (unsigned w : *mix) total += w;
  return total == 0 ? "--mix: all weights are 0" : "";
}

}  // namespace

const char* ProcName(Proc p) { return kProcNames[static_cast<size_t>(p)]; }

std::string Usage() {
  return "usage: nfsedge-load [options]\n"
         "  --server HOST          NFS server or proxy address (127.0.0.1)\n"
         "  --port N               its NFS port (2049)\n"
         "  --mount-port N         its MOUNT port (20048)\n"
         "  --export PATH          export to MNT (/export)\n"
         "  --connections N        TCP connections, each mounting the export (64)\n"
         "  --threads N            threads sharing the connections (1)\n"
         "  --duration S           seconds of load (10)\n"
         "  --seed N               seed of the workload and the contents (1)\n"
         "  --dir NAME             working directory created in the export (nfsedge-load)\n"
         "  --shared-files N       read-only files every connection reads (16)\n"
         "  --shared-max-bytes N   largest shared file, K/M suffixes (1M)\n"
         "  --own-files N          files per connection at most (4)\n"
         "  --own-max-bytes N      largest own file (256K)\n"
         "  --max-io N             largest READ and WRITE (32K)\n"
         "  --mix op=w,...         weights of getattr lookup access readdirplus read write\n"
         "                         commit create remove (15,15,10,5,25,15,5,5,5)\n"
         "  --timeout S            a call unanswered this long is an error (60)\n"
         "  --verify-dir PATH      the export's directory on the server's disk: compare the\n"
         "                         files there with what was written, at the end\n"
         "  --proxy-pid PID        report this process's resident memory (VmRSS, VmHWM)\n";
}

std::string ParseOptions(int argc, char** argv, LoadOptions* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") return Usage();
    if (i + 1 >= argc) return flag + ": missing value";
    const char* value = argv[++i];
    uint64_t n = 0;
    const bool numeric = Number(value, &n);
    auto want = [&](uint64_t lo, uint64_t hi) -> std::string {
      if (!numeric || n < lo || n > hi) {
        return flag + ": '" + value + "' is not a number in " + std::to_string(lo) + "-" +
               std::to_string(hi);
      }
      return "";
    };
    std::string err;
    if (flag == "--server")
      o->server = value;
    else if (flag == "--export")
      o->export_path = value;
    else if (flag == "--dir")
      o->dir = value;
    else if (flag == "--verify-dir")
      o->verify_dir = value;
    else if (flag == "--mix")
      err = ParseMix(value, &o->mix);
    else if (flag == "--port") {
      if ((err = want(1, 65535)).empty()) o->nfs_port = n;
    } else if (flag == "--mount-port") {
      if ((err = want(1, 65535)).empty()) o->mount_port = n;
    } else if (flag == "--connections") {
      if ((err = want(1, 65536)).empty()) o->connections = n;
    } else if (flag == "--threads") {
      if ((err = want(1, 256)).empty()) o->threads = n;
    } else if (flag == "--duration") {
      if ((err = want(0, 86400)).empty()) o->duration_s = n;
    } else if (flag == "--seed") {
      if ((err = want(0, UINT64_MAX)).empty()) o->seed = n;
    } else if (flag == "--shared-files") {
      if ((err = want(1, 4096)).empty()) o->shared_files = n;
    } else if (flag == "--shared-max-bytes") {
      if ((err = want(4096, 1ull << 30)).empty()) o->shared_max_bytes = n;
    } else if (flag == "--own-files") {
      if ((err = want(1, 1024)).empty()) o->own_files = n;
    } else if (flag == "--own-max-bytes") {
      if ((err = want(4096, 1ull << 30)).empty()) o->own_max_bytes = n;
    } else if (flag == "--max-io") {
      if ((err = want(4096, 1 << 20)).empty()) o->max_io = static_cast<uint32_t>(n);
    } else if (flag == "--timeout") {
      if ((err = want(1, 3600)).empty()) o->timeout_s = n;
    } else if (flag == "--proxy-pid") {
      if ((err = want(1, 1u << 30)).empty()) o->proxy_pid = n;
    } else
      return "unknown option " + flag + "\n" + Usage();
    if (!err.empty()) return err;
  }
  if (o->dir.empty() || o->dir.find('/') != std::string::npos) return "--dir: one plain name";
  if (o->threads > o->connections) o->threads = o->connections;
  return "";
}

uint64_t MixKey(uint64_t a, uint64_t b, uint64_t c) {
  return SplitMix(SplitMix(SplitMix(a) ^ b) ^ c) | 1;  // never 0, the hole
}

void FillContent(uint64_t key, uint64_t offset, size_t len, char* out) {
  if (key == 0) {
    std::memset(out, 0, len);
    return;
  }
  size_t i = 0;
  while (i < len) {
    const uint64_t at = offset + i;
    const uint64_t word = SplitMix(key ^ ((at >> 3) * 0xD6E8FEB86659FD93ull));
    for (unsigned b = at & 7; b < 8 && i < len; ++b, ++i)
      out[i] = static_cast<char>(word >> (8 * b));
  }
}

void LoadStats::Error(bool mismatch, const std::string& what) {
  ++(mismatch ? mismatches : errors);
  if (messages.size() < kMaxMessages) messages.push_back(what);
}

void LoadStats::Merge(const LoadStats& other) {
  for (size_t p = 0; p < kProcs; ++p) {
    latency_us[p].insert(latency_us[p].end(), other.latency_us[p].begin(),
                         other.latency_us[p].end());
  }
  bytes_read += other.bytes_read;
  bytes_written += other.bytes_written;
  bytes_verified += other.bytes_verified;
  errors += other.errors;
  mismatches += other.mismatches;
  short_reads += other.short_reads;
  for (const std::string& m : other.messages) {
    if (messages.size() < kMaxMessages) messages.push_back(m);
  }
}

uint64_t LoadStats::Calls() const {
  uint64_t n = 0;
  for (const auto& v : latency_us) n += v.size();
  return n;
}

}  // namespace nfsedge::load
