// The proxy's NFS program with its metadata cache and write path, for the
// tests of write-behind as the rest of the proxy sees it
// (write_service_test.cc, write_service_hold_test.cc): calls are handed to
// it as the RPC server would, and the upstream holds every call until the
// test answers it.
#ifndef NFSEDGE_TESTS_UNIT_WRITE_SERVICE_FIXTURE_H_
#define NFSEDGE_TESTS_UNIT_WRITE_SERVICE_FIXTURE_H_

#include <rpc/xdr/nfs3.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_service.h"
#include "rpc/auth_sys.h"
#include "rpc/rpc_message.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"
#include "incoming_call.h"
#include "write_path_fixture.h"
#include "nfs_xdr_builders.h"

namespace nfsedge::write_path_test {

using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Xdr;

constexpr uint32_t kUid = 1000;
constexpr uint32_t kGid = 100;
constexpr uint32_t kAllAccess = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
                                ACCESS3_EXTEND | ACCESS3_DELETE | ACCESS3_EXECUTE;

// A regular file of kUid, mode 0644, with `size` and ctime = mtime = `t`.
inline fattr3 FileAttr(uint64_t size, uint32_t t) {
  fattr3 a = Attr(size, t);
  a.uid = kUid;
  a.gid = kGid;
  a.mode = 0644;
  a.nlink = 1;
  a.fileid = 42;
  return a;
}

inline fattr3 DirAttr(uint32_t t) {
  fattr3 a = Attr(512, t);
  a.type = NF3DIR;
  a.uid = kUid;
  a.gid = kGid;
  a.mode = 0755;
  a.nlink = 2;
  a.fileid = 2;
  return a;
}

// The proxy's NFS program with its metadata cache and write path; calls are
// handed to it as the RPC server would, without a socket.
class WriteServiceTest : public ::testing::Test {
 protected:
  WriteServiceTest()
      : exports_(Exports()),
        registry_(1000),
        cache_(clock_, CacheConfig{}),
        nfs_(exports_, registry_, up_, ServiceOptions(), &cache_) {
    registry_.Add(dir_, 0, /*root=*/true);
    registry_.Add(file_, 0);
    WritePathOptions wo;
    wo.write_size = 64 << 10;
    wo.flush_delay = std::chrono::milliseconds(50);
    wo.verifier = Verf{'p', 'r', 'o', 'x', 'y'};
    wo.journal = &journal_;  // opened, as at a start that finds records
    wp_ = std::make_unique<WritePath>(
        clock_, up_, bg_,
        [this](Duration d, std::function<void()> fn) {
          timers_.emplace(clock_.MonoNow() + d, std::move(fn));
        },
        [this](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
               const OpaqueAuth& cred) { nfs_.LearnReply(p, args, reply, exp, cred); },
        wo);
    wp_->LearnFsinfo(FsinfoResults());  // as a client's mount tells it
    nfs_.SetWritePath(wp_.get());
    cred_ = OpaqueAuth{kAuthSys, EncodeAuthSys(AuthSys{7, "client-a", kUid, kGid, {}})};
  }
  ~WriteServiceTest() override { nfs_.SetWritePath(nullptr); }

  // No duplicate request cache: it would take the reply hook the test
  // reads replies by.
  static NfsServiceOptions ServiceOptions() {
    NfsServiceOptions o;
    o.drc_entries = 0;
    return o;
  }

  static std::vector<ExportConfig> Exports() {
    ExportConfig e = MakeExport(0);
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    return {e};
  }

  // Hands a call to the program; returns its slot in results_ (empty until
  // the call is answered).
  size_t Send(uint32_t proc, const std::string& args) {
    const size_t slot = results_.size();
    results_.emplace_back();
    auto call = IncomingNfsCall(next_xid_++, proc, cred_, args,
                                [this, slot](std::string results) { results_[slot] = results; });
    calls_.push_back(call);
    nfs_.Handle(call);
    return slot;
  }

  // Moves the clock by `d`, running the write path's timers that fall due.
  void Advance(Duration d) { AdvanceRunning(clock_, timers_, d); }

  // The index of the last upstream call of `proc` on `u`, or -1.
  static int Last(const HeldUpstream& u, uint32_t proc) {
    for (int i = static_cast<int>(u.calls.size()) - 1; i >= 0; --i) {
      if (u.calls[static_cast<size_t>(i)].proc == proc) return i;
    }
    return -1;
  }

  // The client learns, through the proxy, that it may write the file: an
  // ACCESS the upstream answers with every bit and the file's attributes.
  void LearnAccess(const fattr3& attr) {
    ACCESS3args a{};
    a.object = Fh(file_);
    a.access = kAllAccess;
    const size_t slot = Send(NFSPROC3_ACCESS, Xdr(Proc(xdr_ACCESS3args), a));
    const int i = Last(up_, NFSPROC3_ACCESS);
    ASSERT_GE(i, 0);
    ACCESS3res res{};
    res.status = NFS3_OK;
    res.ACCESS3res_u.resok.obj_attributes = PostOp(attr);
    res.ACCESS3res_u.resok.access = kAllAccess;
    AnswerRecord(up_, static_cast<size_t>(i), Xdr(Proc(xdr_ACCESS3res), res));
    ASSERT_TRUE(results_[slot].has_value());
  }

  // A client UNSTABLE WRITE of `data` at `offset`; returns its slot.
  size_t WriteUnstable(uint64_t offset, const std::string& data) {
    WRITE3args a{};
    a.file = Fh(file_);
    a.offset = offset;
    a.count = static_cast<count3>(data.size());
    a.stable = UNSTABLE;
    a.data.data_val = const_cast<char*>(data.data());
    a.data.data_len = static_cast<u_int>(data.size());
    return Send(NFSPROC3_WRITE, Xdr(Proc(xdr_WRITE3args), a));
  }

  size_t Getattr() {
    GETATTR3args a{};
    a.object = Fh(file_);
    return Send(NFSPROC3_GETATTR, Xdr(Proc(xdr_GETATTR3args), a));
  }

  size_t CommitAll() {
    COMMIT3args a{};
    a.file = Fh(file_);
    return Send(NFSPROC3_COMMIT, Xdr(Proc(xdr_COMMIT3args), a));
  }

  // The post-op attributes a COMMIT reply carries, if any.
  // With nothing of the file left buffered, a client COMMIT the proxy
  // answers itself; `*attr`: the attributes its reply carries.
  void ProxysCommitAttr(std::optional<fattr3>* attr) {
    ASSERT_EQ(wp_->stats().buffered_bytes, 0u);
    const size_t c = CommitAll();
    ASSERT_TRUE(results_[c].has_value()) << "answered by the proxy";
    *attr = CommitAttr(*results_[c]);
  }
  // The proxy's COMMIT reply carries no attributes, or none older than `a`.
  void ExpectProxysCommitShowsNothingBefore(const fattr3& a) {
    std::optional<fattr3> after;
    ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
    if (!after.has_value()) return;
    EXPECT_GE(NfsTime::From(after->ctime), NfsTime::From(a.ctime))
        << "the COMMIT's reply shows the file before the change";
    EXPECT_EQ(after->size, a.size);
  }
  static std::optional<fattr3> CommitAttr(const std::string& results) {
    XdrValue<COMMIT3res> res(Proc(xdr_COMMIT3res));
    EXPECT_TRUE(res.Decode(results));
    EXPECT_EQ(res->status, NFS3_OK);
    const post_op_attr& after = res->COMMIT3res_u.resok.file_wcc.after;
    if (res->status != NFS3_OK || !after.attributes_follow) return std::nullopt;
    return after.post_op_attr_u.attributes;
  }

  static std::optional<fattr3> GetattrAttr(const std::string& results) {
    XdrValue<GETATTR3res> res(Proc(xdr_GETATTR3res));
    EXPECT_TRUE(res.Decode(results));
    if (res->status != NFS3_OK) return std::nullopt;
    return res->GETATTR3res_u.resok.obj_attributes;
  }

  // A client's 4 KiB UNSTABLE write flushed and committed in the
  // background (COMMIT reply: size 4096, ctime 3).
  void WrittenAndCommitted() {
    LearnAccess(FileAttr(0, 1));
    const size_t w = WriteUnstable(0, std::string(4096, 'w'));
    ASSERT_TRUE(results_[w].has_value());
    Advance(std::chrono::milliseconds(50));  // the flush delay
    int bw = Last(bg_, NFSPROC3_WRITE);
    ASSERT_GE(bw, 0);
    AnswerRecord(bg_, static_cast<size_t>(bw), WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2)));
    int bc = Last(bg_, NFSPROC3_COMMIT);
    ASSERT_GE(bc, 0) << "the flush delay commits what it wrote";
    AnswerRecord(bg_, static_cast<size_t>(bc), CommitOk(kV1, FileAttr(4096, 3)));
    ASSERT_EQ(wp_->stats().buffered_bytes, 0u) << "stable upstream";
  }
  // That, then a SETATTR through the proxy that truncates the file (ctime
  // 4); its reply has the "after" attributes or not.
  void WriteAndTruncate(bool with_after) {
    ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
    SETATTR3args sa{};
    sa.object = Fh(file_);
    sa.new_attributes.size.set_it = TRUE;
    sa.new_attributes.size.set_size3_u.size = 0;
    const size_t setattr = Send(NFSPROC3_SETATTR, Xdr(Proc(xdr_SETATTR3args), sa));
    const int s = Last(up_, NFSPROC3_SETATTR);
    ASSERT_GE(s, 0) << "nothing buffered: the SETATTR goes upstream at once";
    SETATTR3res sr{};
    sr.status = NFS3_OK;
    if (with_after) sr.SETATTR3res_u.resok.obj_wcc.after = PostOp(FileAttr(0, 4));
    AnswerRecord(up_, static_cast<size_t>(s), Xdr(Proc(xdr_SETATTR3res), sr));
    ASSERT_TRUE(results_[setattr].has_value());
    ASSERT_EQ(Status(*results_[setattr]), NFS3_OK);
  }

  // A client's 4 KiB UNSTABLE write at `offset`, acknowledged and sent
  // upstream by the flush delay; returns its upstream WRITE's index in bg_.
  int FlushedWrite(uint64_t offset) {
    if (Last(up_, NFSPROC3_ACCESS) < 0) LearnAccess(FileAttr(0, 1));
    const size_t w = WriteUnstable(offset, std::string(4096, 'w'));
    EXPECT_TRUE(results_[w].has_value()) << "buffered";
    Advance(std::chrono::milliseconds(50));  // the flush delay
    return Last(bg_, NFSPROC3_WRITE);
  }
  // A SETATTR of the file whose reply never came (the cache forgets the
  // file and tells the write path), then a GETATTR sent after it, which
  // brings the attributes back (and with them the ACCESS evidence, of that
  // ctime).
  void ChangeNoReplyShowed() {
    std::this_thread::sleep_for(std::chrono::microseconds(10));
    SETATTR3args sa{};
    sa.object = Fh(file_);
    sa.new_attributes.size.set_it = TRUE;
    cache_.ForgetUnanswered(*FindNfsProc(NFSPROC3_SETATTR), &sa);
    std::this_thread::sleep_for(std::chrono::microseconds(10));
    GETATTR3args ga{Fh(file_)};
    GETATTR3res gr{};
    gr.status = NFS3_OK;
    gr.GETATTR3res_u.resok.obj_attributes = FileAttr(0, 1);
    cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &ga, Xdr(Proc(xdr_GETATTR3res), gr),
                 exports_.Get(0), CredKey::FromIds(kUid, kGid, {}),
                 SentCall{std::chrono::steady_clock::now(), 1});
  }

  // A GETATTR reply of `fh` (attributes `a`) the cache learns.
  void LearnGetattr(const std::string& fh, const fattr3& a) {
    GETATTR3args ga{Fh(fh)};
    GETATTR3res gr{};
    gr.status = NFS3_OK;
    gr.GETATTR3res_u.resok.obj_attributes = a;
    cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &ga, Xdr(Proc(xdr_GETATTR3res), gr),
                 exports_.Get(0), CredKey::FromIds(kUid, kGid, {}),
                 SentCall{std::chrono::steady_clock::now(), 1});
  }
  // The cache keeps one entry, and learns the directory's: the file's goes.
  void EvictFileAttributes() {
    CacheConfig small;
    small.max_attr_entries = 1;
    cache_.SetLimits(small);
    fattr3 d = FileAttr(4096, 5);
    d.type = NF3DIR;
    LearnGetattr(dir_, d);
    ASSERT_FALSE(cache_.LatestAttributes(file_).has_value()) << "the file's entry is evicted";
  }

  static nfsstat3 Status(const std::string& results) {
    return static_cast<nfsstat3>(LoadBE32(results.data()));
  }

  FakeClock clock_;
  ExportTable exports_;
  HandleRegistry registry_;
  MetadataCache cache_;
  HeldUpstream up_, bg_;
  NfsService nfs_;
  FakeJournal journal_;
  std::unique_ptr<WritePath> wp_;
  std::multimap<MonoTime, std::function<void()>> timers_;
  std::vector<std::shared_ptr<IncomingCall>> calls_;
  std::vector<std::optional<std::string>> results_;
  OpaqueAuth cred_;
  uint32_t next_xid_ = 1;
  const std::string dir_ = "DIR-HANDLE-00001";
  const std::string file_ = "FILE-HANDLE-0001";
};

}  // namespace nfsedge::write_path_test

#endif  // NFSEDGE_TESTS_UNIT_WRITE_SERVICE_FIXTURE_H_
