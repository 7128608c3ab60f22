// LoadConnection: one client of the load generator. It MNTs the export over a
// connection of its own to the MOUNT port, then holds one TCP connection to
// the NFS port (a libnfs rpc_context) with one call in flight at a time:
// the workload mix on its own directory <dir>/c<id> and files, and on the
// shared read-only files. It keeps a model of its own files (content key per
// 4 KiB block, size, the write verifier of unstable data) and checks every
// reply against it and against the shared files' known content. After the
// load it commits its files and reads each back in full.
//
// Calls are issued with Issue*() and their replies handled in libnfs'
// callback, from Service(). The Sync*() calls wait for their reply on this
// connection alone (set-up).
//
// Thread safety: not thread-safe; one thread drives a connection at a time.

#ifndef NFSEDGE_TESTS_LOAD_LOAD_CONNECTION_H_
#define NFSEDGE_TESTS_LOAD_LOAD_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conformance/prng.h"
#include "load/load_types.h"

struct rpc_context;

namespace nfsedge::load {

using Clock = std::chrono::steady_clock;

// One of the connection's own files, as the model knows it.
struct OwnFile {
  static constexpr uint64_t kBlock = 4096;
  std::string name;
  std::string fh;
  uint64_t size = 0;                 // always whole blocks: writes are
  std::vector<uint64_t> block_keys;  // content key of each block (0 = hole)
  bool unstable = false;             // UNSTABLE data not yet committed
  std::string verf;                  // the verifier those writes returned
  bool verf_mixed = false;           // they returned different ones
  void Expected(uint64_t offset, size_t len, std::string* out) const;
};

class LoadConnection {
 public:
  LoadConnection(int id, const LoadOptions& options, const SharedFiles* shared, LoadStats* stats);
  ~LoadConnection();
  LoadConnection(const LoadConnection&) = delete;
  LoadConnection& operator=(const LoadConnection&) = delete;

  // MNT (own MOUNT connection), connect to the NFS port, MKDIR <dir>/c<id>
  // (unless `shared` is null: the set-up connection). Returns "" iff done.
  std::string Connect();
  const std::string& root_fh() const { return root_fh_; }

  // Set-up calls, waiting for the reply. Each returns "" iff NFS3_OK.
  std::string SyncLookup(const std::string& dir, const std::string& name, std::string* fh,
                         int* status);
  std::string SyncMkdir(const std::string& dir, const std::string& name, std::string* fh);
  std::string SyncCreate(const std::string& dir, const std::string& name, std::string* fh);
  std::string SyncWrite(const std::string& fh, uint64_t offset, const std::string& data);

  // The event loop's side.
  int fd() const;
  short events() const;
  // Returns false iff the connection broke (an error was counted).
  bool Service(short revents);
  bool busy() const { return step_ != Step::kNone; }
  // Failed, or finished its final checks.
  bool done() const { return failed_ || final_done_; }
  bool failed() const { return failed_; }
  // Sends the next call: a call of the mix, or of the final checks once
  // `final` (after the load's end). REQUIRES: !busy() && !done().
  void IssueNext(bool final);
  // Counts an error iff a call has waited longer than the time-out.
  void CheckDeadline(Clock::time_point now);

  int id() const { return id_; }
  const std::vector<OwnFile>& files() const { return files_; }
  const std::vector<std::string>& removed() const { return removed_; }

 private:
  enum class Step {
    kNone,
    kSetup,
    kGetattr,
    kLookupShared,
    kLookupOwn,
    kLookupGone,
    kAccess,
    kListShared,
    kListOwn,
    kReadShared,
    kReadOwn,
    kWrite,
    kCommit,
    kCreate,
    kRemove,
    kFinalCommit,
    kFinalRead,
  };
  struct Reply;  // of a set-up call

  static void OnReply(rpc_context* rpc, int status, void* data, void* self);
  void HandleReply(int status, void* data);
  void Begin(Step step, Proc proc);
  bool Sent(int rc);
  // Services the connection until the set-up call in flight is answered.
  // Returns "" iff it was, NFS3_OK.
  std::string Await(Reply* r);
  void Fail(bool mismatch, const std::string& what);
  std::string Where() const;

  void IssueMix();
  void IssueFinal();
  void IssueGetattr();
  void IssueLookup();
  void IssueAccess();
  void IssueList(bool own, uint64_t cookie, const char* cookieverf);
  void IssueRead(bool own, uint64_t offset, uint32_t len);
  void IssueWrite();
  void IssueCommit(bool final);
  void IssueCreate();
  void IssueRemove();

  void OnGetattr(void* data);
  void OnLookup(void* data);
  void OnList(void* data);
  void OnRead(void* data);
  void OnWrite(void* data);
  void OnCommit(void* data);
  void OnCreate(void* data);
  void OnRemove(void* data);

  const int id_;
  const LoadOptions& options_;
  const SharedFiles* const shared_;
  LoadStats* const stats_;
  fsx::Prng rng_;
  rpc_context* rpc_ = nullptr;
  std::string root_fh_;
  std::string own_dir_fh_;

  // The call in flight.
  Step step_ = Step::kNone;
  Proc proc_ = Proc::kGetattr;
  Clock::time_point started_;
  size_t file_ = 0;  // index into files_ or shared_->files
  int target_ = 0;   // GETATTR / ACCESS: 0 own directory, 1 shared file, 2 own file
  uint64_t offset_ = 0;
  uint32_t count_ = 0;
  uint64_t key_ = 0;  // content key of the WRITE in flight
  int stable_ = 0;
  std::string name_;                 // of the CREATE, REMOVE or LOOKUP in flight
  std::string buf_;                  // WRITE data, kept until the reply
  std::vector<std::string> listed_;  // names of a READDIRPLUS so far
  Reply* reply_ = nullptr;           // of a Sync* call
  bool closing_ = false;             // destructor: libnfs cancels what is queued

  std::vector<OwnFile> files_;
  std::vector<std::string> removed_;  // names removed (LOOKUP must say NOENT)
  uint64_t next_name_ = 0;
  uint64_t next_key_ = 0;
  bool failed_ = false;
  // Final checks: file index and offset reached.
  bool final_done_ = false;
  size_t final_file_ = 0;
  uint64_t final_offset_ = 0;
};

}  // namespace nfsedge::load

#endif  // NFSEDGE_TESTS_LOAD_LOAD_CONNECTION_H_
