// Write-behind as the rest of the proxy sees it (write_path_test). Each
// test drives the proxy's NFS program (NfsService, its metadata cache and
// the WritePath) as a client would, with an upstream that holds every call
// until the test answers it.
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
namespace {

using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Xdr;

constexpr uint32_t kUid = 1000;
constexpr uint32_t kGid = 100;
constexpr uint32_t kAllAccess = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY |
                                ACCESS3_EXTEND | ACCESS3_DELETE | ACCESS3_EXECUTE;

// A regular file of kUid, mode 0644, with `size` and ctime = mtime = `t`.
fattr3 FileAttr(uint64_t size, uint32_t t) {
  fattr3 a = Attr(size, t);
  a.uid = kUid;
  a.gid = kGid;
  a.mode = 0644;
  a.nlink = 1;
  a.fileid = 42;
  return a;
}

fattr3 DirAttr(uint32_t t) {
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

// A reader's GETATTR arrives while the file has one buffered UNSTABLE write
// (4 KiB at 0); the proxy holds it and sends that write upstream. Meanwhile
// the writer appends (4 KiB at 4 KiB), as a log or a copy does. Once the
// upstream has answered the write that came before the GETATTR, the GETATTR
// must be answered (architecture.md, "Read your writes": a held call waits
// only for the writes that came before it, "so a writer that keeps
// appending does not hold a reader of the file for as long as it writes").
// Served again from the top, the held call would be held again behind the
// newer append, and so on for every append that comes within a round trip.
TEST_F(WriteServiceTest, HeldGetattrIsNotHeldAgainBehindWritesThatCameAfterIt) {
  LearnAccess(FileAttr(0, 1));
  const std::string chunk(4096, 'w');
  const size_t w1 = WriteUnstable(0, chunk);
  ASSERT_TRUE(results_[w1].has_value());
  ASSERT_EQ(up_.Count(NFSPROC3_WRITE) + bg_.Count(NFSPROC3_WRITE), 0u) << "buffered";

  const size_t getattr = Getattr();
  EXPECT_FALSE(results_[getattr].has_value()) << "held for the buffered write";
  int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held GETATTR sends the write at once";

  uint64_t size = 4096;
  for (int round = 0; round < 3 && !results_[getattr].has_value(); ++round) {
    // The writer appends while the upstream WRITE is on its way...
    const size_t w = WriteUnstable(size, chunk);
    ASSERT_TRUE(results_[w].has_value());
    // ...and the upstream answers the WRITE sent for the GETATTR.
    const SentWrite s = DecodeWriteArgs(up_.calls[static_cast<size_t>(sent)].args);
    AnswerRecord(up_, static_cast<size_t>(sent),
           WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1,
                   FileAttr(s.offset + s.data.size(), 2 + round)));
    size += 4096;
    if (results_[getattr].has_value()) break;
    ADD_FAILURE() << "round " << round
                  << ": every write that came before the GETATTR is upstream, yet the GETATTR "
                     "is still held (now behind the append that came after it)";
    const int next = Last(up_, NFSPROC3_WRITE);
    if (next == sent) break;
    sent = next;
  }
  ASSERT_TRUE(results_[getattr].has_value());
  std::optional<fattr3> attr = GetattrAttr(*results_[getattr]);
  ASSERT_TRUE(attr.has_value());
  EXPECT_GE(attr->size, 4096u) << "the GETATTR shows the write that came before it";
}

// Calls other than GETATTR and READ whose replies carry a file's
// attributes wait for its buffered writes too: FSSTAT (obj_attributes) and
// a directory operation naming the file (refused NOTDIR, with the file's
// attributes). Sent at once, their replies would show the file without
// the write its client was told was done (DESIGN rule 4).
TEST_F(WriteServiceTest, FsstatAndALookupInAFileWaitForItsBufferedWrites) {
  LearnAccess(FileAttr(0, 1));
  FSSTAT3args fs{};
  fs.fsroot = Fh(file_);
  LOOKUP3args lk{};
  lk.what.dir = Fh(file_);
  char name[] = "x";
  lk.what.name = name;
  const std::pair<uint32_t, std::string> calls[] = {
      {NFSPROC3_FSSTAT, Xdr(Proc(xdr_FSSTAT3args), fs)},
      {NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), lk)}};
  uint64_t offset = 0;
  for (const auto& [proc, args] : calls) {
    const size_t w = WriteUnstable(offset, std::string(4096, 'w'));
    ASSERT_TRUE(results_[w].has_value());
    Send(proc, args);
    EXPECT_EQ(Last(up_, proc), -1) << proc << ": sent before the buffered write";
    const int sent = Last(up_, NFSPROC3_WRITE);
    ASSERT_GE(sent, 0) << proc << ": the held call sends the write at once";
    offset += 4096;
    AnswerRecord(up_, static_cast<size_t>(sent),
                 WriteOk(4096, UNSTABLE, kV1, FileAttr(offset, 2)));
    EXPECT_GE(Last(up_, proc), 0) << proc << ": not sent once the write was upstream";
  }
}

// A client COMMIT that waited for the file's data to be stable upstream
// meets the rules in force when it is answered: an export made read-only
// by a reload meanwhile answers it NFS3ERR_ROFS, as it would a new one.
TEST_F(WriteServiceTest, ACommitThatWaitedThroughAReloadMeetsTheRulesNow) {
  LearnAccess(FileAttr(0, 1));
  const size_t w = WriteUnstable(0, std::string(4096, 'w'));
  ASSERT_TRUE(results_[w].has_value());
  const size_t commit = CommitAll();
  ASSERT_FALSE(results_[commit].has_value()) << "answered before the data is stable upstream";
  ExportConfig ro = Exports()[0];
  ro.read_only = true;
  ASSERT_TRUE(exports_.Update({ro}).ok());
  for (int round = 0; round < 10 && !results_[commit].has_value(); ++round) {
    for (HeldUpstream* u : {&up_, &bg_}) {
      const int i = u->Pending();
      if (i < 0) continue;
      const bool write = u->calls[static_cast<size_t>(i)].proc == NFSPROC3_WRITE;
      u->Answer(static_cast<size_t>(i), write ? WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2))
                                              : CommitOk(kV1, FileAttr(4096, 3)));
    }
    Advance(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(results_[commit].has_value());
  XdrValue<COMMIT3res> res(Proc(xdr_COMMIT3res));
  ASSERT_TRUE(res.Decode(*results_[commit]));
  EXPECT_EQ(res->status, NFS3ERR_ROFS);
}

// A client's UNSTABLE write is buffered and acknowledged; the flush delay
// sends it upstream in the background, and commits it there (the COMMIT's
// reply shows size 4096, ctime 3). Then a SETATTR truncates the file to 0
// through the proxy (the upstream answers size 0, ctime 4), and a GETATTR
// shows size 0. A client COMMIT that comes now (at close, or from another
// client that wrote the file) has nothing left to wait for and is answered
// by the proxy itself: not with the post-op attributes the background
// COMMIT returned before the truncation (size 4096 and the old times),
// which the client would put in its attribute cache (they come in a reply
// newer than the SETATTR's), to see a file of 4096 bytes the server does
// not have (DESIGN rule 5: attributes follow the freshest the upstream
// returned; a reply made up by the proxy must not carry older ones).
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyDoesNotCarryAttributesOlderThanASetattr) {
  WriteAndTruncate(/*with_after=*/true);
  const size_t getattr = Getattr();
  ASSERT_TRUE(results_[getattr].has_value());
  std::optional<fattr3> now = GetattrAttr(*results_[getattr]);
  ASSERT_TRUE(now.has_value());
  ASSERT_EQ(now->size, 0u) << "the proxy knows the file is empty";

  const size_t upstream_calls = up_.calls.size() + bg_.calls.size();
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  EXPECT_EQ(up_.calls.size() + bg_.calls.size(), upstream_calls) << "answered by the proxy";
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  if (after.has_value()) {
    EXPECT_EQ(after->size, 0u) << "the COMMIT's reply shows a size the file no longer has";
    EXPECT_GE(after->ctime.seconds, 4u) << "... and times older than the truncation";
  }
}

// The same when the cache no longer holds the SETATTR's attributes (its
// entry evicted, or max_attr_entries = 0): the forwarded SETATTR itself
// told the write path that its own attributes are out of date.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterASetattrTheCacheForgotCarriesNoOldAttributes) {
  WriteAndTruncate(/*with_after=*/true);
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  if (after.has_value()) {
    EXPECT_EQ(after->size, 0u) << "the COMMIT's reply shows the size from before the truncation";
  }
}

// A change at the head office (no call through the proxy) that a GETATTR
// showed: the cache learned it, then evicted it. The write path's own
// attributes, from its COMMIT before the change, would show the client
// the file as it was (its size and times): a COMMIT the proxy answers
// carries none, or newer ones.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterAHeadOfficeChangeTheCacheForgotCarriesNoOldAttributes) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(8192, 6));  // appended to at the head office
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// The same with a cache that keeps no attributes (max_attr_entries = 0):
// the GETATTR's reply went to its client, and the cache let it go at once.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterAHeadOfficeChangeNoCacheKeptCarriesNoOldAttributes) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  CacheConfig none;
  none.max_attr_entries = 0;
  cache_.SetLimits(none);
  LearnGetattr(file_, FileAttr(8192, 6));
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// The same when the cache still has the file's entry but no attributes it
// serves: the change's expired, then a reply overtaken by it (older ctime)
// came; the entry keeps the change's ctime as a floor.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyCarriesNoAttributesOlderThanACacheFloor) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(8192, 6));
  Advance(std::chrono::minutes(10));  // past any attribute lifetime
  LearnGetattr(file_, FileAttr(4096, 4));
  ASSERT_FALSE(cache_.LatestAttributes(file_).has_value()) << "held, not served";
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// Without such a change, evicting the file's entry costs the proxy's
// COMMIT reply nothing: its attributes are those of its last COMMIT.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyCarriesItsOwnAttributesAfterAnEviction) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(4096, 3));  // what the COMMIT showed
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, 4096u);
  EXPECT_EQ(after->ctime.seconds, 3u);
}

// The same with a SETATTR reply that leaves out the attributes after it
// (optional in RFC 1813), and no GETATTR in between: the proxy knows nothing
// newer than the background COMMIT's attributes, which are older than the
// truncation. Its COMMIT reply carries none.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterASetattrWithoutAttributesCarriesNone) {
  WriteAndTruncate(/*with_after=*/false);
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  EXPECT_FALSE(after.has_value()) << "the COMMIT's reply shows size " << after->size
                                  << " from before the truncation";
}

// The metadata cache tells the write path of a change whose result no
// reply showed (here a SETATTR whose reply never came). A reply to the
// write path's own WRITE sent before it may show the file from before the
// change: its attributes are not learned, and a COMMIT the proxy answers
// carries none.
TEST_F(WriteServiceTest, AWriteSentBeforeAChangeTheCacheForgotTeachesNoAttributes) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  EXPECT_FALSE(after.has_value()) << "attributes from before the change";
}

// A WRITE sent after such a change is learned, although the cache, on
// learning the reply of a WRITE sent before it (overtaken), marked the
// file again: that was the write path's own reply, not a change.
TEST_F(WriteServiceTest, AWriteSentAfterAChangeTheCacheForgotTeachesItsAttributes) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(1 << 20);  // while the first is upstream
  ASSERT_GT(w2, w1);
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  AnswerRecord(bg_, static_cast<size_t>(w2),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((1 << 20) + 4096, 5)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value()) << "a WRITE sent after the change taught nothing";
  EXPECT_EQ(after->size, (1u << 20) + 4096);
}

// A WRITE sent before such a change may also have been done by the server
// after a WRITE sent after it (the two went on different connections): its
// reply, coming last, shows a later ctime than what the newer WRITE taught,
// and it is those attributes that show the file.
TEST_F(WriteServiceTest, AnOvertakenWriteDoneLastByTheServerTeachesItsAttributes) {
  const int w1 = FlushedWrite(1 << 20);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(0);
  ASSERT_GT(w2, w1);
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 5)));
  AnswerRecord(bg_, static_cast<size_t>(w1),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((1 << 20) + 4096, 6)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, (1u << 20) + 4096) << "the attributes of the WRITE the server did last";
  EXPECT_EQ(after->ctime.seconds, 6u);
}

// A WRITE made before the change and written again after it (after a
// reconnect) may answer its first transmission, from before the change: it
// teaches nothing to a file the write path knows nothing of since.
TEST_F(WriteServiceTest, AWriteFromBeforeAChangeResentAfterItTeachesNothingAlone) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  bg_.calls[static_cast<size_t>(w1)].sent_at = std::chrono::steady_clock::now();  // resent
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  EXPECT_FALSE(after.has_value()) << "attributes from before the change";
}

// ...and is ordered by ctime against what a later call taught, older or
// newer.
TEST_F(WriteServiceTest, AWriteFromBeforeAChangeResentAfterItIsOrderedByCtime) {
  const int w1 = FlushedWrite(0);
  const int w2 = FlushedWrite(1 << 20);
  ASSERT_GE(w1, 0);
  ASSERT_GT(w2, w1);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w3 = FlushedWrite(3 << 20);
  ASSERT_GT(w3, w2);
  for (int w : {w1, w2}) bg_.calls[static_cast<size_t>(w)].sent_at = std::chrono::steady_clock::now();
  // The call made after the change teaches...
  AnswerRecord(bg_, static_cast<size_t>(w3),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((3 << 20) + 4096, 7)));
  // ...an older resent one does not undo it...
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 3)),
               /*transmissions=*/2);
  ASSERT_EQ(wp_->stats().buffered_bytes, 4096u) << "the second write is still upstream";
  // ...and a newer one replaces it.
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4 << 20, 8)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, 4u << 20);
  EXPECT_EQ(after->ctime.seconds, 8u);
}

// A WRITE made after the change left after it, however many times it was
// written: its attributes are learned (the change does not hold the file's
// later resent calls back for ever).
TEST_F(WriteServiceTest, AWriteMadeAfterAChangeTeachesThoughWrittenTwice) {
  const int w0 = FlushedWrite(0);
  ASSERT_GE(w0, 0);
  AnswerRecord(bg_, static_cast<size_t>(w0), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w = FlushedWrite(4096);
  ASSERT_GT(w, w0);
  AnswerRecord(bg_, static_cast<size_t>(w), WriteOk(4096, FILE_SYNC, kV1, FileAttr(8192, 5)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value()) << "the reply of a WRITE made after the change taught nothing";
  EXPECT_EQ(after->size, 8192u);
}

// On a server whose ctime has a coarse tick, a WRITE sent before the change
// (here a chmod whose reply never came), the change and a WRITE sent after
// it ran within one tick: the older reply, coming last with the same ctime
// and the mode from before the chmod, does not replace what the newer
// taught.
TEST_F(WriteServiceTest, AnOvertakenReplyOfTheSameCtimeDoesNotBringTheOldModeBack) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(4096);
  ASSERT_GT(w2, w1);
  fattr3 chmodded = FileAttr(8192, 5);
  chmodded.mode = 0600;
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, chmodded));
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(8192, 5)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  if (after.has_value()) {
    EXPECT_EQ(after->mode, 0600u) << "the mode from before the chmod";
  }
}

// The file has a buffered, acknowledged UNSTABLE write (4 KiB at 0). A
// client opens it with O_CREAT (an UNCHECKED CREATE without a size, sent
// when the client believed the name free): the upstream returns the file
// that exists, with the attributes it knows, size 0. Passed on as is, it
// would tell the client a size of 0 for a file whose 4 KiB the proxy has
// acknowledged (DESIGN rule 4: "attributes returned reflect them";
// architecture.md: "no answer shows a file's size or times without its
// writes"), and a client appending (O_APPEND takes the size from those
// attributes) would write over the acknowledged bytes. A CREATE is not
// sent again to learn more (it is not idempotent): the answer goes without
// the file's attributes.
TEST_F(WriteServiceTest, CreateReturningAFileWithBufferedWritesShowsThem) {
  LearnAccess(FileAttr(0, 1));
  const size_t w = WriteUnstable(0, std::string(4096, 'w'));
  ASSERT_TRUE(results_[w].has_value());
  ASSERT_EQ(wp_->stats().buffered_bytes, 4096u);

  CREATE3args ca{};
  ca.where.dir = Fh(dir_);
  ca.where.name = const_cast<char*>("log");
  ca.how.mode = UNCHECKED;
  ca.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
  ca.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
  const size_t create = Send(NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), ca));
  const int c = Last(up_, NFSPROC3_CREATE);
  ASSERT_GE(c, 0);
  CREATE3res cr{};
  cr.status = NFS3_OK;
  cr.CREATE3res_u.resok.obj.handle_follows = TRUE;
  cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(file_);
  cr.CREATE3res_u.resok.obj_attributes = PostOp(FileAttr(0, 1));  // the upstream's view
  cr.CREATE3res_u.resok.dir_wcc.after = PostOp(DirAttr(1));
  AnswerRecord(up_, static_cast<size_t>(c), Xdr(Proc(xdr_CREATE3res), cr));
  // Held until the write is upstream, if need be.
  for (int i = up_.Pending(); i >= 0 && !results_[create].has_value(); i = up_.Pending()) {
    const auto& call = up_.calls[static_cast<size_t>(i)];
    if (call.proc == NFSPROC3_WRITE) {
      const SentWrite s = DecodeWriteArgs(call.args);
      AnswerRecord(up_, static_cast<size_t>(i),
             WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1, FileAttr(4096, 2)));
    } else if (call.proc == NFSPROC3_CREATE) {
      AnswerRecord(up_, static_cast<size_t>(i), Xdr(Proc(xdr_CREATE3res), cr));
    } else {
      break;
    }
  }
  ASSERT_TRUE(results_[create].has_value());
  XdrValue<CREATE3res> res(Proc(xdr_CREATE3res));
  ASSERT_TRUE(res.Decode(*results_[create]));
  ASSERT_EQ(res->status, NFS3_OK);
  const post_op_attr& attr = res->CREATE3res_u.resok.obj_attributes;
  if (attr.attributes_follow) {
    EXPECT_EQ(attr.post_op_attr_u.attributes.size, 4096u)
        << "the CREATE's answer shows the file without the 4 KiB the proxy acknowledged";
  }
}


// A LOOKUP goes upstream (no ACCESS evidence on the directory for this
// credential, so the cache cannot answer it) and names a file with a
// buffered, acknowledged write: it is held, and that write goes upstream.
// Meanwhile the writer appends, as a log does. Once the write that came
// before the LOOKUP is upstream, the LOOKUP must be answered
// (architecture.md, "Read your writes": "served again once they are
// upstream, the call is held by no write that came after it"; the held
// LOOKUP is named with GETATTR). Served again, it goes upstream again (the
// cache still cannot answer it), and its new reply is not held behind the
// append that came after it.
TEST_F(WriteServiceTest, HeldLookupIsNotHeldAgainBehindWritesThatCameAfterIt) {
  LearnAccess(FileAttr(0, 1));
  const std::string chunk(4096, 'w');
  const size_t w1 = WriteUnstable(0, chunk);
  ASSERT_TRUE(results_[w1].has_value());

  LOOKUP3args la{};
  la.what.dir = Fh(dir_);
  la.what.name = const_cast<char*>("log");
  const size_t lookup = Send(NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), la));
  uint64_t size = 4096;
  uint32_t t = 2;
  auto answer_lookup = [&](int i) {
    LOOKUP3res lr{};
    lr.status = NFS3_OK;
    lr.LOOKUP3res_u.resok.object = Fh(file_);
    lr.LOOKUP3res_u.resok.obj_attributes = PostOp(FileAttr(size - 4096, t));
    lr.LOOKUP3res_u.resok.dir_attributes = PostOp(DirAttr(1));
    AnswerRecord(up_, static_cast<size_t>(i), Xdr(Proc(xdr_LOOKUP3res), lr));
  };
  int l = Last(up_, NFSPROC3_LOOKUP);
  ASSERT_GE(l, 0) << "the cache cannot answer it: forwarded";
  answer_lookup(l);
  EXPECT_FALSE(results_[lookup].has_value()) << "held for the buffered write";
  int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held LOOKUP sends the write at once";

  for (int round = 0; round < 4 && !results_[lookup].has_value(); ++round) {
    // The writer appends while the upstream WRITE is on its way...
    const size_t w = WriteUnstable(size, chunk);
    ASSERT_TRUE(results_[w].has_value());
    // ...and the upstream answers the WRITE sent for the LOOKUP.
    const SentWrite s = DecodeWriteArgs(up_.calls[static_cast<size_t>(sent)].args);
    AnswerRecord(up_, static_cast<size_t>(sent),
           WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1,
                   FileAttr(s.offset + s.data.size(), ++t)));
    size += 4096;
    // The LOOKUP served again may go upstream again: answered at once.
    const int again = Last(up_, NFSPROC3_LOOKUP);
    if (again != l && !up_.calls[static_cast<size_t>(again)].answered) {
      l = again;
      answer_lookup(l);
    }
    if (results_[lookup].has_value()) break;
    ADD_FAILURE() << "round " << round
                  << ": every write that came before the LOOKUP is upstream, yet the LOOKUP "
                     "is still held (now behind the append that came after it)";
    const int next = Last(up_, NFSPROC3_WRITE);
    if (next == sent) break;
    sent = next;
  }
  EXPECT_TRUE(results_[lookup].has_value())
      << "LOOKUPs sent upstream: " << up_.Count(NFSPROC3_LOOKUP);
}

// After a restart the journal's records are replayed upstream; the name
// cache is empty. A client that believes the name free sends an UNCHECKED
// CREATE with size 0 for a file whose records are being replayed (O_TRUNC):
// sent at once, it truncates the file, and the replay's WRITEs then put the
// old bytes back into it. It waits until the replayed data is stable and
// its records are out of the journal.
TEST_F(WriteServiceTest, ATruncatingCreateOfAnUnknownNameWaitsForTheReplay) {
  JournalRecord r;
  r.seq = journal_.NextSeq();
  r.fh = file_;
  r.export_path = "/e";
  r.cred = cred_;
  r.offset = 0;
  r.data = std::string(4096, 'r');
  wp_->Recover(r, exports_.all().front());
  wp_->FlushAll();

  CREATE3args ca{};
  ca.where.dir = Fh(dir_);
  ca.where.name = const_cast<char*>("log");
  ca.how.mode = UNCHECKED;
  ca.how.createhow3_u.obj_attributes.size.set_it = TRUE;
  ca.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
  Send(NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), ca));
  EXPECT_EQ(Last(up_, NFSPROC3_CREATE), -1) << "the truncation went before the replayed data";
  // The replayed data is written and committed; its record's removal
  // reaches the disk.
  for (int round = 0; round < 10 && Last(up_, NFSPROC3_CREATE) < 0; ++round) {
    Advance(std::chrono::milliseconds(50));
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (int i = u->Pending(); i >= 0; i = u->Pending()) {
        const HeldUpstream::Held& c = u->calls[static_cast<size_t>(i)];
        if (c.proc == NFSPROC3_CREATE) break;
        if (c.proc == NFSPROC3_WRITE) {
          u->Answer(static_cast<size_t>(i), WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2)));
        } else {
          ASSERT_EQ(c.proc, NFSPROC3_COMMIT);
          u->Answer(static_cast<size_t>(i), CommitOk(kV1, FileAttr(4096, 3)));
        }
      }
    }
    EXPECT_EQ(Last(up_, NFSPROC3_CREATE) >= 0 && journal_.removed.empty(), false)
        << "the truncation went before the replayed record left the journal's disk";
    journal_.Complete();
  }
  EXPECT_GE(Last(up_, NFSPROC3_CREATE), 0) << "the CREATE is never sent";
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
}

// PATHCONF carries the file's attributes too: held while the file has
// buffered writes (which it sends upstream), as GETATTR is.
TEST_F(WriteServiceTest, PathconfWaitsForBufferedWritesAsGetattrDoes) {
  LearnAccess(FileAttr(0, 1));
  ASSERT_TRUE(results_[WriteUnstable(0, std::string(4096, 'w'))].has_value());
  PATHCONF3args pa{};
  pa.object = Fh(file_);
  const size_t p = Send(NFSPROC3_PATHCONF, Xdr(Proc(xdr_PATHCONF3args), pa));
  EXPECT_FALSE(results_[p].has_value());
  EXPECT_EQ(up_.Count(NFSPROC3_PATHCONF), 0u) << "not before the write is upstream";
  const int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held PATHCONF sends the write at once";
  AnswerRecord(up_, static_cast<size_t>(sent), WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2)));
  EXPECT_EQ(up_.Count(NFSPROC3_PATHCONF), 1u) << "then it goes on";
}

}  // namespace
}  // namespace nfsedge::write_path_test
