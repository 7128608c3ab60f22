// MetadataCache with a fake clock: what it answers, for whom, and for how
// long, after learning from upstream replies.
#include "proxy/metadata_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "cache/clock.h"
#include "proxy/client_paths.h"
#include "rpc/xdr_codec.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start

fattr3 Attr(ftype3 type, uint64_t size, uint32_t changed_at, uint32_t mode = 0755) {
  fattr3 a{};
  a.type = type;
  a.mode = mode;
  a.nlink = 1;
  a.size = size;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

nfs_fh3 Fh(std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_val = bytes.data();
  fh.data.data_len = static_cast<u_int>(bytes.size());
  return fh;
}

template <typename T>
std::string Xdr(xdrproc_t proc, const T& v) {
  std::string out;
  EXPECT_TRUE(XdrEncode(proc, &v, &out));
  return out;
}

using test_xdr::PostOp;
using test_xdr::Wcc;

class MetadataCacheTest : public ::testing::Test {
 protected:
  MetadataCacheTest() : exp_(0, MakeConfig(10, 10)), zero_(1, MakeConfig(0, 0)), cache_(clock_, {}) {}

  static ExportConfig MakeConfig(uint32_t min, uint32_t max) {
    ExportConfig c;
    c.path = "/e";
    c.upstream_path = "/e";
    c.acregmin = c.acdirmin = min;
    c.acregmax = c.acdirmax = max;
    return c;
  }

  void LearnGetattr(const Export& e, std::string& fh, const fattr3& a) {
    GETATTR3args args{Fh(fh)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = a;
    cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), res), e, user_);
  }
  void LearnAccess(std::string& fh, const fattr3& a, uint32_t asked, uint32_t granted,
                   const CredKey& who) {
    ACCESS3args args{Fh(fh), asked};
    ACCESS3res res{};
    res.status = NFS3_OK;
    res.ACCESS3res_u.resok.obj_attributes = PostOp(a);
    res.ACCESS3res_u.resok.access = granted;
    cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), res), exp_, who);
  }
  void LearnLookup(std::string& dir, const char* name, const fattr3& dir_attr, std::string* child,
                   const fattr3* child_attr) {
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
    cache_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res), exp_, user_);
  }
  // A successful REMOVE of `name` in `dir` whose directory wcc data is `w`.
  void LearnRemove(std::string& dir, const char* name, const wcc_data& w) {
    REMOVE3args args{};
    args.object.dir = Fh(dir);
    args.object.name = const_cast<char*>(name);
    REMOVE3res res{};
    res.status = NFS3_OK;
    res.REMOVE3res_u.resok.dir_wcc = w;
    cache_.Learn(*FindNfsProc(NFSPROC3_REMOVE), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_REMOVE3res), res), exp_, user_);
  }
  std::optional<std::string> Getattr(const Export& e, std::string& fh) {
    GETATTR3args args{Fh(fh)};
    return cache_.Answer(*FindNfsProc(NFSPROC3_GETATTR), &args, e, user_);
  }
  std::optional<std::string> Access(std::string& fh, uint32_t mask, const CredKey& who) {
    ACCESS3args args{Fh(fh), mask};
    return cache_.Answer(*FindNfsProc(NFSPROC3_ACCESS), &args, exp_, who);
  }
  std::optional<std::string> Lookup(std::string& dir, const char* name, const CredKey& who) {
    LOOKUP3args args{};
    args.what.dir = Fh(dir);
    args.what.name = const_cast<char*>(name);
    return cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &args, exp_, who);
  }
  static uint32_t StatusOf(const std::optional<std::string>& r) { return LoadBE32(r->data()); }
  // An export (lifetimes 10 s) that serves expired entries during outages,
  // and the detector (5 s) the cache asks from now on.
  const Export& StaleExport() {
    ExportConfig c = MakeConfig(10, 10);
    c.serve_stale_on_outage = true;
    stale_ = std::make_unique<Export>(2, c);
    outage_ = std::make_unique<OutageDetector>(clock_, std::chrono::seconds(5));
    cache_.SetOutage(outage_.get());
    return *stale_;
  }
  std::unique_ptr<Export> stale_;
  std::unique_ptr<OutageDetector> outage_;
  // dir_ searchable by user_ and holding file "f" (file_), both an hour old.
  void LearnDirWithFile() {
    fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
    fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
    LearnAccess(dir_, d, 0x3f, 0x3f, user_);
    LearnLookup(dir_, "f", d, &file_, &f);
  }

  FakeClock clock_;
  Export exp_, zero_;
  MetadataCache cache_;
  CredKey user_ = CredKey::FromIds(1000, 1000, {});
  CredKey other_ = CredKey::FromIds(2000, 2000, {});
  std::string dir_ = "DIR-HANDLE", file_ = "FILE-HANDLE";
};

TEST_F(MetadataCacheTest, GetattrIsAnsweredWithinTheLifetimeOnly) {
  LearnGetattr(exp_, file_, Attr(NF3REG, 5, kWall0 - 3600));
  std::optional<std::string> r = Getattr(exp_, file_);
  ASSERT_TRUE(r);
  XdrValue<GETATTR3res> res(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
  ASSERT_TRUE(res.Decode(*r));
  EXPECT_EQ(res->status, NFS3_OK);
  EXPECT_EQ(res->GETATTR3res_u.resok.obj_attributes.size, 5u);
  clock_.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(Getattr(exp_, file_));
}

// nfsedge drop-cache while calls are on their way: their replies tell of
// the state dropped and are not kept; a call sent after is.
TEST_F(MetadataCacheTest, AReplyToACallSentBeforeADropCacheIsNotKept) {
  const SentCall before{std::chrono::steady_clock::now(), 1};
  cache_.Clear();
  const SentCall after{std::chrono::steady_clock::now() + std::chrono::milliseconds(1), 1};
  for (const SentCall* sent : {&before, &after}) {
    GETATTR3args args{Fh(file_)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = Attr(NF3REG, 5, kWall0 - 3600);
    cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), res), exp_, user_, *sent);
    EXPECT_EQ(Getattr(exp_, file_).has_value(), sent == &after);
  }
}

TEST_F(MetadataCacheTest, LifetimeZeroNeverAnswers) {
  LearnGetattr(zero_, file_, Attr(NF3REG, 5, kWall0 - 3600));
  EXPECT_FALSE(Getattr(zero_, file_));
}

// The permissions the write path buffers on are fresh for the export the
// WRITE came through: an export with shorter lifetimes (nested, or after a
// reload lowered them) does not take an entry learned under longer ones.
TEST_F(MetadataCacheTest, FreshPermissionsFollowTheAnsweringExportsLifetime) {
  LearnGetattr(exp_, file_, Attr(NF3REG, 5, kWall0 - 3600, 0644));
  EXPECT_TRUE(cache_.FreshPermissions(file_, exp_));
  EXPECT_FALSE(cache_.FreshPermissions(file_, zero_)) << "fresh past a lifetime of 0";
}

// Its min applies as its max does: a file changed a second ago, learned
// through an export whose acregmin is 30 s, is fresh there for 30 s but
// through one whose acregmin is 3 s for 3 s only.
TEST_F(MetadataCacheTest, TheAnsweringExportsShorterMinApplies) {
  const Export longer(2, MakeConfig(30, 60)), shorter(3, MakeConfig(3, 60));
  LearnGetattr(longer, file_, Attr(NF3REG, 5, kWall0 - 1));
  clock_.Advance(std::chrono::seconds(5));
  EXPECT_TRUE(Getattr(longer, file_));
  EXPECT_FALSE(Getattr(shorter, file_)) << "answered 5 s after learning, past a lifetime of 3 s";
  EXPECT_FALSE(cache_.FreshPermissions(file_, shorter));
}

TEST_F(MetadataCacheTest, AccessIsPerCredentialAndNeedsTheAskedBits) {
  fattr3 a = Attr(NF3REG, 5, kWall0 - 3600, 0640);
  LearnAccess(file_, a, ACCESS3_READ | ACCESS3_MODIFY, ACCESS3_READ, user_);
  std::optional<std::string> r = Access(file_, ACCESS3_READ, user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3_OK));
  EXPECT_FALSE(Access(file_, ACCESS3_READ, other_)) << "another user's answer";
  EXPECT_FALSE(Access(file_, ACCESS3_EXECUTE, user_)) << "bits never asked";
}

TEST_F(MetadataCacheTest, LookupNeedsSearchEvidenceForTheCaller) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600, 0700);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  LearnLookup(dir_, "f", d, &file_, &f);
  EXPECT_FALSE(Lookup(dir_, "f", user_)) << "no ACCESS evidence yet";
  LearnAccess(dir_, d, 0x3f, ACCESS3_LOOKUP | ACCESS3_READ, user_);
  std::optional<std::string> r = Lookup(dir_, "f", user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3_OK));
  EXPECT_FALSE(Lookup(dir_, "f", other_));
  LearnAccess(dir_, d, 0x3f, 0, other_);  // the upstream refuses the other user
  EXPECT_FALSE(Lookup(dir_, "f", other_));
}

TEST_F(MetadataCacheTest, NegativeLookupIsAnsweredNoent) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  LearnAccess(dir_, d, 0x3f, 0x3f, user_);
  LearnLookup(dir_, "missing", d, nullptr, nullptr);
  std::optional<std::string> r = Lookup(dir_, "missing", user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3ERR_NOENT));
}

TEST_F(MetadataCacheTest, DirectoryChangedElsewhereLosesItsNames) {
  LearnDirWithFile();
  ASSERT_TRUE(Lookup(dir_, "f", user_));
  // A REMOVE of another name whose wcc "before" is not what was cached.
  REMOVE3args args{};
  args.object.dir = Fh(dir_);
  args.object.name = const_cast<char*>("g");
  REMOVE3res res{};
  res.status = NFS3_OK;
  wcc_data& w = res.REMOVE3res_u.resok.dir_wcc;
  w.before.attributes_follow = TRUE;
  w.before.pre_op_attr_u.attributes.size = 4096;
  w.before.pre_op_attr_u.attributes.mtime.seconds = kWall0 - 60;  // changed meanwhile
  w.before.pre_op_attr_u.attributes.ctime.seconds = kWall0 - 60;
  fattr3 after = Attr(NF3DIR, 4096, kWall0);
  w.after = PostOp(after);
  cache_.Learn(*FindNfsProc(NFSPROC3_REMOVE), &args,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_REMOVE3res), res), exp_, user_);
  EXPECT_FALSE(Lookup(dir_, "f", user_)) << "names of a directory changed elsewhere";
}

TEST_F(MetadataCacheTest, OwnRemoveForgetsTheChildAndLeavesANegativeName) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  LearnAccess(dir_, d, 0x3f, 0x3f, user_);
  LearnLookup(dir_, "f", d, &file_, &f);
  ASSERT_TRUE(Getattr(exp_, file_));
  LearnRemove(dir_, "f", Wcc(d, Attr(NF3DIR, 4096, kWall0)));
  EXPECT_FALSE(Getattr(exp_, file_)) << "the removed file's attributes";
  std::optional<std::string> r = Lookup(dir_, "f", user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3ERR_NOENT));
}

// Found by nfsedge-fsx (seed 4, step 38999): link a b; rename a b (a no-op:
// both names stay); stat both; unlink a. The file's link count went from 2 to
// 1, but the rename had made the proxy forget which handle "a" named, so the
// REMOVE left the file's cached attributes (nlink 2) in place.
TEST_F(MetadataCacheTest, RemoveAfterRenameOntoAnotherLinkForgetsTheFileAttributes) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  f.nlink = 2;
  LearnAccess(dir_, d, 0x3f, 0x3f, user_);
  LearnLookup(dir_, "a", d, &file_, &f);
  LearnLookup(dir_, "b", d, &file_, &f);
  // rename a b: ganesha succeeds and changes nothing.
  RENAME3args rn{};
  rn.from.dir = Fh(dir_);
  rn.from.name = const_cast<char*>("a");
  rn.to.dir = Fh(dir_);
  rn.to.name = const_cast<char*>("b");
  RENAME3res rr{};
  rr.status = NFS3_OK;
  rr.RENAME3res_u.resok.fromdir_wcc = Wcc(d, d);
  rr.RENAME3res_u.resok.todir_wcc = Wcc(d, d);
  cache_.Learn(*FindNfsProc(NFSPROC3_RENAME), &rn,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_RENAME3res), rr), exp_, user_);
  // lstat b (upstream: the attributes come back), lstat a (from the cache).
  LearnLookup(dir_, "b", d, &file_, &f);
  std::optional<std::string> a = Lookup(dir_, "a", user_);
  ASSERT_TRUE(a) << "both names stay after the no-op rename";
  EXPECT_EQ(StatusOf(a), static_cast<uint32_t>(NFS3_OK));
  ASSERT_TRUE(Getattr(exp_, file_));
  // unlink a: the file's link count drops; the wcc data is only the directory's.
  LearnRemove(dir_, "a", Wcc(d, Attr(NF3DIR, 4096, kWall0)));
  EXPECT_FALSE(Getattr(exp_, file_)) << "the file's cached attributes (nlink 2) survived";
  std::optional<std::string> b = Lookup(dir_, "b", user_);
  EXPECT_FALSE(b && StatusOf(b) == NFS3_OK) << "b answered with the stale link count";
}

// A LINK answered without the file's attributes (RFC 1813 allows it) still
// changed its link count and ctime: the cached ones are not served.
TEST_F(MetadataCacheTest, ALinkWithoutTheFilesAttributesForgetsThem) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  LearnGetattr(exp_, file_, f);
  ASSERT_TRUE(Getattr(exp_, file_));
  std::string other_dir = "OTHER-DIR";
  LINK3args ln{};
  ln.file = Fh(file_);
  ln.link.dir = Fh(other_dir);
  ln.link.name = const_cast<char*>("l");
  LINK3res lr{};
  lr.status = NFS3_OK;
  lr.LINK3res_u.resok.linkdir_wcc = Wcc(d, Attr(NF3DIR, 4096, kWall0));
  cache_.Learn(*FindNfsProc(NFSPROC3_LINK), &ln,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_LINK3res), lr), exp_, user_);
  EXPECT_FALSE(Getattr(exp_, file_)) << "nlink 1 served after the file got a second name";
}

// A reply the upstream sent before a REMOVE of another link (a background
// WRITE's post-op attributes, nlink 2) that arrives after the REMOVE does not
// bring back the old link count: the object shares the directory's new ctime,
// and older attributes are refused until newer ones come (long run, seed 1001).
TEST_F(MetadataCacheTest, AttributesOlderThanARemoveDoNotComeBack) {
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  f.nlink = 2;
  LearnAccess(dir_, d, 0x3f, 0x3f, user_);
  LearnLookup(dir_, "a", d, &file_, &f);
  LearnRemove(dir_, "a", Wcc(d, Attr(NF3DIR, 4096, kWall0)));
  fattr3 late = Attr(NF3REG, 9, kWall0 - 10);  // written before the REMOVE
  late.nlink = 2;
  LearnGetattr(exp_, file_, late);
  EXPECT_FALSE(Getattr(exp_, file_)) << "attributes from before the REMOVE came back";
  fattr3 now = Attr(NF3REG, 9, kWall0);  // after it: the REMOVE's ctime
  now.nlink = 1;
  LearnGetattr(exp_, file_, now);
  EXPECT_TRUE(Getattr(exp_, file_)) << "attributes from the REMOVE on are cached again";
}

// The upstream answers NFS3ERR_STALE for a file (removed or replaced at
// the head office): the file's attributes go, so that neither GETATTR nor
// a LOOKUP of its name (which needs them) hands it out from cache again.
TEST_F(MetadataCacheTest, AStaleAnswerForgetsTheHandle) {
  LearnDirWithFile();
  ASSERT_TRUE(Lookup(dir_, "f", user_));
  ASSERT_TRUE(Getattr(exp_, file_));

  READ3args args{};
  args.file = Fh(file_);
  args.count = 100;
  READ3res res{};
  res.status = NFS3ERR_STALE;
  cache_.Learn(*FindNfsProc(NFSPROC3_READ), &args,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_READ3res), res), exp_, user_);
  EXPECT_FALSE(Getattr(exp_, file_)) << "the server said the handle is stale";
  EXPECT_FALSE(Lookup(dir_, "f", user_)) << "the name still led to the stale handle";
  EXPECT_EQ(cache_.stale_handles(), 1u);
}

// nfsedge drop-cache PATH: a change the attributes do not show (a user the
// server takes out of the directory's group, looking groups up itself)
// takes effect there: every user's ACCESS result for it goes, those of
// other objects stay, and an ACCESS reply sent before does not bring one
// back.
TEST_F(MetadataCacheTest, ForgettingWithAccessDropsEveryUsersResultForThatObject) {
  const fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600, 0750);
  const fattr3 f = Attr(NF3REG, 5, kWall0 - 3600, 0640);
  LearnAccess(dir_, d, 0x3f, ACCESS3_READ | ACCESS3_LOOKUP, user_);
  LearnAccess(dir_, d, 0x3f, ACCESS3_READ | ACCESS3_LOOKUP, other_);
  LearnAccess(file_, f, 0x3f, ACCESS3_READ, user_);
  ASSERT_TRUE(Access(dir_, ACCESS3_READ, user_));
  cache_.ForgetWithAccess(dir_);
  LearnGetattr(exp_, dir_, d);  // the same attributes: nothing shows the change
  EXPECT_FALSE(Access(dir_, ACCESS3_READ, user_)) << "answered from the old result";
  EXPECT_FALSE(Access(dir_, ACCESS3_READ, other_));
  EXPECT_TRUE(Access(file_, ACCESS3_READ, user_)) << "another object's result went too";

  ACCESS3args aa{Fh(dir_), 0x3f};
  ACCESS3res ar{};
  ar.status = NFS3_OK;
  ar.ACCESS3res_u.resok.obj_attributes = PostOp(d);
  ar.ACCESS3res_u.resok.access = ACCESS3_READ | ACCESS3_LOOKUP;
  const std::string granted = Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), ar);
  cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &aa, granted, exp_, user_,
               SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(1), 1});
  EXPECT_FALSE(Access(dir_, ACCESS3_READ, user_)) << "a reply sent before the drop was learned";
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &aa, granted, exp_, user_,
               SentCall{std::chrono::steady_clock::now(), 1});
  EXPECT_TRUE(Access(dir_, ACCESS3_READ, user_)) << "a reply sent after it";
}

// The upstream refuses a user a call on a directory (an ACL changed at the
// head office: ctime only, mode, owner and group as they were): that user's
// ACCESS result for it, from before, no longer answers LOOKUP (nor READDIR
// or READ) from cache; another user's still does.
TEST_F(MetadataCacheTest, AnUpstreamRefusalDropsThatUsersAccessResult) {
  LearnDirWithFile();
  const fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  LearnAccess(dir_, d, 0x3f, 0x3f, other_);
  ASSERT_TRUE(Lookup(dir_, "f", user_));
  ASSERT_TRUE(Lookup(dir_, "f", other_));

  LOOKUP3args args{};
  args.what.dir = Fh(dir_);
  args.what.name = const_cast<char*>("g");
  LOOKUP3res res{};
  res.status = NFS3ERR_ACCES;
  cache_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &args,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res), exp_, user_);
  EXPECT_FALSE(Lookup(dir_, "f", user_)) << "answered from evidence older than the refusal";
  EXPECT_TRUE(Lookup(dir_, "f", other_)) << "another user's evidence went too";
  EXPECT_EQ(cache_.refused_access(), 1u);

  // An ACCESS reply that left before the refusal came does not bring the
  // grant back; one sent after it does.
  ACCESS3args aa{Fh(dir_), 0x3f};
  ACCESS3res ar{};
  ar.status = NFS3_OK;
  ar.ACCESS3res_u.resok.obj_attributes = PostOp(d);
  ar.ACCESS3res_u.resok.access = 0x3f;
  const std::string granted = Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), ar);
  cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &aa, granted, exp_, user_,
               SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(1), 1});
  EXPECT_FALSE(Lookup(dir_, "f", user_)) << "a grant from before the refusal came back";
  // The mark holds back that user's ACCESS results only: attributes and
  // another user's results from replies sent before it are learned.
  const fattr3 d2 = Attr(NF3DIR, 8192, kWall0 - 3000);
  GETATTR3args ga{Fh(dir_)};
  GETATTR3res gr{};
  gr.status = NFS3_OK;
  gr.GETATTR3res_u.resok.obj_attributes = d2;
  cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &ga,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), gr), exp_, other_,
               SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(1), 1});
  std::optional<std::string> now = Getattr(exp_, dir_);
  ASSERT_TRUE(now) << "attributes from before the refusal were held back";
  XdrValue<GETATTR3res> got(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
  ASSERT_TRUE(got.Decode(*now));
  EXPECT_EQ(got->GETATTR3res_u.resok.obj_attributes.size, 8192u);
  ar.ACCESS3res_u.resok.obj_attributes = PostOp(d2);
  cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &aa,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), ar), exp_, other_,
               SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(1), 1});
  EXPECT_TRUE(Access(dir_, ACCESS3_READ, other_)) << "another user's grant was held back";
  EXPECT_FALSE(Access(dir_, ACCESS3_READ, user_));
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &aa,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), ar), exp_, user_,
               SentCall{std::chrono::steady_clock::now(), 1});
  EXPECT_TRUE(Access(dir_, ACCESS3_READ, user_)) << "a grant from after the refusal";

  // A refusal with no entry to drop counts nothing.
  cache_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &args,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res), exp_, other_);
  cache_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &args,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res), exp_, other_);
  EXPECT_EQ(cache_.refused_access(), 2u);
}

// serve_stale_on_outage: while the OutageDetector says the upstream is out,
// expired entries answer GETATTR, ACCESS and LOOKUP on an export that asks
// for it, with the usual evidence per credential; not otherwise, and not
// what a mutation through the proxy invalidated.
TEST_F(MetadataCacheTest, ExpiredEntriesAnswerDuringAnOutageOnlyWhereAllowed) {
  const Export& stale = StaleExport();
  OutageDetector& outage = *outage_;
  auto answer = [&](uint32_t proc, const void* args, const Export& e, const CredKey& who) {
    return cache_.Answer(*FindNfsProc(proc), args, e, who);
  };
  fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  fattr3 f = Attr(NF3REG, 5, kWall0 - 3600);
  std::string other_file = "OTHER-FILE";
  LearnAccess(dir_, d, 0x3f, 0x3f, user_);
  LearnAccess(file_, f, 0x3f, ACCESS3_READ, user_);
  LearnLookup(dir_, "f", d, &file_, &f);
  LearnLookup(dir_, "g", d, &other_file, &f);
  GETATTR3args ga{Fh(file_)};
  ACCESS3args aa{Fh(file_), ACCESS3_READ};
  LOOKUP3args la{};
  la.what.dir = Fh(dir_);
  la.what.name = const_cast<char*>("f");
  clock_.Advance(std::chrono::seconds(11));  // every lifetime is over

  EXPECT_FALSE(answer(NFSPROC3_GETATTR, &ga, stale, user_)) << "no outage yet";
  outage.CallStarted();  // a call waits and nothing answers for 5 s
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(outage.Poll());
  ASSERT_TRUE(cache_.ServeStale(stale));
  EXPECT_FALSE(cache_.ServeStale(exp_));
  EXPECT_FALSE(answer(NFSPROC3_GETATTR, &ga, exp_, user_)) << "export without the option";

  std::optional<std::string> r = answer(NFSPROC3_GETATTR, &ga, stale, user_);
  ASSERT_TRUE(r);
  XdrValue<GETATTR3res> res(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
  ASSERT_TRUE(res.Decode(*r));
  EXPECT_EQ(res->GETATTR3res_u.resok.obj_attributes.size, 5u);
  r = answer(NFSPROC3_ACCESS, &aa, stale, user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3_OK));
  EXPECT_FALSE(answer(NFSPROC3_ACCESS, &aa, stale, other_)) << "no evidence for that user";
  r = answer(NFSPROC3_LOOKUP, &la, stale, user_);
  ASSERT_TRUE(r);
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3_OK));
  EXPECT_FALSE(answer(NFSPROC3_LOOKUP, &la, stale, other_)) << "DESIGN rule 6";
  EXPECT_EQ(cache_.stale_answers(NFSPROC3_GETATTR), 1u);
  EXPECT_EQ(cache_.stale_answers(NFSPROC3_ACCESS), 1u);
  EXPECT_EQ(cache_.stale_answers(NFSPROC3_LOOKUP), 1u);

  // A REMOVE through the proxy (sent before the cut, answered now... or by
  // an upstream that answers it: then the outage is over anyway). What it
  // invalidated is never answered; its name is now a negative one.
  LearnRemove(dir_, "g", Wcc(d, Attr(NF3DIR, 4096, kWall0)));
  GETATTR3args gone{Fh(other_file)};
  EXPECT_FALSE(answer(NFSPROC3_GETATTR, &gone, stale, user_));
  LOOKUP3args lg{};
  lg.what.dir = Fh(dir_);
  lg.what.name = const_cast<char*>("g");
  r = answer(NFSPROC3_LOOKUP, &lg, stale, user_);
  ASSERT_TRUE(r) << "the directory's fresh attributes and negative name";
  EXPECT_EQ(StatusOf(r), static_cast<uint32_t>(NFS3ERR_NOENT));

  outage.CallEnded(true);  // the upstream answers: over
  EXPECT_FALSE(cache_.ServeStale(stale));
  EXPECT_FALSE(answer(NFSPROC3_GETATTR, &ga, stale, user_));
  EXPECT_EQ(cache_.stale_answers(NFSPROC3_GETATTR), 1u);
}

TEST_F(MetadataCacheTest, ClientPathsFollowRememberedNamesUpToAnExportRoot) {
  std::string root = "root-fh", dir = "dir-fh", file = "file-fh", orphan = "orphan-fh";
  const fattr3 d = Attr(NF3DIR, 4096, kWall0 - 100);
  const fattr3 f = Attr(NF3REG, 10, kWall0 - 100, 0644);
  LearnLookup(root, "projects", d, &dir, &d);
  LearnLookup(dir, "plan.txt", d, &file, &f);
  std::string elsewhere = "unmounted-dir-fh";
  LearnLookup(elsewhere, "lost.txt", d, &orphan, &f);
  ExportTable exports({MakeConfig(10, 10)});
  HandleRegistry registry(100);
  registry.Add(root, 0, /*root=*/true);
  registry.Add(dir, 0);
  registry.Add(file, 0);

  std::vector<std::string> paths =
      ClientPaths({file, dir, root, orphan, "never-seen"}, cache_, registry, exports);
  ASSERT_EQ(paths.size(), 5u);
  EXPECT_EQ(paths[0], "/e/projects/plan.txt");
  EXPECT_EQ(paths[1], "/e/projects");
  EXPECT_EQ(paths[2], "/e");
  EXPECT_EQ(paths[3], HexBytes(orphan, 32) + " .../lost.txt") << "the chain of names breaks";
  EXPECT_EQ(paths[4], HexBytes("never-seen", 32));

  // A reload that shrinks the name bound forgets the names: handles again.
  CacheConfig smaller;
  smaller.max_name_entries = 0;
  cache_.SetLimits(smaller);
  EXPECT_EQ(ClientPaths({file}, cache_, registry, exports)[0], HexBytes(file, 32));
}

// READLINK: a symlink's target is answered from cache only to a credential
// the upstream gave it to, while the link's attributes are fresh and show
// the stamp the target came with.
class LinkCacheTest : public MetadataCacheTest {
 protected:
  // The upstream's answer to `who`'s READLINK of link_ (a call `sent`):
  // `target`, the link at `a` (no attributes if null); or `status`.
  void LearnReadlink(const CredKey& who, const char* target, const fattr3* a,
                     nfsstat3 status = NFS3_OK, SentCall sent = {}, bool per_credential = true) {
    READLINK3args args{Fh(link_)};
    READLINK3res res{};
    res.status = status;
    if (status == NFS3_OK) {
      if (a != nullptr) res.READLINK3res_u.resok.symlink_attributes = PostOp(*a);
      res.READLINK3res_u.resok.data = const_cast<char*>(target);
    } else if (a != nullptr) {
      res.READLINK3res_u.resfail.symlink_attributes = PostOp(*a);
    }
    cache_.Learn(*FindNfsProc(NFSPROC3_READLINK), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_READLINK3res), res), exp_, who, sent,
                 per_credential);
  }
  // The cached answer to `who`'s READLINK: its target, or nullopt.
  std::optional<std::string> Readlink(const CredKey& who, const Export* e = nullptr) {
    READLINK3args args{Fh(link_)};
    std::optional<std::string> r =
        cache_.Answer(*FindNfsProc(NFSPROC3_READLINK), &args, e ? *e : exp_, who);
    if (!r) return std::nullopt;
    XdrValue<READLINK3res> res(reinterpret_cast<xdrproc_t>(xdr_READLINK3res));
    EXPECT_TRUE(res.Decode(*r));
    EXPECT_EQ(res->status, NFS3_OK);
    EXPECT_TRUE(res->READLINK3res_u.resok.symlink_attributes.attributes_follow);
    return std::string(res->READLINK3res_u.resok.data);
  }
  std::string link_ = "LINK-HANDLE-0001";
  const fattr3 link_attr_ = Attr(NF3LNK, 11, kWall0 - 3600, 0777);
};

TEST_F(LinkCacheTest, ATargetIsAnsweredToTheCredentialsItWasGivenTo) {
  EXPECT_FALSE(Readlink(user_)) << "nothing learned yet";
  LearnReadlink(user_, "../assets/v3", &link_attr_);
  EXPECT_EQ(Readlink(user_), "../assets/v3");
  EXPECT_FALSE(Readlink(other_)) << "the upstream never answered this credential";
  LearnReadlink(other_, "../assets/v3", &link_attr_);
  EXPECT_EQ(Readlink(other_), "../assets/v3");
  EXPECT_EQ(Readlink(user_), "../assets/v3") << "both kept";
  EXPECT_EQ(cache_.links().stats().hits, 3u);
  // Within the export's lifetime only.
  clock_.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(Readlink(user_));
  // Not through an export that always asks.
  LearnGetattr(exp_, link_, link_attr_);
  EXPECT_EQ(Readlink(user_), "../assets/v3");
  EXPECT_FALSE(Readlink(user_, &zero_));
}

TEST_F(LinkCacheTest, AnotherStampOrNoAttributesKeepsNothing) {
  LearnReadlink(user_, "old", &link_attr_);
  ASSERT_EQ(Readlink(user_), "old");
  // The link's attributes change (a server reusing the handle): the target
  // learned under the old ones is not answered.
  fattr3 changed = Attr(NF3LNK, 3, kWall0 - 10, 0777);
  LearnGetattr(exp_, link_, changed);
  EXPECT_FALSE(Readlink(user_));
  EXPECT_EQ(cache_.links().size(), 0u) << "dropped once seen stale";
  // A reply without attributes teaches no target.
  LearnReadlink(user_, "new", nullptr);
  EXPECT_FALSE(Readlink(user_));
  // Nor does one whose attributes are not a link's.
  fattr3 file = Attr(NF3REG, 3, kWall0 - 10);
  LearnReadlink(user_, "new", &file);
  EXPECT_FALSE(Readlink(user_));
  // (A reply sent after those: the type and mode of one ctime it replaces
  // could not be ordered against the late ones.)
  std::this_thread::sleep_for(std::chrono::microseconds(1));
  LearnReadlink(user_, "new", &changed, NFS3_OK, SentCall{std::chrono::steady_clock::now(), 1});
  EXPECT_EQ(Readlink(user_), "new");
}

TEST_F(LinkCacheTest, ARefusalOrAStaleHandleTakesItAway) {
  LearnReadlink(user_, "t", &link_attr_);
  LearnReadlink(other_, "t", &link_attr_);
  // The server refuses other_ now (an ACL changed at the head office).
  LearnReadlink(other_, nullptr, &link_attr_, NFS3ERR_ACCES);
  EXPECT_FALSE(Readlink(other_));
  EXPECT_EQ(Readlink(user_), "t");
  // A reply to other_'s call sent before the refusal does not bring it back.
  LearnReadlink(other_, "t", &link_attr_, NFS3_OK,
                SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(5), 1});
  EXPECT_FALSE(Readlink(other_));
  // Another error (the handle no longer a link's) leaves nothing to answer.
  LearnReadlink(user_, nullptr, nullptr, NFS3ERR_INVAL);
  EXPECT_FALSE(Readlink(user_));
  LearnReadlink(user_, "t", &link_attr_);
  ASSERT_EQ(Readlink(user_), "t");
  // The link is gone on the server.
  LearnReadlink(user_, nullptr, nullptr, NFS3ERR_STALE);
  EXPECT_FALSE(Readlink(user_));
  EXPECT_EQ(cache_.links().size(), 0u);
  // drop-cache forgets it too.
  LearnReadlink(user_, "t", &link_attr_);
  ASSERT_EQ(Readlink(user_), "t");
  cache_.ForgetWithAccess(link_);
  LearnGetattr(exp_, link_, link_attr_);
  EXPECT_FALSE(Readlink(user_));
}

// A credential never answered from cache (more than 16 groups: its key may
// be another's) teaches no target, but the rest of the reply is learned.
TEST_F(LinkCacheTest, ACredentialNeverAnsweredFromCacheTeachesNoTarget) {
  LearnReadlink(user_, "t", &link_attr_, NFS3_OK, {}, /*per_credential=*/false);
  EXPECT_FALSE(Readlink(user_));
  EXPECT_TRUE(Getattr(exp_, link_)) << "its attributes are learned";
}

// During an outage, on an export with serve_stale_on_outage, a target past
// its link's lifetime answers the credentials it was given to (counted);
// a SETATTR of the link through the proxy (a new ctime) ends that.
TEST_F(LinkCacheTest, AnExpiredTargetAnswersDuringAnOutageWhereAllowed) {
  const Export& stale = StaleExport();
  OutageDetector& outage = *outage_;
  LearnReadlink(user_, "t", &link_attr_);
  clock_.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(Readlink(user_, &stale)) << "no outage yet";
  outage.CallStarted();
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(outage.Poll());
  EXPECT_FALSE(Readlink(user_)) << "export without the option";
  EXPECT_EQ(Readlink(user_, &stale), "t");
  EXPECT_FALSE(Readlink(other_, &stale)) << "DESIGN rule 6";
  EXPECT_EQ(cache_.stale_answers(NFSPROC3_READLINK), 1u);
  // lchown through the proxy: the link's attributes move on.
  SETATTR3args sa{};
  sa.object = Fh(link_);
  SETATTR3res res{};
  res.status = NFS3_OK;
  res.SETATTR3res_u.resok.obj_wcc = Wcc(link_attr_, Attr(NF3LNK, 11, kWall0, 0777));
  cache_.Learn(*FindNfsProc(NFSPROC3_SETATTR), &sa,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_SETATTR3res), res), stale, user_);
  EXPECT_FALSE(Readlink(user_, &stale)) << "the target was learned under the old attributes";
}

TEST_F(LinkCacheTest, TheBoundHoldsAndZeroKeepsNone) {
  CacheConfig c;
  c.max_link_bytes = 0;
  cache_.SetLimits(c);
  LearnReadlink(user_, "t", &link_attr_);
  EXPECT_FALSE(Readlink(user_));
  EXPECT_EQ(cache_.links().bytes(), 0u);
  c.max_link_bytes = 4096;
  cache_.SetLimits(c);
  // Many links, each with a long target: never above the bound.
  std::string target(1000, 'x');
  for (int i = 0; i < 20; ++i) {
    link_ = "LINK-" + std::to_string(i);
    LearnReadlink(user_, target.c_str(), &link_attr_);
    EXPECT_LE(cache_.links().bytes(), 4096u);
  }
  EXPECT_EQ(Readlink(user_), target) << "the latest is kept";
  link_ = "LINK-0";
  EXPECT_FALSE(Readlink(user_)) << "the oldest went";
  EXPECT_GT(cache_.links().stats().evictions, 0u);
  // One larger than the whole bound is not kept, and evicts nothing.
  const size_t before = cache_.links().size();
  link_ = "LINK-HUGE";
  LearnReadlink(user_, std::string(4000, 'y').c_str(), &link_attr_);
  EXPECT_FALSE(Readlink(user_));
  EXPECT_EQ(cache_.links().size(), before);
}

// What FSINFO says of a file system is answered while the object's
// attributes are fresh and for no longer than their lifetime; an error
// (other than JUKEBOX) forgets it.
TEST_F(MetadataCacheTest, FsinfoIsAnsweredWithinTheAttributesLifetime) {
  const fattr3 d = Attr(NF3DIR, 4096, kWall0 - 3600);
  auto learn = [&](nfsstat3 status, SentCall sent = {}) {
    FSINFO3args args{Fh(dir_)};
    FSINFO3res res{};
    res.status = status;
    if (status == NFS3_OK) {
      res.FSINFO3res_u.resok.obj_attributes = PostOp(d);
      res.FSINFO3res_u.resok.rtmax = 65536;
      res.FSINFO3res_u.resok.maxfilesize = 12345;
    }
    cache_.Learn(*FindNfsProc(NFSPROC3_FSINFO), &args,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res), res), exp_, user_, sent);
  };
  auto answer = [&](const Export& e) -> std::optional<FSINFO3resok> {
    FSINFO3args args{Fh(dir_)};
    std::optional<std::string> r = cache_.Answer(*FindNfsProc(NFSPROC3_FSINFO), &args, e, other_);
    if (!r) return std::nullopt;
    XdrValue<FSINFO3res> res(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res));
    EXPECT_TRUE(res.Decode(*r));
    EXPECT_TRUE(res->FSINFO3res_u.resok.obj_attributes.attributes_follow);
    return res->FSINFO3res_u.resok;
  };
  EXPECT_FALSE(answer(exp_));
  learn(NFS3_OK);
  std::optional<FSINFO3resok> a = answer(exp_);
  ASSERT_TRUE(a) << "to any credential, as the upstream";
  EXPECT_EQ(a->rtmax, 65536u);
  EXPECT_EQ(a->maxfilesize, 12345u);
  EXPECT_FALSE(answer(zero_)) << "not through an export that always asks";
  clock_.Advance(std::chrono::seconds(11));
  EXPECT_FALSE(answer(exp_)) << "attributes expired";
  LearnGetattr(exp_, dir_, d);
  EXPECT_FALSE(answer(exp_)) << "fresh attributes, but the FSINFO is older than their lifetime";
  learn(NFS3_OK);
  EXPECT_TRUE(answer(exp_));
  learn(NFS3ERR_JUKEBOX);
  EXPECT_TRUE(answer(exp_)) << "a busy server says nothing new";
  learn(NFS3ERR_IO);
  EXPECT_FALSE(answer(exp_));
  learn(NFS3_OK);
  cache_.ForgetNow(dir_);
  LearnGetattr(exp_, dir_, d);
  EXPECT_FALSE(answer(exp_)) << "forgotten with the handle";
  // A reply to a call sent before that does not bring it back.
  learn(NFS3_OK, SentCall{std::chrono::steady_clock::now() - std::chrono::seconds(5), 1});
  LearnGetattr(exp_, dir_, d);
  EXPECT_FALSE(answer(exp_)) << "a reply from before the forget";
  learn(NFS3_OK);
  EXPECT_TRUE(answer(exp_));
}

}  // namespace
}  // namespace nfsedge
