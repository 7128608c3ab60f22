// Directory listings with a fake clock: READDIRPLUS pages learned from the
// upstream answer READDIRPLUS and READDIR while the directory is fresh and
// unchanged, to credentials with evidence, with fresh entry attributes; and
// the READDIRPLUS -> READDIR conversion respects the client's count.
#include "proxy/dir_listing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "nfs_xdr_builders.h"
#include "proxy/metadata_cache.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start

fattr3 Attr(ftype3 type, uint64_t size, uint32_t changed_at, uint64_t fileid, uint32_t mode = 0755) {
  fattr3 a{};
  a.type = type;
  a.mode = mode;
  a.nlink = 1;
  a.size = size;
  a.fileid = fileid;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

// A listing as the upstream sends it: names, handles, attributes, cookies.
struct Listing {
  struct Item {
    std::string name, fh;
    fattr3 attr;
  };
  std::vector<Item> items;
  fattr3 dir_attr{};
  bool eof = true;
  char verf[NFS3_COOKIEVERFSIZE] = {'V', 'E', 'R', 'F', '0', '0', '0', '1'};

  // Returns READDIRPLUS3res (XDR); cookies are 100 + index.
  std::string Encode() const {
    std::vector<entryplus3> e(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      e[i].fileid = items[i].attr.fileid;
      e[i].name = const_cast<char*>(items[i].name.c_str());
      e[i].cookie = 100 + i;
      e[i].name_attributes = PostOp(items[i].attr);
      e[i].name_handle.handle_follows = TRUE;
      e[i].name_handle.post_op_fh3_u.handle = Fh(items[i].fh);
      e[i].nextentry = i + 1 < e.size() ? &e[i + 1] : nullptr;
    }
    READDIRPLUS3res res{};
    res.status = NFS3_OK;
    res.READDIRPLUS3res_u.resok.dir_attributes = PostOp(dir_attr);
    std::memcpy(res.READDIRPLUS3res_u.resok.cookieverf, verf, NFS3_COOKIEVERFSIZE);
    res.READDIRPLUS3res_u.resok.reply.entries = e.empty() ? nullptr : e.data();
    res.READDIRPLUS3res_u.resok.reply.eof = eof;
    return Xdr(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res), res);
  }
};

class DirListingTest : public ::testing::Test {
 protected:
  DirListingTest() : exp_(0, MakeConfig(5, 30)), cache_(clock_, {}) {
    listing_.dir_attr = Attr(NF3DIR, 4096, kWall0 - 3600, 1, 0700);
    listing_.items = {{".", dir_, listing_.dir_attr},
                      {"a", "FH-A", Attr(NF3REG, 10, kWall0 - 3600, 2)},
                      {"bb", "FH-B", Attr(NF3REG, 20, kWall0 - 3600, 3)}};
  }

  // File attributes live 5 s, directory attributes 30 s.
  static ExportConfig MakeConfig(uint32_t reg, uint32_t dir) {
    ExportConfig c;
    c.path = "/e";
    c.upstream_path = "/e";
    c.acregmin = c.acregmax = reg;
    c.acdirmin = c.acdirmax = dir;
    return c;
  }

  READDIRPLUS3args PlusArgs(uint32_t dircount = 4096, uint32_t maxcount = 32768) {
    READDIRPLUS3args a{};
    a.dir = Fh(dir_);
    a.dircount = dircount;
    a.maxcount = maxcount;
    return a;
  }
  void LearnListing(const READDIRPLUS3args& a, const std::string& results) {
    cache_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &a, results, exp_, user_);
  }
  void LearnAccess(const CredKey& who, uint32_t granted) {
    ACCESS3args a{Fh(dir_), 0x3f};
    ACCESS3res res{};
    res.status = NFS3_OK;
    res.ACCESS3res_u.resok.obj_attributes = PostOp(listing_.dir_attr);
    res.ACCESS3res_u.resok.access = granted;
    cache_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &a,
                 Xdr(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), res), exp_, who);
  }
  std::optional<std::string> Plus(const CredKey& who, READDIRPLUS3args a) {
    return cache_.Answer(*FindNfsProc(NFSPROC3_READDIRPLUS), &a, exp_, who);
  }
  std::optional<std::string> Plain(const CredKey& who, uint32_t count, uint64_t cookie = 0) {
    READDIR3args a{};
    a.dir = Fh(dir_);
    a.cookie = cookie;
    std::memcpy(a.cookieverf, listing_.verf, cookie ? NFS3_COOKIEVERFSIZE : 0);
    a.count = count;
    return cache_.Answer(*FindNfsProc(NFSPROC3_READDIR), &a, exp_, who);
  }
  // Fills the cache with `listing_` and evidence for `user_`.
  std::string Fill() {
    std::string results = listing_.Encode();
    LearnListing(PlusArgs(), results);
    LearnAccess(user_, 0x3f);
    return results;
  }

  FakeClock clock_;
  Export exp_;
  MetadataCache cache_;
  CredKey user_ = CredKey::FromIds(1000, 1000, {});
  CredKey other_ = CredKey::FromIds(2000, 2000, {});
  std::string dir_ = "DIR-HANDLE";
  Listing listing_;
};

TEST_F(DirListingTest, ReaddirplusIsAnsweredWithTheUpstreamBytes) {
  std::string upstream = Fill();
  std::optional<std::string> r = Plus(user_, PlusArgs());
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, upstream);
  EXPECT_EQ(cache_.dirs().stats().hits, 1u);
}

TEST_F(DirListingTest, NoEvidenceNoListing) {
  Fill();
  EXPECT_FALSE(Plus(other_, PlusArgs())) << "no ACCESS result for this user";
  LearnAccess(other_, 0);  // the upstream refuses the other user (mode 0700)
  EXPECT_FALSE(Plus(other_, PlusArgs()));
  EXPECT_FALSE(Plain(other_, 4096));
  LearnAccess(other_, ACCESS3_LOOKUP);  // search but not read
  EXPECT_FALSE(Plus(other_, PlusArgs()));
  EXPECT_TRUE(Plus(user_, PlusArgs()));
}

TEST_F(DirListingTest, ChangeBehindTheProxyShowsWithNewAttributes) {
  Fill();
  ASSERT_TRUE(Plus(user_, PlusArgs()));
  // A GETATTR (e.g. revalidation) finds the directory changed.
  fattr3 changed = listing_.dir_attr;
  changed.mtime.seconds = changed.ctime.seconds = kWall0 - 1;
  GETATTR3args g{Fh(dir_)};
  GETATTR3res res{};
  res.status = NFS3_OK;
  res.GETATTR3res_u.resok.obj_attributes = changed;
  cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &g,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), res), exp_, user_);
  EXPECT_FALSE(Plus(user_, PlusArgs()));
  EXPECT_EQ(cache_.dirs().size(), 0u) << "the stale pages are dropped";
}

TEST_F(DirListingTest, NothingIsServedOnceTheDirectoryAttributesExpire) {
  Fill();
  clock_.Advance(std::chrono::seconds(31));
  EXPECT_FALSE(Plus(user_, PlusArgs()));
}

TEST_F(DirListingTest, CreateThroughTheProxyDropsThePages) {
  Fill();
  CREATE3args a{};
  a.where.dir = Fh(dir_);
  a.where.name = const_cast<char*>("new");
  CREATE3res res{};
  res.status = NFS3_OK;
  std::string child = "FH-NEW";
  res.CREATE3res_u.resok.obj.handle_follows = TRUE;
  res.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(child);
  res.CREATE3res_u.resok.obj_attributes = PostOp(Attr(NF3REG, 0, kWall0, 9));
  wcc_data& w = res.CREATE3res_u.resok.dir_wcc;
  w.before.attributes_follow = TRUE;
  w.before.pre_op_attr_u.attributes.size = listing_.dir_attr.size;
  w.before.pre_op_attr_u.attributes.mtime = listing_.dir_attr.mtime;
  w.before.pre_op_attr_u.attributes.ctime = listing_.dir_attr.ctime;
  fattr3 after = listing_.dir_attr;
  after.mtime.seconds = after.ctime.seconds = kWall0;
  w.after = PostOp(after);
  cache_.Learn(*FindNfsProc(NFSPROC3_CREATE), &a,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_CREATE3res), res), exp_, user_);
  EXPECT_FALSE(Plus(user_, PlusArgs()));
  EXPECT_EQ(cache_.dirs().size(), 0u);
}

TEST_F(DirListingTest, EntryAttributesAreTheAttributeCachesOrNothing) {
  Fill();
  // A WRITE through the proxy grows "a": the listing shows the new size.
  std::string fh_a = "FH-A";
  WRITE3args w{};
  w.file = Fh(fh_a);
  WRITE3res wr{};
  wr.status = NFS3_OK;
  fattr3 grown = listing_.items[1].attr;
  grown.size = 4000;
  grown.mtime.seconds = grown.ctime.seconds = kWall0;
  wr.WRITE3res_u.resok.file_wcc.after = PostOp(grown);
  cache_.Learn(*FindNfsProc(NFSPROC3_WRITE), &w,
               Xdr(reinterpret_cast<xdrproc_t>(xdr_WRITE3res), wr), exp_, user_);
  std::optional<std::string> r = Plus(user_, PlusArgs());
  ASSERT_TRUE(r);
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  ASSERT_TRUE(res.Decode(*r));
  const entryplus3* a = res->READDIRPLUS3res_u.resok.reply.entries->nextentry;
  ASSERT_STREQ(a->name, "a");
  EXPECT_EQ(a->name_attributes.post_op_attr_u.attributes.size, 4000u);
  // File attributes live 5 s, the directory's 30 s: after 6 s the entries'
  // attributes are no longer fresh, so neither is the page.
  clock_.Advance(std::chrono::seconds(6));
  EXPECT_FALSE(Plus(user_, PlusArgs()));
}

TEST_F(DirListingTest, DotDotWithoutFreshAttributesIsAnsweredWithout) {
  // An export root's ".." is outside the export: its attributes are never
  // learned. The listing is answered all the same, ".." without them (as
  // the upstream may send it); the other entries keep theirs.
  listing_.items.insert(listing_.items.begin() + 1,
                        {"..", "FH-PARENT", Attr(NF3DIR, 4096, kWall0 - 3600, 7)});
  Fill();
  std::optional<std::string> r = Plus(user_, PlusArgs());
  ASSERT_TRUE(r);
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  ASSERT_TRUE(res.Decode(*r));
  const entryplus3* dotdot = res->READDIRPLUS3res_u.resok.reply.entries->nextentry;
  ASSERT_STREQ(dotdot->name, "..");
  EXPECT_FALSE(dotdot->name_attributes.attributes_follow);
  ASSERT_TRUE(dotdot->name_handle.handle_follows);
  EXPECT_EQ(std::string(dotdot->name_handle.post_op_fh3_u.handle.data.data_val,
                        dotdot->name_handle.post_op_fh3_u.handle.data.data_len),
            "FH-PARENT");
  const entryplus3* a = dotdot->nextentry;
  ASSERT_STREQ(a->name, "a");
  ASSERT_TRUE(a->name_attributes.attributes_follow);
  EXPECT_EQ(a->name_attributes.post_op_attr_u.attributes.fileid, 2u);
  EXPECT_TRUE(Plain(user_, 4096)) << "READDIR from the same page";
}

// The entries of a READDIRPLUS answer: names and cookies, and its eof.
std::pair<std::vector<std::pair<std::string, uint64_t>>, bool> EntriesOf(const std::string& r) {
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  if (!res.Decode(r) || res->status != NFS3_OK) {
    ADD_FAILURE() << "not an OK READDIRPLUS3res";
    return {};
  }
  std::vector<std::pair<std::string, uint64_t>> out;
  const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
  for (const entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
    out.emplace_back(e->name, e->cookie);
    EXPECT_TRUE(e->name_attributes.attributes_follow || std::string(e->name) == "..");
  }
  return {out, ok.reply.eof != 0};
}

// A request smaller than the page's fill gets the entries that fit it
// (RFC 1813: maxcount bounds the READDIRPLUS3resok, dircount the entries'
// names, fileids and cookies), without eof; none fits: not answered.
TEST_F(DirListingTest, ASmallerRequestGetsWhatFitsOfThePage) {
  Fill();
  EXPECT_TRUE(Plus(user_, PlusArgs(8192, 65536))) << "larger limits than the fill's";
  EXPECT_FALSE(Plus(user_, PlusArgs(4096, 200))) << "not even one entry fits maxcount";
  std::optional<std::string> all = Plus(user_, PlusArgs(4096, 1024));
  ASSERT_TRUE(all) << "smaller than the fill's, but it fits";
  EXPECT_EQ(EntriesOf(*all).first.size(), 3u);
  EXPECT_TRUE(EntriesOf(*all).second);
  // Two entries' worth: the resok's fixed part (104) and two entries of
  // 28 + 4 + 84 + 4 + 4 + 12 (a handle of 10 bytes) = 136 bytes.
  const uint32_t two = 104 + 2 * (28 + 4 + 84 + 4 + 4 + 12);
  std::optional<std::string> part = Plus(user_, PlusArgs(4096, two));
  ASSERT_TRUE(part);
  EXPECT_LE(part->size(), 4 + two);
  auto [entries, eof] = EntriesOf(*part);
  EXPECT_EQ(entries, (std::vector<std::pair<std::string, uint64_t>>{{".", 100}, {"a", 101}}));
  EXPECT_FALSE(eof) << "entries were left out";
  // dircount holds one entry's name, fileid and cookie (28 bytes): one.
  part = Plus(user_, PlusArgs(28, 4096));
  ASSERT_TRUE(part);
  EXPECT_EQ(EntriesOf(*part).first.size(), 1u);
  EXPECT_FALSE(EntriesOf(*part).second);
}

// A client that got part of a page goes on from the last cookie it got:
// answered from the page from the entry after it, with the page's verifier
// (a Linux client lists a directory 4 KiB at a time at first).
TEST_F(DirListingTest, AListingGoesOnFromACookieInsideThePage) {
  Fill();
  READDIRPLUS3args a = PlusArgs();
  a.cookie = 100;
  std::memcpy(a.cookieverf, listing_.verf, NFS3_COOKIEVERFSIZE);
  std::optional<std::string> r = Plus(user_, a);
  ASSERT_TRUE(r);
  auto [entries, eof] = EntriesOf(*r);
  EXPECT_EQ(entries, (std::vector<std::pair<std::string, uint64_t>>{{"a", 101}, {"bb", 102}}));
  EXPECT_TRUE(eof);
  // From the last entry of a page that ends the listing: nothing more.
  a.cookie = 102;
  r = Plus(user_, a);
  ASSERT_TRUE(r);
  EXPECT_TRUE(EntriesOf(*r).first.empty());
  EXPECT_TRUE(EntriesOf(*r).second);
  // READDIR goes on the same way.
  std::optional<std::string> plain = Plain(user_, 4096, 101);
  ASSERT_TRUE(plain);
  XdrValue<READDIR3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIR3res));
  ASSERT_TRUE(res.Decode(*plain));
  ASSERT_EQ(res->status, NFS3_OK);
  ASSERT_NE(res->READDIR3res_u.resok.reply.entries, nullptr);
  EXPECT_STREQ(res->READDIR3res_u.resok.reply.entries->name, "bb");
  // Not a cookie of the page, or another verifier: not answered.
  a.cookie = 99;
  EXPECT_FALSE(Plus(user_, a));
  a.cookie = 101;
  std::memcpy(a.cookieverf, "OTHERVRF", NFS3_COOKIEVERFSIZE);
  EXPECT_FALSE(Plus(user_, a));
  // Nor for a user without evidence.
  std::memcpy(a.cookieverf, listing_.verf, NFS3_COOKIEVERFSIZE);
  EXPECT_FALSE(Plus(other_, a));
}

// At cookie 0 the verifier means nothing (RFC 1813): a client listing the
// directory again from the start with the verifier it was given, as a
// Linux client does, gets the page the proxy holds, however it was filled.
TEST_F(DirListingTest, TheFirstPageIsFoundWhateverVerifierComesWithCookieZero) {
  Fill();  // asked with a zero verifier
  READDIRPLUS3args a = PlusArgs();
  std::memcpy(a.cookieverf, listing_.verf, NFS3_COOKIEVERFSIZE);
  EXPECT_TRUE(Plus(user_, a));
}

TEST_F(DirListingTest, ReaddirIsAnsweredFromAPlusPageWithinCount) {
  Fill();
  std::optional<std::string> r = Plain(user_, 4096);
  ASSERT_TRUE(r);
  XdrValue<READDIR3res> all(reinterpret_cast<xdrproc_t>(xdr_READDIR3res));
  ASSERT_TRUE(all.Decode(*r));
  ASSERT_EQ(all->status, NFS3_OK);
  const READDIR3resok& ok = all->READDIR3res_u.resok;
  EXPECT_EQ(std::memcmp(ok.cookieverf, listing_.verf, NFS3_COOKIEVERFSIZE), 0);
  std::vector<std::string> names;
  std::vector<uint64_t> cookies;
  for (const entry3* e = ok.reply.entries; e; e = e->nextentry) {
    names.push_back(e->name);
    cookies.push_back(e->cookie);
  }
  EXPECT_EQ(names, (std::vector<std::string>{".", "a", "bb"}));
  EXPECT_EQ(cookies, (std::vector<uint64_t>{100, 101, 102}));
  EXPECT_TRUE(ok.reply.eof);
  // status, attributes, verifier, two entries (28 bytes each with a name
  // of up to 4 bytes), list end, eof.
  const uint32_t two = 4 + 4 + 84 + 8 + 28 + 28 + 4 + 4;
  r = Plain(user_, two);
  ASSERT_TRUE(r);
  EXPECT_LE(r->size(), two);
  XdrValue<READDIR3res> part(reinterpret_cast<xdrproc_t>(xdr_READDIR3res));
  ASSERT_TRUE(part.Decode(*r));
  const READDIR3resok& p = part->READDIR3res_u.resok;
  ASSERT_NE(p.reply.entries, nullptr);
  ASSERT_NE(p.reply.entries->nextentry, nullptr);
  EXPECT_EQ(p.reply.entries->nextentry->nextentry, nullptr);
  EXPECT_FALSE(p.reply.eof) << "entries were left out";
}

TEST(ReaddirFromPlusTest, TooSmallForOneEntry) {
  Listing l;
  l.dir_attr = Attr(NF3DIR, 4096, kWall0, 1);
  l.items = {{"only", "FH", Attr(NF3REG, 1, kWall0, 2)}};
  XdrValue<READDIRPLUS3res> plus(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  ASSERT_TRUE(plus.Decode(l.Encode()));
  std::string out = ReaddirFromPlus(plus.get(), 64);
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(LoadBE32(out.data()), static_cast<uint32_t>(NFS3ERR_TOOSMALL));
  out = ReaddirFromPlus(plus.get(), 4096);
  EXPECT_EQ(LoadBE32(out.data()), static_cast<uint32_t>(NFS3_OK));
}

TEST(ReaddirFromPlusTest, FailureKeepsItsStatus) {
  READDIRPLUS3res plus{};
  plus.status = NFS3ERR_NOTDIR;
  std::string out = ReaddirFromPlus(plus, 4096);
  ASSERT_GE(out.size(), 4u);
  EXPECT_EQ(LoadBE32(out.data()), static_cast<uint32_t>(NFS3ERR_NOTDIR));
}

TEST(PlusArgsForReaddirTest, KeepsCookieVerifierAndBoundsTheTransfer) {
  std::string fh = "D";
  READDIR3args a{};
  a.dir = Fh(fh);
  a.cookie = 77;
  std::memcpy(a.cookieverf, "ABCDEFGH", NFS3_COOKIEVERFSIZE);
  a.count = 8192;
  READDIRPLUS3args p = PlusArgsForReaddir(a, 1 << 20);
  EXPECT_EQ(p.cookie, 77u);
  EXPECT_EQ(std::memcmp(p.cookieverf, "ABCDEFGH", NFS3_COOKIEVERFSIZE), 0);
  EXPECT_EQ(p.dircount, 8192u);
  EXPECT_GE(p.maxcount, 8192u);
  a.count = 1 << 30;
  p = PlusArgsForReaddir(a, 1 << 20);
  EXPECT_LE(p.maxcount, 1u << 20);
  EXPECT_LE(p.dircount, 1u << 20);
}

}  // namespace
}  // namespace nfsedge
