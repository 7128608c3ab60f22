// libnfs' raw (RPC-level) async API: the generator chooses every call.
#include "load/load_connection.h"

#include <poll.h>

// libnfs' headers in this order: each needs the one before.
// clang-format off
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
// clang-format on

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace nfsedge::load {
namespace {

constexpr uint32_t kAccessAll = 0x3f;

nfs_fh3 Fh(const std::string& fh) {
  nfs_fh3 f;
  f.data.data_len = static_cast<u_int>(fh.size());
  f.data.data_val = const_cast<char*>(fh.data());
  return f;
}

std::string FhString(const nfs_fh3& f) { return std::string(f.data.data_val, f.data.data_len); }

const char* RpcError(rpc_context* rpc) {
  const char* e = rpc_get_error(rpc);
  return e != nullptr ? e : "?";
}

// Connect and MNT replies.
struct Waiter {
  bool done = false;
  std::string error;
  std::string fh;
};

void OnConnect(rpc_context*, int status, void* data, void* w) {
  auto* waiter = static_cast<Waiter*>(w);
  waiter->done = true;
  if (status != RPC_STATUS_SUCCESS) {
    waiter->error = std::string("connect: ") + (data ? static_cast<const char*>(data) : "failed");
  }
}

void OnMnt(rpc_context*, int status, void* data, void* w) {
  auto* waiter = static_cast<Waiter*>(w);
  waiter->done = true;
  if (status != RPC_STATUS_SUCCESS) {
    waiter->error = "MNT: RPC failed";
    return;
  }
  auto* res = static_cast<mountres3*>(data);
  if (res->fhs_status != MNT3_OK) {
    waiter->error = "MNT: status " + std::to_string(res->fhs_status);
    return;
  }
  const fhandle3& fh = res->mountres3_u.mountinfo.fhandle;
  waiter->fh.assign(fh.fhandle3_val, fh.fhandle3_len);
}

// Services `rpc` until done() holds. Returns "" iff it got there in time.
template <typename Done>
std::string Drive(rpc_context* rpc, Done done, double timeout_s) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (Clock::now() > deadline) return "no reply in time";
    pollfd pfd{rpc_get_fd(rpc), static_cast<short>(rpc_which_events(rpc)), 0};
    const int n = poll(&pfd, 1, 100);
    if (n < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
    if (rpc_service(rpc, n > 0 ? pfd.revents : 0) < 0) {
      return std::string("connection lost: ") + RpcError(rpc);
    }
  }
  return "";
}

sattr3 Mode(uint32_t mode) {
  sattr3 a;
  std::memset(&a, 0, sizeof(a));
  a.mode.set_it = 1;
  a.mode.set_mode3_u.mode = mode;
  return a;
}

// Sends CREATE GUARDED of `name` in `dir`, mode 0644.
int SendCreate(rpc_context* rpc, rpc_cb cb, void* self, const std::string& dir,
               const std::string& name) {
  CREATE3args a;
  std::memset(&a, 0, sizeof(a));
  a.where.dir = Fh(dir);
  a.where.name = const_cast<char*>(name.c_str());
  a.how.mode = GUARDED;
  a.how.createhow3_u.obj_attributes = Mode(0644);
  return rpc_nfs3_create_async(rpc, cb, &a, self);
}

}  // namespace

struct LoadConnection::Reply {
  int nfs_status = -1;
  std::string error;  // RPC-level
  std::string fh;
  uint32_t count = 0;
};

void OwnFile::Expected(uint64_t offset, size_t len, std::string* out) const {
  out->resize(len);
  size_t done = 0;
  while (done < len) {
    const uint64_t at = offset + done;
    const uint64_t block = at / kBlock;
    const size_t n = std::min<uint64_t>(len - done, (block + 1) * kBlock - at);
    FillContent(block < block_keys.size() ? block_keys[block] : 0, at, n, out->data() + done);
    done += n;
  }
}

LoadConnection::LoadConnection(int id, const LoadOptions& options, const SharedFiles* shared,
                               LoadStats* stats)
    : id_(id),
      options_(options),
      shared_(shared),
      stats_(stats),
      rng_(MixKey(options.seed, 0x10ad, static_cast<uint64_t>(id))) {}

LoadConnection::~LoadConnection() {
  closing_ = true;
  if (rpc_ != nullptr) rpc_destroy_context(rpc_);
}

std::string LoadConnection::Connect() {
  rpc_context* mount = rpc_init_context();
  if (mount == nullptr) return "rpc_init_context failed";
  Waiter w;
  std::string err;
  if (rpc_connect_port_async(mount, options_.server.c_str(), options_.mount_port, MOUNT_PROGRAM,
                             MOUNT_V3, OnConnect, &w) != 0) {
    err = std::string("MOUNT connect: ") + RpcError(mount);
  } else if (!(err = Drive(
                   mount, [&] { return w.done; }, options_.timeout_s))
                  .empty() ||
             !w.error.empty()) {
    err = "MOUNT " + (err.empty() ? w.error : err);
  } else {
    w = Waiter{};
    if (rpc_mount3_mnt_async(mount, OnMnt, const_cast<char*>(options_.export_path.c_str()), &w) !=
        0) {
      err = std::string("MNT: ") + RpcError(mount);
    } else if (!(err = Drive(
                     mount, [&] { return w.done; }, options_.timeout_s))
                    .empty() ||
               !w.error.empty()) {
      err = err.empty() ? w.error : "MNT: " + err;
    }
  }
  rpc_destroy_context(mount);
  if (!err.empty()) return err;
  root_fh_ = w.fh;

  rpc_ = rpc_init_context();
  if (rpc_ == nullptr) return "rpc_init_context failed";
  w = Waiter{};
  if (rpc_connect_port_async(rpc_, options_.server.c_str(), options_.nfs_port, NFS_PROGRAM, NFS_V3,
                             OnConnect, &w) != 0) {
    return std::string("NFS connect: ") + RpcError(rpc_);
  }
  if (!(err = Drive(
            rpc_, [&] { return w.done; }, options_.timeout_s))
           .empty())
    return "NFS connect: " + err;
  if (!w.error.empty()) return "NFS " + w.error;
  if (shared_ == nullptr) return "";
  return SyncMkdir(shared_->top_fh, "c" + std::to_string(id_), &own_dir_fh_);
}

// ---- set-up calls ----

std::string LoadConnection::Await(Reply* r) {
  reply_ = r;
  std::string err = Drive(
      rpc_, [&] { return step_ == Step::kNone; }, options_.timeout_s);
  reply_ = nullptr;
  if (err.empty()) err = r->error;
  if (err.empty() && r->nfs_status != NFS3_OK) err = "status " + std::to_string(r->nfs_status);
  if (!err.empty()) step_ = Step::kNone;
  return err;
}

void LoadConnection::Begin(Step step, Proc proc) {
  step_ = step;
  proc_ = proc;
  started_ = Clock::now();
}

bool LoadConnection::Sent(int rc) {
  if (rc == 0) return true;
  step_ = Step::kNone;
  Fail(false, std::string("cannot send: ") + RpcError(rpc_));
  return false;
}

std::string LoadConnection::SyncLookup(const std::string& dir, const std::string& name,
                                       std::string* fh, int* status) {
  Reply r;
  Begin(Step::kSetup, Proc::kLookup);
  LOOKUP3args a;
  a.what.dir = Fh(dir);
  a.what.name = const_cast<char*>(name.c_str());
  if (!Sent(rpc_nfs3_lookup_async(rpc_, OnReply, &a, this))) return "LOOKUP not sent";
  std::string err = Await(&r);
  *status = r.nfs_status;
  *fh = r.fh;
  return r.nfs_status == NFS3_OK || r.nfs_status == NFS3ERR_NOENT ? r.error : err;
}

std::string LoadConnection::SyncMkdir(const std::string& dir, const std::string& name,
                                      std::string* fh) {
  Reply r;
  Begin(Step::kSetup, Proc::kMkdir);
  MKDIR3args a;
  a.where.dir = Fh(dir);
  a.where.name = const_cast<char*>(name.c_str());
  a.attributes = Mode(0755);
  if (!Sent(rpc_nfs3_mkdir_async(rpc_, OnReply, &a, this))) return "MKDIR not sent";
  std::string err = Await(&r);
  *fh = r.fh;
  if (err.empty() && fh->empty()) err = "no handle";
  return err.empty() ? "" : "MKDIR " + name + ": " + err;
}

std::string LoadConnection::SyncCreate(const std::string& dir, const std::string& name,
                                       std::string* fh) {
  Reply r;
  Begin(Step::kSetup, Proc::kCreate);
  if (!Sent(SendCreate(rpc_, OnReply, this, dir, name))) return "CREATE not sent";
  std::string err = Await(&r);
  *fh = r.fh;
  if (err.empty() && fh->empty()) err = "no handle";
  return err.empty() ? "" : "CREATE " + name + ": " + err;
}

std::string LoadConnection::SyncWrite(const std::string& fh, uint64_t offset,
                                      const std::string& data) {
  Reply r;
  Begin(Step::kSetup, Proc::kWrite);
  WRITE3args a;
  a.file = Fh(fh);
  a.offset = offset;
  a.count = static_cast<count3>(data.size());
  a.stable = FILE_SYNC;
  a.data.data_len = static_cast<u_int>(data.size());
  a.data.data_val = const_cast<char*>(data.data());
  if (!Sent(rpc_nfs3_write_async(rpc_, OnReply, &a, this))) return "WRITE not sent";
  std::string err = Await(&r);
  if (err.empty() && r.count != data.size()) err = "short write " + std::to_string(r.count);
  return err.empty() ? "" : "WRITE: " + err;
}

// ---- the event loop's side ----

int LoadConnection::fd() const { return rpc_get_fd(rpc_); }
short LoadConnection::events() const { return static_cast<short>(rpc_which_events(rpc_)); }

bool LoadConnection::Service(short revents) {
  if (failed_) return false;
  if (rpc_service(rpc_, revents) < 0) {
    Fail(false, std::string("connection lost: ") + RpcError(rpc_));
    return false;
  }
  return true;
}

void LoadConnection::CheckDeadline(Clock::time_point now) {
  if (step_ == Step::kNone || failed_) return;
  if (now - started_ > std::chrono::duration<double>(options_.timeout_s)) {
    Fail(false, "no reply in " + std::to_string(static_cast<int>(options_.timeout_s)) + " s");
  }
}

std::string LoadConnection::Where() const {
  std::string w = "connection " + std::to_string(id_) + " " + ProcName(proc_);
  switch (step_) {
    case Step::kReadShared:
    case Step::kLookupShared:
      return w + " shared/" + shared_->files[file_].name;
    case Step::kReadOwn:
    case Step::kWrite:
    case Step::kCommit:
    case Step::kFinalCommit:
    case Step::kFinalRead:
    case Step::kRemove:
      return w + " c" + std::to_string(id_) + "/" + files_[file_].name;
    default:
      return name_.empty() ? w : w + " " + name_;
  }
}

void LoadConnection::Fail(bool mismatch, const std::string& what) {
  stats_->Error(mismatch, Where() + ": " + what);
  failed_ = true;
}

void LoadConnection::OnReply(rpc_context*, int status, void* data, void* self) {
  static_cast<LoadConnection*>(self)->HandleReply(status, data);
}

void LoadConnection::HandleReply(int status, void* data) {
  if (closing_ || step_ == Step::kNone) return;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started_);
  stats_->latency_us[static_cast<size_t>(proc_)].push_back(static_cast<uint32_t>(us.count()));
  const Step step = step_;
  if (failed_) {
    step_ = Step::kNone;
    return;
  }
  if (status != RPC_STATUS_SUCCESS) {
    const std::string why = status == RPC_STATUS_ERROR && data != nullptr
                                ? static_cast<const char*>(data)
                                : "RPC status " + std::to_string(status);
    if (step == Step::kSetup) {
      reply_->error = why;
    } else {
      Fail(false, why);
    }
    step_ = Step::kNone;
    return;
  }
  // Every NFSv3 result starts with its status.
  const int nfs_status = *static_cast<const int*>(data);
  if (step == Step::kSetup) {
    reply_->nfs_status = nfs_status;
    if (nfs_status == NFS3_OK) {
      if (proc_ == Proc::kLookup) {
        reply_->fh = FhString(static_cast<LOOKUP3res*>(data)->LOOKUP3res_u.resok.object);
      } else if (proc_ == Proc::kMkdir) {
        const post_op_fh3& h = static_cast<MKDIR3res*>(data)->MKDIR3res_u.resok.obj;
        if (h.handle_follows) reply_->fh = FhString(h.post_op_fh3_u.handle);
      } else if (proc_ == Proc::kCreate) {
        const post_op_fh3& h = static_cast<CREATE3res*>(data)->CREATE3res_u.resok.obj;
        if (h.handle_follows) reply_->fh = FhString(h.post_op_fh3_u.handle);
      } else if (proc_ == Proc::kWrite) {
        reply_->count = static_cast<WRITE3res*>(data)->WRITE3res_u.resok.count;
      }
    }
    step_ = Step::kNone;
    return;
  }
  const bool gone = step == Step::kLookupGone;
  if (nfs_status != NFS3_OK && !(gone && nfs_status == NFS3ERR_NOENT)) {
    Fail(false, "status " + std::to_string(nfs_status));
    step_ = Step::kNone;
    return;
  }
  switch (step) {
    case Step::kGetattr:
      OnGetattr(data);
      break;
    case Step::kLookupShared:
    case Step::kLookupOwn:
    case Step::kLookupGone:
      OnLookup(data);
      break;
    case Step::kAccess:
      break;  // NFS3_OK is all there is to check
    case Step::kListShared:
    case Step::kListOwn:
      OnList(data);
      return;  // may continue with the next page
    case Step::kReadShared:
    case Step::kReadOwn:
    case Step::kFinalRead:
      OnRead(data);
      break;
    case Step::kWrite:
      OnWrite(data);
      break;
    case Step::kCommit:
    case Step::kFinalCommit:
      OnCommit(data);
      break;
    case Step::kCreate:
      OnCreate(data);
      break;
    case Step::kRemove:
      OnRemove(data);
      break;
    default:
      break;
  }
  step_ = Step::kNone;
}

// ---- the mix ----

void LoadConnection::IssueNext(bool final) {
  name_.clear();
  if (final) {
    IssueFinal();
  } else {
    IssueMix();
  }
}

void LoadConnection::IssueMix() {
  unsigned total = 0;
  for (unsigned w : options_.mix) total += w;
  uint64_t pick = rng_.Below(total);
  size_t op = 0;
  while (pick >= options_.mix[op]) pick -= options_.mix[op++];
  const bool can_create = files_.size() < static_cast<size_t>(options_.own_files);
  switch (op) {
    case 0:
      return IssueGetattr();
    case 1:
      return IssueLookup();
    case 2:
      return IssueAccess();
    case 3:
      return IssueList(rng_.Percent(50), 0, nullptr);
    case 4: {
      std::vector<size_t> nonempty;
      for (size_t i = 0; i < files_.size(); ++i) {
        if (files_[i].size > 0) nonempty.push_back(i);
      }
      const bool own = !nonempty.empty() && rng_.Percent(30);
      file_ = own ? rng_.Pick(nonempty) : rng_.Below(shared_->files.size());
      const uint64_t size = own ? files_[file_].size : shared_->files[file_].size;
      uint64_t offset = rng_.Below(size + 1);
      if (rng_.Percent(50)) offset -= offset % options_.max_io;  // aligned, as clients read
      return IssueRead(own, offset, 1 + rng_.Below(options_.max_io));
    }
    case 5:
      return files_.empty() ? IssueCreate() : IssueWrite();
    case 6:
      for (const OwnFile& f : files_) {
        if (f.unstable) return IssueCommit(false);
      }
      return files_.empty() ? IssueCreate() : IssueWrite();
    case 7:
      return can_create ? IssueCreate() : IssueRemove();
    default:
      return files_.size() > 1 ? IssueRemove() : IssueCreate();
  }
}

void LoadConnection::IssueGetattr() {
  target_ = static_cast<int>(rng_.Below(files_.empty() ? 2 : 3));
  std::string fh = own_dir_fh_;
  if (target_ == 1) fh = shared_->files[file_ = rng_.Below(shared_->files.size())].fh;
  if (target_ == 2) fh = files_[file_ = rng_.Below(files_.size())].fh;
  Begin(Step::kGetattr, Proc::kGetattr);
  GETATTR3args a;
  a.object = Fh(fh);
  Sent(rpc_nfs3_getattr_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueAccess() {
  std::string fh = own_dir_fh_;
  const uint64_t t = rng_.Below(files_.empty() ? 3 : 4);
  if (t == 1) fh = shared_->dir_fh;
  if (t == 2) fh = shared_->files[rng_.Below(shared_->files.size())].fh;
  if (t == 3) fh = files_[rng_.Below(files_.size())].fh;
  Begin(Step::kAccess, Proc::kAccess);
  ACCESS3args a;
  a.object = Fh(fh);
  a.access = kAccessAll;
  Sent(rpc_nfs3_access_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueLookup() {
  std::string dir = own_dir_fh_;
  const uint64_t t = rng_.Below(10);
  if (t < 5) {
    file_ = rng_.Below(shared_->files.size());
    name_ = shared_->files[file_].name;
    dir = shared_->dir_fh;
    Begin(Step::kLookupShared, Proc::kLookup);
  } else if (t < 8 && !files_.empty()) {
    file_ = rng_.Below(files_.size());
    name_ = files_[file_].name;
    Begin(Step::kLookupOwn, Proc::kLookup);
  } else {
    // A name removed before, or one never created.
    name_ = removed_.empty() || rng_.Percent(30) ? "never" + std::to_string(rng_.Below(100))
                                                 : rng_.Pick(removed_);
    Begin(Step::kLookupGone, Proc::kLookup);
  }
  LOOKUP3args a;
  a.what.dir = Fh(dir);
  a.what.name = const_cast<char*>(name_.c_str());
  Sent(rpc_nfs3_lookup_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueList(bool own, uint64_t cookie, const char* cookieverf) {
  if (cookie == 0) listed_.clear();
  Begin(own ? Step::kListOwn : Step::kListShared, Proc::kReaddirplus);
  READDIRPLUS3args a;
  std::memset(&a, 0, sizeof(a));
  a.dir = Fh(own ? own_dir_fh_ : shared_->dir_fh);
  a.cookie = cookie;
  if (cookieverf != nullptr) std::memcpy(a.cookieverf, cookieverf, NFS3_COOKIEVERFSIZE);
  a.dircount = 4096;
  a.maxcount = 16384;
  Sent(rpc_nfs3_readdirplus_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueRead(bool own, uint64_t offset, uint32_t len) {
  offset_ = offset;
  count_ = len;
  Begin(own ? Step::kReadOwn : Step::kReadShared, Proc::kRead);
  READ3args a;
  a.file = Fh(own ? files_[file_].fh : shared_->files[file_].fh);
  a.offset = offset;
  a.count = len;
  Sent(rpc_nfs3_read_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueWrite() {
  file_ = rng_.Below(files_.size());
  const uint64_t blocks = options_.own_max_bytes / OwnFile::kBlock;
  const uint64_t first = rng_.Below(blocks);
  const uint64_t n =
      std::min<uint64_t>(1 + rng_.Below(options_.max_io / OwnFile::kBlock), blocks - first);
  offset_ = first * OwnFile::kBlock;
  count_ = static_cast<uint32_t>(n * OwnFile::kBlock);
  key_ = MixKey(options_.seed, 1 + static_cast<uint64_t>(id_), ++next_key_);
  buf_.resize(count_);
  FillContent(key_, offset_, count_, buf_.data());
  stable_ = rng_.Percent(70) ? UNSTABLE : FILE_SYNC;
  Begin(Step::kWrite, Proc::kWrite);
  WRITE3args a;
  a.file = Fh(files_[file_].fh);
  a.offset = offset_;
  a.count = count_;
  a.stable = static_cast<stable_how>(stable_);
  a.data.data_len = count_;
  a.data.data_val = buf_.data();
  Sent(rpc_nfs3_write_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueCommit(bool final) {
  if (!final) {
    std::vector<size_t> unstable;
    for (size_t i = 0; i < files_.size(); ++i) {
      if (files_[i].unstable) unstable.push_back(i);
    }
    file_ = rng_.Pick(unstable);
  }
  Begin(final ? Step::kFinalCommit : Step::kCommit, Proc::kCommit);
  COMMIT3args a;
  a.file = Fh(files_[file_].fh);
  a.offset = 0;
  a.count = 0;
  Sent(rpc_nfs3_commit_async(rpc_, OnReply, &a, this));
}

void LoadConnection::IssueCreate() {
  name_ = "f" + std::to_string(next_name_++);
  Begin(Step::kCreate, Proc::kCreate);
  Sent(SendCreate(rpc_, OnReply, this, own_dir_fh_, name_));
}

void LoadConnection::IssueRemove() {
  file_ = rng_.Below(files_.size());
  name_ = files_[file_].name;
  Begin(Step::kRemove, Proc::kRemove);
  REMOVE3args a;
  a.object.dir = Fh(own_dir_fh_);
  a.object.name = const_cast<char*>(name_.c_str());
  Sent(rpc_nfs3_remove_async(rpc_, OnReply, &a, this));
}

// After the load: commit what is unstable, then read every file in full.
void LoadConnection::IssueFinal() {
  while (final_file_ < files_.size()) {
    file_ = final_file_;
    const OwnFile& f = files_[final_file_];
    if (f.unstable) return IssueCommit(true);
    if (final_offset_ < f.size) {
      const uint32_t len =
          static_cast<uint32_t>(std::min<uint64_t>(options_.max_io, f.size - final_offset_));
      IssueRead(true, final_offset_, len);
      step_ = Step::kFinalRead;
      return;
    }
    ++final_file_;
    final_offset_ = 0;
  }
  final_done_ = true;
}

// ---- replies ----

void LoadConnection::OnGetattr(void* data) {
  const fattr3& a = static_cast<GETATTR3res*>(data)->GETATTR3res_u.resok.obj_attributes;
  const ftype3 want = target_ == 0 ? NF3DIR : NF3REG;
  if (a.type != want) return Fail(true, "type " + std::to_string(a.type));
  if (target_ == 0) return;
  const uint64_t size = target_ == 1 ? shared_->files[file_].size : files_[file_].size;
  if (a.size != size) {
    Fail(true, "size " + std::to_string(a.size) + ", expected " + std::to_string(size));
  }
}

void LoadConnection::OnLookup(void* data) {
  auto* res = static_cast<LOOKUP3res*>(data);
  if (step_ == Step::kLookupGone) {
    if (res->status != NFS3ERR_NOENT) Fail(true, "found a name that does not exist");
    return;
  }
  const std::string& want =
      step_ == Step::kLookupShared ? shared_->files[file_].fh : files_[file_].fh;
  if (FhString(res->LOOKUP3res_u.resok.object) != want) Fail(true, "another handle");
}

void LoadConnection::OnList(void* data) {
  const READDIRPLUS3resok& ok = static_cast<READDIRPLUS3res*>(data)->READDIRPLUS3res_u.resok;
  const bool own = step_ == Step::kListOwn;
  uint64_t cookie = 0;
  for (const entryplus3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
    cookie = e->cookie;
    const std::string name = e->name;
    if (name == "." || name == "..") continue;
    listed_.push_back(name);
  }
  step_ = Step::kNone;
  if (!ok.reply.eof) {
    if (cookie == 0) return Fail(true, "READDIRPLUS: no entry and no EOF");
    return IssueList(own, cookie, ok.cookieverf);
  }
  std::multiset<std::string> got(listed_.begin(), listed_.end());
  std::multiset<std::string> want;
  if (own) {
    for (const OwnFile& f : files_) want.insert(f.name);
  } else {
    for (const SharedFile& f : shared_->files) want.insert(f.name);
  }
  if (got != want) {
    Fail(true, "listed " + std::to_string(got.size()) + " names, expected " +
                   std::to_string(want.size()) + " (or other names)");
  }
}

void LoadConnection::OnRead(void* data) {
  const READ3resok& ok = static_cast<READ3res*>(data)->READ3res_u.resok;
  const bool own = step_ != Step::kReadShared;
  const uint64_t size = own ? files_[file_].size : shared_->files[file_].size;
  const uint64_t want_len = offset_ >= size ? 0 : std::min<uint64_t>(count_, size - offset_);
  const size_t got = ok.data.data_len;
  stats_->bytes_read += got;
  if (ok.count != got) return Fail(true, "count differs from the data's length");
  if (got > want_len) {
    return Fail(true, std::to_string(got) + " bytes at " + std::to_string(offset_) + ", expected " +
                          std::to_string(want_len) + " (size " + std::to_string(size) + ")");
  }
  std::string want;
  if (own) {
    files_[file_].Expected(offset_, got, &want);
  } else {
    want.resize(got);
    FillContent(shared_->files[file_].key, offset_, got, want.data());
  }
  if (std::memcmp(want.data(), ok.data.data_val, got) != 0) {
    size_t at = 0;
    while (want[at] == ok.data.data_val[at]) ++at;
    return Fail(true, "wrong data at offset " + std::to_string(offset_ + at));
  }
  stats_->bytes_verified += got;
  if (ok.eof && offset_ + got < size) return Fail(true, "EOF before the end");
  if (got < want_len) {
    if (got == 0) return Fail(true, "nothing read before the end");
    ++stats_->short_reads;
  }
  if (step_ == Step::kFinalRead) final_offset_ += got;
}

void LoadConnection::OnWrite(void* data) {
  const WRITE3resok& ok = static_cast<WRITE3res*>(data)->WRITE3res_u.resok;
  if (ok.count != count_) return Fail(true, "wrote " + std::to_string(ok.count) + " bytes");
  if (static_cast<int>(ok.committed) < stable_) {
    return Fail(true, "FILE_SYNC write answered committed=" + std::to_string(ok.committed));
  }
  stats_->bytes_written += count_;
  OwnFile& f = files_[file_];
  const uint64_t first = offset_ / OwnFile::kBlock;
  const uint64_t n = count_ / OwnFile::kBlock;
  if (f.block_keys.size() < first + n) f.block_keys.resize(first + n, 0);
  std::fill(f.block_keys.begin() + first, f.block_keys.begin() + first + n, key_);
  f.size = std::max<uint64_t>(f.size, offset_ + count_);
  if (ok.committed == UNSTABLE) {
    const std::string verf(ok.verf, NFS3_WRITEVERFSIZE);
    if (!f.unstable) f.verf = verf;
    if (verf != f.verf) f.verf_mixed = true;
    f.unstable = true;
  }
}

void LoadConnection::OnCommit(void* data) {
  const COMMIT3resok& ok = static_cast<COMMIT3res*>(data)->COMMIT3res_u.resok;
  OwnFile& f = files_[file_];
  if (f.verf_mixed || std::string(ok.verf, NFS3_WRITEVERFSIZE) != f.verf) {
    return Fail(true, "write verifier changed: unstable data may be lost");
  }
  f.unstable = false;
  f.verf.clear();
}

void LoadConnection::OnCreate(void* data) {
  const post_op_fh3& h = static_cast<CREATE3res*>(data)->CREATE3res_u.resok.obj;
  if (!h.handle_follows) return Fail(true, "CREATE answered without a handle");
  OwnFile f;
  f.name = name_;
  f.fh = FhString(h.post_op_fh3_u.handle);
  files_.push_back(std::move(f));
}

void LoadConnection::OnRemove(void*) {
  removed_.push_back(files_[file_].name);
  if (removed_.size() > 16) removed_.erase(removed_.begin());
  files_.erase(files_.begin() + static_cast<ptrdiff_t>(file_));
}

}  // namespace nfsedge::load
