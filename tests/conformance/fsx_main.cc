// nfsedge-fsx: the project's randomized file-system exerciser (in the manner of fsx and
// fsstress). See docs/conformance.md and `nfsedge-fsx --help`.
//
// Exit status: 0 no difference; 1 a difference (the report and a replay command are
// printed); 2 usage error; 3 setup failure (mount, working directory).

#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance/exerciser.h"
#include "conformance/fs.h"
#include "conformance/mem_fs.h"
#include "conformance/posix_fs.h"
#include "conformance/tree_walk.h"
#ifdef NFSEDGE_FSX_WITH_LIBNFS
#include "conformance/libnfs_fs.h"
#endif

namespace nfsedge::fsx {
namespace {

constexpr int kExitDifference = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;

constexpr char kUsage[] = R"(usage: nfsedge-fsx BACKEND [OPTIONS]

Runs a random sequence of file-system calls, drawn from --seed, in a working directory
it creates, and checks every result against an in-memory model. Stops at the first
difference with the step, the last operations and a command that replays them.

BACKEND (one of):
  --dir PATH        system calls under PATH (e.g. on a kernel NFS mount); PATH is the
                    working directory and must not exist (see --clean)
  --url URL         libnfs client: nfs://HOST/EXPORT?version=3&nfsport=N&mountport=M
  --path NAME       with --url: the working directory in the export (default fsx-SEED)
  --mem             in memory: prints the fingerprint a seed must give
SECOND CLIENT (close-to-open between two clients on one tree):
  --url2 URL        a second libnfs connection (its own mount) to the same export
  --dir2 PATH       a second view of the working directory (last component as --dir's),
                    e.g. a second kernel mount (nosharecache, noac); calls that fail with
                    ESTALE are repeated (a handle the other client replaced)
  --clients 2       with --mem: two clients on one in-memory tree (same sequence)
OPTIONS:
  --seed N          the seed (default 1)
  --steps N         operations to run (default 1000)
  --replay-to STEP  run up to STEP and print the last --history operations
  --history N       operations printed with a difference (default 40)
  --max-file-size B largest file (default 2097152)
  --max-write B     largest single write (default 1052669)
  --max-entries N   names in the tree (default 48)
  --max-depth N     directory nesting (default 3)
  --extra-names N   N more names in the pool (default 0: 12 names), with a larger
                    --max-entries for directories of several READDIR replies
  --verify-every N  compare the whole tree every N steps (default: only at the end)
  --progress N      print a progress line every N steps
  --clean           remove the working directory first if it exists
  --verbose         print every operation
  --avoid-same-file-rename
                    no rename onto another name of the same file (a known nfsedge
                    bug, docs/conformance.md); changes the sequence
)";

struct Args {
  Options options;
  std::string dir, dir2, url, url2, path;
  bool mem = false;
  size_t clients = 1;
  bool clean = false;
  std::vector<std::string> replay;  // argv to repeat in the replay command
};

bool ParseU64(const char* s, uint64_t* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return false;
  *v = x;
  return true;
}

// One command-line flag: whether it takes a value, and what it sets.
struct Flag {
  const char* name;
  bool takes_value;
  bool shapes_replay;                          // Repeated in the replay command.
  std::function<bool(const char* value)> set;  // Returns false iff the value is bad.
};

std::vector<Flag> Flags(Args* a) {
  Options& o = a->options;
  auto text = [](std::string* field) {
    return [field](const char* v) {
      *field = v;
      return true;
    };
  };
  auto u64 = [](uint64_t* field) { return [field](const char* v) { return ParseU64(v, field); }; };
  auto size = [](size_t* field) {
    return [field](const char* v) {
      uint64_t n = 0;
      if (!ParseU64(v, &n)) return false;
      *field = static_cast<size_t>(n);
      return true;
    };
  };
  auto on = [](bool* field) {
    return [field](const char*) {
      *field = true;
      return true;
    };
  };
  return {
      {"--dir", true, true, text(&a->dir)},
      {"--dir2", true, true, text(&a->dir2)},
      {"--url", true, true, text(&a->url)},
      {"--url2", true, true, text(&a->url2)},
      {"--path", true, true, text(&a->path)},
      {"--mem", false, true, on(&a->mem)},
      {"--clients", true, true, size(&a->clients)},
      {"--seed", true, true, u64(&o.seed)},
      {"--steps", true, false, u64(&o.steps)},
      {"--replay-to", true, false,
       [&o](const char* v) { return (o.dump_history = ParseU64(v, &o.steps)); }},
      {"--history", true, true, size(&o.history)},
      {"--max-file-size", true, true, u64(&o.max_file_size)},
      {"--max-write", true, true, u64(&o.max_write)},
      {"--max-entries", true, true, size(&o.max_entries)},
      {"--max-depth", true, true, size(&o.max_depth)},
      {"--extra-names", true, true, size(&o.extra_names)},
      {"--verify-every", true, true, u64(&o.verify_every)},
      {"--progress", true, true, u64(&o.progress_every)},
      {"--avoid-same-file-rename", false, true, on(&o.avoid_same_file_rename)},
      {"--clean", false, false, on(&a->clean)},
      {"--verbose", false, true, on(&o.verbose)},
  };
}

// Returns false (after printing why) on a usage error.
bool Parse(int argc, char** argv, Args* a) {
  Options& o = a->options;
  const std::vector<Flag> flags = Flags(a);
  for (int i = 1; i < argc; ++i) {
    const std::string name = argv[i];
    if (name == "--help" || name == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags) {
      if (name == f.name) flag = &f;
    }
    if (flag == nullptr) {
      std::fprintf(stderr, "nfsedge-fsx: unknown option %s\n%s", name.c_str(), kUsage);
      return false;
    }
    const char* value = "";
    if (flag->takes_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "nfsedge-fsx: %s needs a value\n", name.c_str());
        return false;
      }
      value = argv[++i];
    }
    if (!flag->set(value)) {
      std::fprintf(stderr, "nfsedge-fsx: %s: not a number: %s\n", name.c_str(), value);
      return false;
    }
    if (flag->shapes_replay) {
      a->replay.push_back(name);
      if (flag->takes_value) a->replay.push_back(value);
    }
  }
  const int backends = !a->dir.empty() + !a->url.empty() + a->mem;
  if (backends != 1) {
    std::fprintf(stderr, "nfsedge-fsx: give exactly one of --dir, --url, --mem\n%s", kUsage);
    return false;
  }
  if (!a->dir2.empty() + !a->url2.empty() + (a->clients == 2) > 1 || a->clients < 1 ||
      a->clients > 2 || (a->clients == 2 && !a->mem)) {
    std::fprintf(stderr,
                 "nfsedge-fsx: at most one second client (--url2, --dir2, or "
                 "--clients 2 with --mem)\n");
    return false;
  }
  if (o.max_file_size < 1 || o.max_write < 1 || o.max_entries < 1 || o.max_depth < 1 ||
      o.history < 1) {
    std::fprintf(stderr, "nfsedge-fsx: sizes and counts must be positive\n");
    return false;
  }
  return true;
}

// Splits "/a/b/c" into the root "/a/b" and the name "c" ("c" alone: root ".").
void SplitDir(std::string path, std::string* root, std::string* name) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) {
    *root = ".";
    *name = path;
  } else {
    *root = slash == 0 ? "/" : path.substr(0, slash);
    *name = path.substr(slash + 1);
  }
}

// Opens the Fs for --dir/--url (or the second client's). Returns nullptr on error.
std::unique_ptr<Fs> OpenBackend(const std::string& dir, const std::string& url, std::string* name) {
  if (!dir.empty()) {
    std::string root;
    SplitDir(dir, &root, name);
    return std::make_unique<PosixFs>(root);
  }
#ifdef NFSEDGE_FSX_WITH_LIBNFS
  std::string error;
  std::unique_ptr<Fs> fs = ConnectLibnfs(url, &error);
  if (fs == nullptr) std::fprintf(stderr, "nfsedge-fsx: %s\n", error.c_str());
  return fs;
#else
  std::fprintf(stderr, "nfsedge-fsx: this build has no libnfs (--url %s): use nfsedge-fsx\n",
               url.c_str());
  return nullptr;
#endif
}

int Main(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, &a)) return kExitUsage;
  Options& o = a.options;
  ::umask(0);  // PosixFs: modes are read back as given.

  std::vector<std::unique_ptr<Fs>> owned;
  std::string name;
  if (a.mem) {
    owned.push_back(std::make_unique<MemFs>());
    name = "fsx";
  } else {
    owned.push_back(OpenBackend(a.dir, a.url, &name));
    if (owned.back() == nullptr) return kExitSetup;
  }
  if (!a.url.empty()) name = a.path.empty() ? "fsx-" + std::to_string(o.seed) : a.path;
  o.workdir = name;
  if (!a.dir2.empty() || !a.url2.empty()) {
    std::string name2;
    owned.push_back(OpenBackend(a.dir2, a.url2, &name2));
    if (owned.back() == nullptr) return kExitSetup;
    if (!a.dir2.empty() && name2 != name) {
      std::fprintf(stderr, "nfsedge-fsx: --dir2 must end in the working directory's name %s\n",
                   name.c_str());
      return kExitUsage;
    }
  }
  // Two kernel clients: see Options::retry_stale.
  o.retry_stale = !a.dir2.empty();
  std::vector<Fs*> clients;
  for (auto& fs : owned) clients.push_back(fs.get());
  if (a.clients == 2) clients.push_back(owned[0].get());

  if (a.clean) {
    std::string error;
    if (RemoveTree(*clients[0], o.workdir, &error) != 0) {
      std::fprintf(stderr, "nfsedge-fsx: --clean: %s\n", error.c_str());
      return kExitSetup;
    }
  }

  std::printf("nfsedge-fsx: seed=%" PRIu64 " steps=%" PRIu64 " clients=%zu workdir=%s via %s\n",
              o.seed, o.steps, clients.size(), o.workdir.c_str(), clients[0]->Describe().c_str());
  std::fflush(stdout);
  Exerciser ex(o, clients, stdout);
  Result r = ex.Run();
  if (r.setup_failed) {
    std::fprintf(stdout, "nfsedge-fsx: SETUP FAILED: %s\n", r.failure.c_str());
    return kExitSetup;
  }
  std::string counts;
  for (const auto& [op, count] : r.op_counts) {
    counts += (counts.empty() ? "" : ",") + op + "=" + std::to_string(count);
  }
  if (!r.ok) {
    std::string replay = "nfsedge-fsx";
    for (const std::string& arg : a.replay) {
      replay += " " + (arg.find_first_of(" ?&") != std::string::npos ? "'" + arg + "'" : arg);
    }
    replay += " --clean --replay-to " +
              std::to_string(r.failed_step != 0 ? r.failed_step : r.steps_done) + " --verbose";
    std::printf("nfsedge-fsx: FAIL seed=%" PRIu64 " step=%" PRIu64 "\n%sreplay: %s\n", o.seed,
                r.failed_step, r.failure.c_str(), replay.c_str());
    return kExitDifference;
  }
  std::printf("nfsedge-fsx: OK seed=%" PRIu64 " steps=%" PRIu64
              " clients=%zu fingerprint=%s ops=%s\n",
              o.seed, r.steps_done, clients.size(), r.fingerprint.c_str(), counts.c_str());
  return 0;
}

}  // namespace
}  // namespace nfsedge::fsx

int main(int argc, char** argv) { return nfsedge::fsx::Main(argc, argv); }
