// The load generator's options, the known content of its files, and the
// statistics each thread keeps (latencies per procedure, errors).
//
// Thread safety: LoadOptions and SharedFiles are constant once the load
// starts; a LoadStats belongs to one thread until Merge().

#ifndef NFSEDGE_TESTS_LOAD_LOAD_TYPES_H_
#define NFSEDGE_TESTS_LOAD_LOAD_TYPES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace nfsedge::load {

// Procedures the generator sends, for the latency table.
enum class Proc {
  kGetattr,
  kLookup,
  kAccess,
  kReaddirplus,
  kRead,
  kWrite,
  kCommit,
  kCreate,
  kRemove,
  kMkdir,
  kCount
};
constexpr size_t kProcs = static_cast<size_t>(Proc::kCount);
const char* ProcName(Proc p);

// Operations of the workload mix (weights), in Proc order without MKDIR.
constexpr size_t kMixOps = 9;

struct LoadOptions {
  std::string server = "127.0.0.1";
  uint16_t nfs_port = 2049;
  uint16_t mount_port = 20048;
  std::string export_path = "/export";
  int connections = 64;
  int threads = 1;
  double duration_s = 10;
  uint64_t seed = 1;
  std::string dir = "nfsedge-load";  // Created under the export; must not exist.
  int shared_files = 16;
  uint64_t shared_max_bytes = 1 << 20;  // Shared file sizes: 4 KiB .. this.
  int own_files = 4;                    // Files per connection at most.
  uint64_t own_max_bytes = 256 << 10;   // Own files grow to this at most.
  uint32_t max_io = 32 << 10;           // Largest READ and WRITE.
  // getattr, lookup, access, readdirplus, read, write, commit, create, remove.
  std::array<unsigned, kMixOps> mix = {15, 15, 10, 5, 25, 15, 5, 5, 5};
  double timeout_s = 60;   // A call unanswered this long is an error.
  std::string verify_dir;  // The export's directory on the server's disk.
  int proxy_pid = 0;       // Sample this process's VmRSS / VmHWM.
};

// Returns "" iff argv parsed into *o, else the error.
std::string ParseOptions(int argc, char** argv, LoadOptions* o);
std::string Usage();

// Content: the byte at `offset` of content `key` (key 0 is zeros, a hole).
void FillContent(uint64_t key, uint64_t offset, size_t len, char* out);
uint64_t MixKey(uint64_t a, uint64_t b, uint64_t c);

struct SharedFile {
  std::string name;
  std::string fh;
  uint64_t size = 0;
  uint64_t key = 0;
};
// The read-only files every connection reads, in <dir>/shared.
struct SharedFiles {
  std::string top_fh;  // <dir>
  std::string dir_fh;  // <dir>/shared
  std::vector<SharedFile> files;
};

struct LoadStats {
  std::array<std::vector<uint32_t>, kProcs> latency_us;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_verified = 0;        // READ data compared with the expected content
  uint64_t errors = 0;                // unexpected status, lost connection, time-out
  uint64_t mismatches = 0;            // wrong data, sizes, names or verifiers
  uint64_t short_reads = 0;           // shorter than asked though not at the end (allowed)
  std::vector<std::string> messages;  // the first few errors

  void Error(bool mismatch, const std::string& what);
  void Merge(const LoadStats& other);
  uint64_t Calls() const;
};

}  // namespace nfsedge::load

#endif  // NFSEDGE_TESTS_LOAD_LOAD_TYPES_H_
