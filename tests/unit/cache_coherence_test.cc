// Cached data, attributes and names against what happened upstream
// meanwhile: a disk read overtaken by a write, nested exports' lifetimes, a
// RENAME within one server clock tick, the file a RENAME replaced, and a
// forwarded READ answered after a newer version was learned (in
// forwarded_read_test.cc); attributes from a reply that left before a
// mutation which did not return them.

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "cache/handle_registry.h"
#include "proxy/exports.h"
#include "proxy/nfs_service.h"
#include "read_path_fixture.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.

fattr3 DirAttr(uint32_t changed_at) {
  fattr3 a{};
  a.type = NF3DIR;
  a.mode = 0755;
  a.nlink = 2;
  a.uid = 1000;
  a.gid = 1000;
  a.size = 4096;
  a.fileid = 7;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

using test_xdr::Wcc;

class CoherenceTest : public ReadPathTest {
 protected:
  CredKey Key() const { return CredKeyOf(user_); }

  // An ACCESS reply learned for `key` (null: the user's).
  void MetaAccess(const std::string& fh, const fattr3& a, uint32_t asked, uint32_t granted,
                  const CredKey* key = nullptr, SentCall sent = {}) {
    ACCESS3args args{Fh(fh), asked};
    ACCESS3res res{};
    res.status = NFS3_OK;
    res.ACCESS3res_u.resok.obj_attributes = PostOp(a);
    res.ACCESS3res_u.resok.access = granted;
    meta_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &args, Xdr(Proc(xdr_ACCESS3res), res), exp_,
                key ? *key : Key(), sent);
  }
  // A LOOKUP reply: `child` null means NFS3ERR_NOENT.
  void MetaLookup(const std::string& dir, const char* name, const fattr3& dir_attr,
                  const std::string* child, const fattr3* child_attr, SentCall sent = {}) {
    LOOKUP3args args{};
    args.what.dir = Fh(dir);
    args.what.name = const_cast<char*>(name);
    LOOKUP3res res{};
    if (child) {
      res.status = NFS3_OK;
      res.LOOKUP3res_u.resok.object = Fh(*child);
      res.LOOKUP3res_u.resok.obj_attributes = PostOp(*child_attr);
      res.LOOKUP3res_u.resok.dir_attributes = PostOp(dir_attr);
    } else {
      res.status = NFS3ERR_NOENT;
      res.LOOKUP3res_u.resfail.dir_attributes = PostOp(dir_attr);
    }
    meta_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &args, Xdr(Proc(xdr_LOOKUP3res), res), exp_,
                Key(), sent);
  }
  // A successful RENAME of `from` to `to` in `dir` with the directory's wcc
  // data `w` (both sides: one directory).
  void MetaRename(const std::string& dir, const char* from, const char* to, const wcc_data& w) {
    RENAME3args args{};
    args.from.dir = Fh(dir);
    args.from.name = const_cast<char*>(from);
    args.to.dir = Fh(dir);
    args.to.name = const_cast<char*>(to);
    RENAME3res res{};
    res.status = NFS3_OK;
    res.RENAME3res_u.resok.fromdir_wcc = w;
    res.RENAME3res_u.resok.todir_wcc = w;
    meta_.Learn(*FindNfsProc(NFSPROC3_RENAME), &args, Xdr(Proc(xdr_RENAME3res), res), exp_,
                Key());
  }
  // A READDIRPLUS reply of dir_ with one entry, `name` -> `child`, learned;
  // returns the call's arguments (for Answer).
  READDIRPLUS3args MetaListing(const fattr3& dir_attr, const char* name, const std::string& child,
                               const fattr3& child_attr, SentCall sent = {}) {
    READDIRPLUS3args args{};
    args.dir = Fh(dir_);
    args.dircount = 4096;
    args.maxcount = 32768;
    entryplus3 entry{};
    entry.fileid = child_attr.fileid;
    entry.name = const_cast<char*>(name);
    entry.cookie = 1;
    entry.name_attributes = PostOp(child_attr);
    entry.name_handle.handle_follows = TRUE;
    entry.name_handle.post_op_fh3_u.handle = Fh(child);
    READDIRPLUS3res res{};
    res.status = NFS3_OK;
    res.READDIRPLUS3res_u.resok.dir_attributes = PostOp(dir_attr);
    res.READDIRPLUS3res_u.resok.reply.entries = &entry;
    res.READDIRPLUS3res_u.resok.reply.eof = TRUE;
    meta_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &args, Xdr(Proc(xdr_READDIRPLUS3res), res),
                exp_, Key(), sent);
    return args;
  }
  std::optional<std::string> AnswerGetattr(const Export& e, const std::string& fh) {
    GETATTR3args args{Fh(fh)};
    return meta_.Answer(*FindNfsProc(NFSPROC3_GETATTR), &args, e, Key());
  }
  std::optional<std::string> AnswerLookup(const std::string& dir, const char* name) {
    LOOKUP3args args{};
    args.what.dir = Fh(dir);
    args.what.name = const_cast<char*>(name);
    return meta_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &args, exp_, Key());
  }
  static uint32_t StatusOf(const std::string& r) { return LoadBE32(r.data()); }

  std::string dir_ = "DIR-HANDLE-00001";
};

// --- Data: a disk read in flight when a write is answered ---------------------
//
// The design (read_path.h NoteWrite, tests 4d/4e) holds that a write answered
// by the upstream makes every block of the file suspect, even under the
// version the write leaves (timestamps coarser than writes), and that data
// read before the write must not be stored after it. That holds for a block
// on its way from the disk tier when the write is answered too: it would
// answer the READ with the bytes the write replaced.
TEST_F(CoherenceTest, DiskReadInFlightWhenAWriteIsAnsweredIsNotServed) {
  WithDiskTier([&](DiskTier& disk, PostQueue& posted) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    ExpectData(ReadNow(0, 10000), 0, 10000);  // blocks in memory and on disk
    ASSERT_TRUE(disk.MayContain(file_, 0));
    blocks_.DropFile(file_);  // the memory tier lost them (evicted)

    Outcome out;
    Read(0, 3000, &out);  // block 0 is asked of the disk tier
    Drain();
    ASSERT_EQ(out.replies + out.forwards, 0) << "the disk read is on its way";

    // Meanwhile a WRITE through the proxy is answered: other bytes, same size
    // and times (the server's clock did not tick).
    const fattr3 before = file().attr;
    SetFile(Content(10000, 11), file().attr.mtime.seconds);
    WRITE3args wa{};
    wa.file = Fh(file_);
    WRITE3res wr{};
    wr.status = NFS3_OK;
    wr.WRITE3res_u.resok.file_wcc = Wcc(before, file().attr);
    wr.WRITE3res_u.resok.count = 3000;
    wr.WRITE3res_u.resok.committed = FILE_SYNC;
    meta_.Learn(*FindNfsProc(NFSPROC3_WRITE), &wa, Xdr(Proc(xdr_WRITE3res), wr), exp_, Key());
    rp_->NoteWrite(file_);

    ASSERT_TRUE(posted.RunUntil([&] { return out.replies + out.forwards > 0; }, [&] { Drain(); }));
    if (out.replies == 1) {
      ReadReply r = out.reply();
      EXPECT_TRUE(r.data == file().data.substr(0, 3000))
          << "READ answered with the bytes the write replaced (a disk read that left before "
             "the write was stored after it)";
    }
  });
}

// --- Attribute lifetimes are per export ---------------------------------------
//
// docs/security.md ("Nested exports"): a handle reached through two exports
// belongs to both, and the deepest export's rules apply, lifetimes included.
// An export with acregmin = acregmax = 0 promises that every GETATTR asks the
// upstream (docs/consistency.md, 2). What is learned of such a handle through
// the other export lives no longer than the shorter lifetimes allow (the
// handle registry tells NfsService, which tells the cache); a handle of the
// 60 s export alone keeps its 60 s.
class NestedExportCoherenceTest : public CoherenceTest {
 protected:
  NestedExportCoherenceTest()
      : table_({exp_.config(), zero_.config()}),
        registry_(1000),
        nfs_(table_, registry_, null_, NfsServiceOptions{}, &meta_) {
    registry_.Add(file_, exp_.id());
    registry_.Add(file_, zero_.id());
    registry_.Add(other_, exp_.id());
  }
  class NullCaller : public RpcCaller {
   public:
    Status Call(uint32_t, uint32_t, uint32_t, const OpaqueAuth&, std::string_view,
                ReplyCallback) override {
      return Status(StatusCode::kUnavailable, "no upstream");
    }
  };
  const std::string other_ = "OTHER-FILE-00001";
  ExportTable table_;
  HandleRegistry registry_;
  NullCaller null_;
  NfsService nfs_;
};

TEST_F(NestedExportCoherenceTest, GetattrOnAnAlwaysRevalidateExportIsNotAnsweredFromAnotherExportsEntry) {
  MetaGetattr(exp_, other_, file().attr);  // learnt through the 60 s export
  EXPECT_TRUE(AnswerGetattr(exp_, other_)) << "a file of the 60 s export alone";
  MetaGetattr(exp_, file_, file().attr);
  EXPECT_FALSE(AnswerGetattr(zero_, file_))
      << "a GETATTR on the lifetime-0 export was answered from cache";
}

// The same for a listing: a READDIRPLUS on the lifetime-0 export is not
// answered from a page and attributes learned through the 60 s export.
TEST_F(NestedExportCoherenceTest, ListingOnAnAlwaysRevalidateExportIsNotAnsweredFromCache) {
  fattr3 dir_attr = DirAttr(kWall0 - 3600);
  MetaGetattr(exp_, dir_, dir_attr);
  MetaAccess(dir_, dir_attr, ACCESS3_READ | ACCESS3_LOOKUP, ACCESS3_READ | ACCESS3_LOOKUP);
  fattr3 child_attr = file().attr;
  child_attr.fileid = 9;
  const READDIRPLUS3args args = MetaListing(dir_attr, "f", other_, child_attr);  // 60 s export alone
  const NfsProc& p = *FindNfsProc(NFSPROC3_READDIRPLUS);
  EXPECT_TRUE(meta_.Answer(p, &args, exp_, Key())) << "answered through the 60 s export";
  EXPECT_FALSE(meta_.Answer(p, &args, zero_, Key()))
      << "a listing on the lifetime-0 export was answered from cache";
}

// The same for data: a READ through the lifetime-0 export is not served
// from blocks without asking the upstream whether the file changed, or a
// change made at the head office would not be seen (close-to-open).
TEST_F(NestedExportCoherenceTest, ReadOnAnAlwaysRevalidateExportSeesAChangeMadeElsewhere) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);  // through the 60 s export
  ReadNow(0, 6000);  // through it too: the blocks are cached
  // Changed at the head office a minute later.
  SetFile(Content(12000, 3), kWall0 - 60);
  READ3args a{};
  a.file = Fh(file_);
  a.offset = 0;
  a.count = 6000;
  Outcome out;
  rp_->Serve(
      a, zero_, user_,
      [&out](std::string results) {
        out.replies++;
        out.results = std::move(results);
      },
      [&out] { out.forwards++; });
  Drain();
  if (out.replies == 1) {
    ReadReply r = out.reply();
    EXPECT_TRUE(r.data == file().data.substr(0, 6000))
        << "READ on the lifetime-0 export answered with the old version's bytes";
  } else {
    EXPECT_EQ(out.forwards, 1);
  }
}

// --- Names: a RENAME within one server clock tick ----------------------------
//
// A RENAME through the proxy must update the names it touched (consistency.md,
// 1). When the directory's times did not tick between its previous change and
// the rename (a coarse-timestamp server), the wcc "before" equals "after":
// that alone does not make the rename a no-op onto another link of the same
// file, and the target's negative entry must not stay (LOOKUP of the new
// name would answer NFS3ERR_NOENT for a file that is there).
TEST_F(CoherenceTest, RenameInOneClockTickDoesNotLeaveTheNewNameNegative) {
  const fattr3 d = DirAttr(kWall0);  // changed this second (the file "a" was made)
  const fattr3 f = FileAttr(5, kWall0);
  MetaAccess(dir_, d, 0x3f, 0x3f);
  MetaLookup(dir_, "a", d, &file_, &f);
  MetaLookup(dir_, "b", d, nullptr, nullptr);  // mv a b looks "b" up first
  std::optional<std::string> before = AnswerLookup(dir_, "b");
  ASSERT_TRUE(before);
  ASSERT_EQ(StatusOf(*before), static_cast<uint32_t>(NFS3ERR_NOENT));

  MetaRename(dir_, "a", "b", Wcc(d, d));  // same second: before == after

  std::optional<std::string> r = AnswerLookup(dir_, "b");
  EXPECT_FALSE(r && StatusOf(*r) == NFS3ERR_NOENT)
      << "LOOKUP \"b\" answered NOENT after the proxy renamed \"a\" to \"b\"";
}

// An ACCESS reply of an older state than the attributes the cache holds
// (an ACL changed at the server since: only the ctime moved, as another
// user's ACCESS showed) is not kept for its credential, though that
// credential has no entry it would replace: it answers for the object as it
// was, and could grant what the server now refuses.
TEST_F(CoherenceTest, AnAccessReplyOfAnOlderStateIsNotKept) {
  const fattr3 before = FileAttr(5, kWall0 - 3600);
  fattr3 after = before;
  after.ctime.seconds += 10;
  const CredKey other = CredKey::FromIds(2000, 2000, {});
  MetaAccess(file_, after, ACCESS3_READ, ACCESS3_READ, &other);
  MetaAccess(file_, before, ACCESS3_READ, ACCESS3_READ);  // the late grant
  ACCESS3args args{Fh(file_), ACCESS3_READ};
  EXPECT_FALSE(meta_.Answer(*FindNfsProc(NFSPROC3_ACCESS), &args, exp_, Key()))
      << "answered from a grant of the file as it was before the change";
}

// --- Attributes: the file a RENAME replaced ----------------------------------
//
// A RENAME onto an existing name drops a link of the file that name held (its
// nlink and ctime change; its attributes do not come back in the reply). As
// for REMOVE (AttributesOlderThanARemoveDoNotComeBack), a reply the upstream
// sent before the RENAME (nlink 2) that arrives after it is not cached as
// fresh, or GETATTR would answer the old link count.
TEST_F(CoherenceTest, AttributesOlderThanARenameOverAFileDoNotComeBack) {
  const fattr3 d = DirAttr(kWall0 - 3600);
  const std::string moved = "MOVED-HANDLE-001";
  const std::string target = "TARGET-HANDLE-01";
  fattr3 fm = FileAttr(5, kWall0 - 3600);
  fm.fileid = 100;
  fattr3 ft = FileAttr(9, kWall0 - 3600);
  ft.fileid = 200;
  ft.nlink = 2;  // another link elsewhere keeps it
  MetaAccess(dir_, d, 0x3f, 0x3f);
  MetaLookup(dir_, "a", d, &moved, &fm);
  MetaLookup(dir_, "b", d, &target, &ft);

  MetaRename(dir_, "a", "b", Wcc(d, DirAttr(kWall0)));

  // A GETATTR of the target answered before the RENAME, arriving after it.
  fattr3 late = ft;
  late.ctime.seconds = late.mtime.seconds = kWall0 - 10;
  MetaGetattr(exp_, target, late);
  std::optional<std::string> r = AnswerGetattr(exp_, target);
  if (r) {
    XdrValue<GETATTR3res> res(Proc(xdr_GETATTR3res));
    ASSERT_TRUE(res.Decode(*r));
    EXPECT_NE(res->GETATTR3res_u.resok.obj_attributes.nlink, 2u)
        << "GETATTR answered attributes from before the RENAME (nlink 2)";
  }
}

// --- Names: a reply that left before a change through the proxy --------------
//
// Within one server clock tick a directory's attributes do not change (an
// ext4 directory's size does not either, for a create or a remove), so a
// LOOKUP the upstream answered before a RENAME through the proxy, arriving
// after it, carries the same directory attributes as the RENAME's wcc data:
// only when its call left tells it is older (consistency.md, 1).
class OvertakenNamesTest : public CoherenceTest {
 protected:
  static SentCall SentNow(uint32_t transmissions = 1) {
    return SentCall{std::chrono::steady_clock::now(), transmissions};
  }
  void SetUp() override {
    CoherenceTest::SetUp();
    MetaAccess(dir_, d_, 0x3f, 0x3f);
    MetaLookup(dir_, "a", d_, &file_, &f_);
    MetaLookup(dir_, "b", d_, nullptr, nullptr);
  }
  const fattr3 d_ = DirAttr(kWall0);
  const fattr3 f_ = FileAttr(5, kWall0);
};

TEST_F(OvertakenNamesTest, ALookupSentBeforeARenameDoesNotBringTheOldNameBack) {
  const SentCall before = SentNow();
  MetaRename(dir_, "a", "b", Wcc(d_, d_));
  MetaLookup(dir_, "a", d_, &file_, &f_, before);  // answered before the rename
  std::optional<std::string> r = AnswerLookup(dir_, "a");
  EXPECT_FALSE(r && StatusOf(*r) == NFS3_OK) << "LOOKUP \"a\" found the renamed-away name";
  EXPECT_EQ(meta_.names_overtaken(), 1u);
}

TEST_F(OvertakenNamesTest, ANoentSentBeforeARenameDoesNotHideTheNewName) {
  const SentCall before = SentNow();
  MetaRename(dir_, "a", "b", Wcc(d_, d_));
  MetaLookup(dir_, "b", d_, nullptr, nullptr, before);
  std::optional<std::string> r = AnswerLookup(dir_, "b");
  EXPECT_FALSE(r && StatusOf(*r) == NFS3ERR_NOENT) << "LOOKUP \"b\" answered NOENT";
}

TEST_F(OvertakenNamesTest, ALookupSentAfterTheRenameIsLearned) {
  MetaRename(dir_, "a", "b", Wcc(d_, d_));
  const std::string other = "OTHER-HANDLE-001";
  MetaLookup(dir_, "c", d_, &other, &f_, SentNow());
  std::optional<std::string> r = AnswerLookup(dir_, "c");
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(*r), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(meta_.names_overtaken(), 0u);
}

TEST_F(OvertakenNamesTest, ALookupSentTwiceAfterAChangeIsNotLearned) {
  MetaRename(dir_, "a", "b", Wcc(d_, d_));
  // Its last copy left after the rename, but the reply may answer the first.
  MetaLookup(dir_, "a", d_, &file_, &f_, SentNow(2));
  std::optional<std::string> r = AnswerLookup(dir_, "a");
  EXPECT_FALSE(r && StatusOf(*r) == NFS3_OK);
}

TEST_F(OvertakenNamesTest, AListingSentBeforeARenameIsNotStored) {
  const SentCall before = SentNow();
  MetaRename(dir_, "a", "b", Wcc(d_, d_));
  // The listing from before the rename.
  const READDIRPLUS3args args = MetaListing(d_, "a", file_, f_, before);
  EXPECT_FALSE(meta_.Answer(*FindNfsProc(NFSPROC3_READDIRPLUS), &args, exp_, Key()))
      << "a listing from before the rename was answered from cache";
  std::optional<std::string> r = AnswerLookup(dir_, "a");
  EXPECT_FALSE(r && StatusOf(*r) == NFS3_OK);
}

// A CREATE over a file that is there (UNCHECKED, setting the size: it
// truncates it) whose reply leaves out the file's attributes (optional in
// RFC 1813; the proxy leaves them out itself while it holds unsent writes
// of the file) does not leave the old size, and the blocks cached under it,
// answered from cache.
TEST_F(CoherenceTest, ACreateOverAFileWithoutItsAttributesForgetsTheOldOnes) {
  const fattr3 d = DirAttr(kWall0 - 100);
  const fattr3 f = FileAttr(5, kWall0 - 100);
  MetaLookup(dir_, "f", d, &file_, &f);
  ASSERT_TRUE(AnswerGetattr(exp_, file_));
  for (const bool with_handle : {true, false}) {
    MetaLookup(dir_, "f", d, &file_, &f);
    CREATE3args args{};
    args.where.dir = Fh(dir_);
    args.where.name = const_cast<char*>("f");
    args.how.mode = UNCHECKED;
    args.how.createhow3_u.obj_attributes.size.set_it = TRUE;
    CREATE3res res{};
    res.status = NFS3_OK;
    res.CREATE3res_u.resok.obj.handle_follows = with_handle ? TRUE : FALSE;
    res.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(file_);
    res.CREATE3res_u.resok.dir_wcc = Wcc(d, d);
    meta_.Learn(*FindNfsProc(NFSPROC3_CREATE), &args, Xdr(Proc(xdr_CREATE3res), res), exp_,
                Key());
    EXPECT_FALSE(AnswerGetattr(exp_, file_))
        << "the size from before the truncation answered from cache"
        << (with_handle ? "" : " (reply without the handle)");
  }
}

// --- Attributes: a reply that left before a mutation without "after" ---------
//
// A mutation whose reply leaves out the object's new attributes (optional
// in RFC 1813) drops what was known of it. A GETATTR, ACCESS or READ the
// upstream answered before the mutation, whose reply comes after it, carries
// the attributes from before, and nothing orders them against the change
// (there is no entry left to compare with): they are not learned. A reply to
// a call that left after the mutation's reply came is.
class OvertakenAttributesTest : public OvertakenNamesTest {
 protected:
  // A successful SETATTR (size 0) of file_ whose reply has the "before"
  // attributes only.
  void MetaTruncate() {
    SETATTR3args args{};
    args.object = Fh(file_);
    args.new_attributes.size.set_it = TRUE;
    SETATTR3res res{};
    res.status = NFS3_OK;
    res.SETATTR3res_u.resok.obj_wcc = Wcc(f_, f_);
    res.SETATTR3res_u.resok.obj_wcc.after.attributes_follow = FALSE;
    meta_.Learn(*FindNfsProc(NFSPROC3_SETATTR), &args, Xdr(Proc(xdr_SETATTR3res), res), exp_,
                Key());
  }
  void MetaGetattrSent(const fattr3& a, SentCall sent) {
    GETATTR3args args{Fh(file_)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = a;
    meta_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args, Xdr(Proc(xdr_GETATTR3res), res), exp_,
                Key(), sent);
  }
  // The size GETATTR of file_ is answered with from cache, or nullopt.
  std::optional<uint64_t> CachedSize() {
    std::optional<std::string> r = AnswerGetattr(exp_, file_);
    if (!r) return std::nullopt;
    XdrValue<GETATTR3res> res(Proc(xdr_GETATTR3res));
    EXPECT_TRUE(res.Decode(*r));
    return res->GETATTR3res_u.resok.obj_attributes.size;
  }
  static SentCall SentAfter() {
    std::this_thread::sleep_for(std::chrono::microseconds(10));
    return SentNow();
  }
  // A successful SETATTR (w: its wcc data) or WRITE of file_.
  void MetaSetattr(const wcc_data& w) {
    SETATTR3args args{};
    args.object = Fh(file_);
    SETATTR3res res{};
    res.status = NFS3_OK;
    res.SETATTR3res_u.resok.obj_wcc = w;
    meta_.Learn(*FindNfsProc(NFSPROC3_SETATTR), &args, Xdr(Proc(xdr_SETATTR3res), res), exp_,
                Key(), SentAfter());
  }
  // `a` changed a second later (its size and mode as they were).
  static fattr3 Changed(fattr3 a) {
    a.ctime.seconds = a.mtime.seconds = a.ctime.seconds + 1;
    return a;
  }
  void MetaWrite(const wcc_data& w) {
    WRITE3args args{};
    args.file = Fh(file_);
    WRITE3res res{};
    res.status = NFS3_OK;
    res.WRITE3res_u.resok.file_wcc = w;
    res.WRITE3res_u.resok.count = 1;
    res.WRITE3res_u.resok.committed = FILE_SYNC;
    meta_.Learn(*FindNfsProc(NFSPROC3_WRITE), &args, Xdr(Proc(xdr_WRITE3res), res), exp_, Key(),
                SentAfter());
  }
};

// Within one server clock tick (ext4's ctime under ganesha), replies the
// upstream made before a change through the proxy, arriving after its
// reply, carry the same ctime as the change: they cannot be ordered against
// it, and a second one, agreeing with the first, settles nothing either.
// Only attributes from a call sent after the entry was learned do.
TEST_F(OvertakenAttributesTest, TwoLateRepliesOfOneCtimeDoNotUndoAWrite) {
  const SentCall before = SentNow();
  // Changed elsewhere a moment before the write, in the same tick.
  const fattr3 changed = Changed(f_);
  fattr3 written = changed;
  written.size = 4096;
  MetaWrite(Wcc(changed, written));
  ASSERT_EQ(CachedSize(), 4096u);
  MetaGetattrSent(changed, before);
  EXPECT_FALSE(CachedSize()) << "a late reply of the write's ctime answered from cache";
  MetaGetattrSent(changed, before);
  EXPECT_FALSE(CachedSize()) << "a second late reply brought the size from before the write back";
  MetaGetattrSent(written, SentAfter());
  EXPECT_EQ(CachedSize(), 4096u) << "a GETATTR sent after the replies settles the size";
}

TEST_F(OvertakenAttributesTest, LateRepliesOfOneCtimeDoNotUndoAChmodForAnotherUser) {
  const CredKey other = CredKey::FromIds(2000, 2000, {});
  const SentCall before = SentNow();
  const fattr3 changed = Changed(f_);  // as above
  fattr3 locked = changed;
  locked.mode = 0600;
  MetaSetattr(Wcc(changed, locked));
  ASSERT_TRUE(CachedSize());
  // The other user's ACCESS (granted READ under mode 0644) and a GETATTR,
  // both answered before the chmod, come after its reply.
  MetaAccess(file_, changed, ACCESS3_READ, ACCESS3_READ, &other, before);
  MetaGetattrSent(changed, before);
  EXPECT_FALSE(CachedSize()) << "the mode from before the chmod answered from cache";
  ACCESS3args read{Fh(file_), ACCESS3_READ};
  EXPECT_FALSE(meta_.Answer(*FindNfsProc(NFSPROC3_ACCESS), &read, exp_, other))
      << "READ granted from cache to another user after the chmod";
  MetaGetattrSent(locked, SentAfter());
  ASSERT_TRUE(CachedSize()) << "a GETATTR sent after the replies settles the mode";
  EXPECT_FALSE(meta_.Answer(*FindNfsProc(NFSPROC3_ACCESS), &read, exp_, other));
}

TEST_F(OvertakenAttributesTest, AGetattrSentBeforeTheMutationDoesNotBringTheOldSizeBack) {
  ASSERT_EQ(CachedSize(), f_.size);
  const SentCall before = SentNow();
  MetaTruncate();
  ASSERT_FALSE(CachedSize());
  MetaGetattrSent(f_, before);  // answered before the SETATTR
  EXPECT_FALSE(CachedSize()) << "the size from before the truncation answered from cache";
  MetaGetattrSent(f_, SentNow(2));  // sent twice: may answer the first copy
  EXPECT_FALSE(CachedSize());
}

TEST_F(OvertakenAttributesTest, AccessAndReadRepliesSentBeforeTheMutationAreNotLearned) {
  const SentCall before = SentNow();
  MetaTruncate();
  ACCESS3args access{Fh(file_), 0x3f};
  ACCESS3res granted{};
  granted.status = NFS3_OK;
  granted.ACCESS3res_u.resok.obj_attributes = PostOp(f_);
  granted.ACCESS3res_u.resok.access = 0x3f;
  meta_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &access, Xdr(Proc(xdr_ACCESS3res), granted), exp_,
              Key(), before);
  EXPECT_FALSE(CachedSize()) << "an ACCESS reply brought the old attributes back";
  EXPECT_FALSE(meta_.Answer(*FindNfsProc(NFSPROC3_ACCESS), &access, exp_, Key()));
  READ3args read{Fh(file_), 0, 5};
  READ3res data{};
  data.status = NFS3_OK;
  data.READ3res_u.resok.file_attributes = PostOp(f_);
  data.READ3res_u.resok.count = 0;
  data.READ3res_u.resok.eof = TRUE;
  meta_.Learn(*FindNfsProc(NFSPROC3_READ), &read, Xdr(Proc(xdr_READ3res), data), exp_, Key(),
              before);
  EXPECT_FALSE(CachedSize()) << "a READ reply brought the old attributes back";
}

TEST_F(OvertakenAttributesTest, AReplySentAfterTheMutationIsLearned) {
  MetaTruncate();
  fattr3 now = f_;
  now.size = 0;
  now.ctime.seconds = now.mtime.seconds = kWall0 + 1;
  MetaGetattrSent(now, SentAfter());
  EXPECT_EQ(CachedSize(), 0u);
}

// A mutation whose reply never came (a timeout) may have been carried out:
// a GETATTR answered before it does not bring the old size back either.
TEST_F(OvertakenAttributesTest, AGetattrSentBeforeAnUnansweredMutationIsNotLearned) {
  const SentCall before = SentNow();
  SETATTR3args args{};
  args.object = Fh(file_);
  args.new_attributes.size.set_it = TRUE;
  meta_.ForgetUnanswered(*FindNfsProc(NFSPROC3_SETATTR), &args);
  MetaGetattrSent(f_, before);
  EXPECT_FALSE(CachedSize()) << "the size from before the SETATTR answered from cache";
}

// An UNCHECKED CREATE over "a" (setting the size: a truncation) whose reply
// never came: the file "a" led to is forgotten and marked as well.
TEST_F(OvertakenAttributesTest, AnUnansweredCreateOverAFileForgetsIt) {
  ASSERT_EQ(CachedSize(), f_.size);
  const SentCall before = SentNow();
  CREATE3args args{};
  args.where.dir = Fh(dir_);
  args.where.name = const_cast<char*>("a");
  args.how.mode = UNCHECKED;
  args.how.createhow3_u.obj_attributes.size.set_it = TRUE;
  meta_.ForgetUnanswered(*FindNfsProc(NFSPROC3_CREATE), &args);
  EXPECT_FALSE(CachedSize()) << "the size from before the CREATE answered from cache";
  MetaGetattrSent(f_, before);
  EXPECT_FALSE(CachedSize()) << "a GETATTR answered before the CREATE brought it back";
}

// The other holder of a file's attributes (the write path) is told of each
// object whose attributes a mutation left unknown: here the file a REMOVE
// took a link from (its link count and ctime changed), although the
// directory's wcc data is there.
TEST_F(OvertakenAttributesTest, TheObserverIsToldOfAFileThatLostALink) {
  std::vector<std::string> told;
  meta_.SetMutationObserver(
      [&told](std::string_view fh) { told.emplace_back(fh); });
  REMOVE3args args{};
  args.object.dir = Fh(dir_);
  args.object.name = const_cast<char*>("a");
  REMOVE3res res{};
  res.status = NFS3_OK;
  fattr3 d = d_;
  d.ctime.seconds = d.mtime.seconds = kWall0 + 1;
  res.REMOVE3res_u.resok.dir_wcc = Wcc(d_, d);
  meta_.Learn(*FindNfsProc(NFSPROC3_REMOVE), &args, Xdr(Proc(xdr_REMOVE3res), res), exp_, Key());
  meta_.SetMutationObserver(nullptr);
  EXPECT_EQ(std::count(told.begin(), told.end(), file_), 1) << "not told of the file";
  EXPECT_FALSE(CachedSize());
}

// A mutation's own reply that left before the mark (or went twice) is not
// learned either; what was cached of the object (learned since the mark)
// predates this mutation's change: it goes too.
TEST_F(OvertakenAttributesTest, AnOvertakenMutationReplyForgetsWhatWasCached) {
  MetaTruncate();
  fattr3 grown = f_;
  grown.size = 100;
  grown.ctime.seconds = grown.mtime.seconds = kWall0 + 1;
  MetaGetattrSent(grown, SentAfter());
  ASSERT_EQ(CachedSize(), 100u);
  // An UNCHECKED CREATE of "a" setting the size truncated it again; its
  // reply (sent twice) carries the file's attributes.
  fattr3 truncated = grown;
  truncated.size = 0;
  truncated.ctime.seconds = truncated.mtime.seconds = kWall0 + 2;
  CREATE3args args{};
  args.where.dir = Fh(dir_);
  args.where.name = const_cast<char*>("a");
  args.how.mode = UNCHECKED;
  args.how.createhow3_u.obj_attributes.size.set_it = TRUE;
  CREATE3res res{};
  res.status = NFS3_OK;
  res.CREATE3res_u.resok.obj.handle_follows = TRUE;
  res.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(file_);
  res.CREATE3res_u.resok.obj_attributes = PostOp(truncated);
  res.CREATE3res_u.resok.dir_wcc = Wcc(d_, d_);
  meta_.Learn(*FindNfsProc(NFSPROC3_CREATE), &args, Xdr(Proc(xdr_CREATE3res), res), exp_, Key(),
              SentNow(2));
  EXPECT_FALSE(CachedSize()) << "the size from before the CREATE answered from cache";
  // The same for a LINK whose reply is refused: the link count changed.
  MetaGetattrSent(grown, SentAfter());
  ASSERT_EQ(CachedSize(), 100u);
  LINK3args link{};
  link.file = Fh(file_);
  link.link.dir = Fh(dir_);
  link.link.name = const_cast<char*>("c");
  LINK3res linked{};
  linked.status = NFS3_OK;
  fattr3 two = grown;
  two.nlink = 2;
  two.ctime.seconds = kWall0 + 3;
  linked.LINK3res_u.resok.file_attributes = PostOp(two);
  linked.LINK3res_u.resok.linkdir_wcc = Wcc(d_, d_);
  meta_.Learn(*FindNfsProc(NFSPROC3_LINK), &link, Xdr(Proc(xdr_LINK3res), linked), exp_, Key(),
              SentNow(2));
  EXPECT_FALSE(CachedSize()) << "the attributes from before the LINK answered from cache";
}

}  // namespace
}  // namespace nfsedge
