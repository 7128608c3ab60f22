// Exerciser: the heart of nfsedge-fsx. From a seed it draws a long sequence of file
// system calls (create, open, close, write, read, truncate, append, fsync, rename,
// link, unlink, symlink, readlink, mkdir, rmdir, chmod, utimes, readdir, stat) inside
// one working directory it creates, runs each through an Fs, and checks every result
// (data, attributes, names, and the errno class of calls the model says fail) against a
// Model of the expected tree. It stops at the first difference and reports the seed,
// the step and the last operations; the same seed and step count replay the same calls.
//
// The sequence depends only on the seed, the options and the model (never on what a
// backend answers), so one seed gives the same calls, and on success the same
// fingerprint, through every backend: PosixFs on a kernel NFS mount, LibnfsFs, MemFs.
//
// With two clients (two Fs on one tree, e.g. two libnfs connections), each step runs on
// one of them, drawn from the seed, and the exerciser keeps close-to-open: before a
// client touches a file's data or attributes, the other client's handles on that file
// are closed (which flushes them), and the client opens its own afresh. Files are never
// unlinked or replaced while open (an NFS client would silly-rename them).
//
// Thread safety: not thread-safe; Run() once.

#ifndef NFSEDGE_TESTS_CONFORMANCE_EXERCISER_H_
#define NFSEDGE_TESTS_CONFORMANCE_EXERCISER_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "conformance/fs.h"
#include "conformance/model.h"
#include "conformance/prng.h"

namespace nfsedge::fsx {

struct Options {
  uint64_t seed = 1;
  uint64_t steps = 1000;
  // The working directory, relative to every client's root. Run() creates it (it must
  // not exist) and leaves it, with the final tree, behind.
  std::string workdir = "fsx";
  size_t history = 40;                     // Operations printed with a failure.
  uint64_t max_file_size = 2u << 20;       // No write or truncate goes past this.
  uint64_t max_write = (1u << 20) + 4093;  // The largest single write.
  size_t max_entries = 48;                 // Names in the tree before creates turn to EEXIST.
  size_t max_depth = 3;                    // Directory nesting below the working directory.
  size_t max_open = 4;                     // Open handles over all clients.
  // Names beyond the 12 of the base pool ("wide-NNNN-..."), for directories that take
  // several READDIR replies (with a larger max_entries).
  size_t extra_names = 0;
  uint64_t verify_every = 0;    // Full tree check every N steps (0: at the end).
  uint64_t progress_every = 0;  // A progress line every N steps (0: none).
  bool verbose = false;         // Print every operation as it completes.
  bool dump_history = false;    // Print the last `history` operations at the end.
  // Steers around a known nfsedge bug (see docs/conformance.md): no rename onto another
  // name of the same file (that rename becomes a stat).
  bool avoid_same_file_rename = false;
  // Repeats a call that failed with ESTALE (up to 3 times). For two kernel clients: one
  // may still hold the handle of a directory the other replaced (also directly on the
  // server; NFS behaviour, not the proxy's). The server did nothing, so repeating is safe.
  bool retry_stale = false;
};

struct Result {
  bool ok = false;
  bool setup_failed = false;  // The working directory could not be made: no step ran.
  uint64_t steps_done = 0;
  uint64_t failed_step = 0;  // 0: the failure came in the final check.
  std::string fingerprint;   // Of the final tree (iff ok).
  std::string failure;       // What differed, with the last operations.
  std::map<std::string, uint64_t> op_counts;
};

class Exerciser {
 public:
  // `clients` all view the same tree; REQUIRES: 1 or 2 of them, outliving Run(). Progress
  // and reports go to `out`.
  Exerciser(const Options& options, std::vector<Fs*> clients, std::FILE* out);

  Result Run();

 private:
  struct Open {
    size_t client;
    Handle h;
    uint64_t ino;
  };
  using OpFn = void (Exerciser::*)();
  struct OpDesc {
    const char* name;
    unsigned weight;
    OpFn run;
  };
  static const OpDesc kOps[];

  // --- operations (exerciser_ops.cc) ---
  void OpCreate();
  void OpOpen();
  void OpClose();
  void OpWrite();
  void OpRead();
  void OpTruncate();
  void OpAppend();
  void OpFsync();
  void OpRename();
  void OpLink();
  void OpUnlink();
  void OpSymlink();
  void OpReadlink();
  void OpMkdir();
  void OpRmdir();
  void OpChmod();
  void OpUtimes();
  void OpReaddir();
  void OpStat();

  // --- choosing operands (exerciser_ops.cc); all draw only from rng_ and model_ ---
  std::string PickDir(size_t max_depth);
  // A parent for a new name: mostly a directory, rarely a missing one or a file.
  std::string PickParent();
  // A name in a parent from PickParent(); an existing name iff the tree is full or
  // `existing_percent` says so.
  std::string NewPath(unsigned existing_percent);
  // An existing entry whose type is in `types` ("fdl"), or a missing name with
  // probability `missing_percent` (or when there is none).
  std::string PickEntry(const char* types, unsigned missing_percent);
  std::string MissingPath();
  uint64_t PickOffset(uint64_t size, uint64_t len);
  uint64_t PickLength(uint64_t limit);
  const std::string& PickName() { return rng_.Pick(names_); }
  static std::vector<std::string> NamePool(size_t extra);

  // --- handles and checks (exerciser.cc) ---
  Fs& fs() { return *clients_[client_]; }
  // The backend path of model path `rel`.
  std::string W(const std::string& rel) const { return JoinPath(options_.workdir, rel); }
  // Close-to-open: closes the handles other clients hold on `ino`.
  void Claim(uint64_t ino);
  // Closes every handle on `ino` (all clients): before its name is removed or replaced.
  void CloseAll(uint64_t ino);
  void CloseAt(size_t index);
  // A handle of the current client on `ino` (opened through `path` if there is none).
  // Returns nullptr after a failure.
  Open* HandleFor(uint64_t ino, const std::string& path);
  // Makes room for one more handle.
  void Reserve();
  // Runs a path call, again on ESTALE iff options_.retry_stale.
  int Again(const std::function<int()>& call);
  // Records the operation's outcome; fails the run iff `got` is not in `want`.
  bool Check(const std::string& call, const ErrSet& want, int64_t got);
  void Fail(const std::string& what);
  void Note(const std::string& text);  // Appends to the current step's description.
  // Compares the whole tree, through every client, with the model.
  void Verify(const char* when);
  std::string History() const;

  const Options options_;
  const std::vector<Fs*> clients_;
  const std::vector<std::string> names_;  // The pool new names are drawn from.
  std::FILE* const out_;
  Prng rng_;
  Model model_;
  std::vector<Open> open_;  // Oldest first.
  std::deque<std::string> history_;
  std::string current_;  // Description of the running step.
  uint64_t step_ = 0;
  size_t client_ = 0;
  bool failed_ = false;
  Result result_;
};

}  // namespace nfsedge::fsx

#endif  // NFSEDGE_TESTS_CONFORMANCE_EXERCISER_H_
