// Prefetcher with an in-memory upstream (FakeUpstream, every call held until
// the test answers it) and an event loop driven by hand: what a READDIRPLUS
// listing makes it ask, in which bounds, and what it learns.
#include "proxy/prefetcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cache/block_cache.h"
#include "cache/clock.h"
#include "cache/path_estimator.h"
#include "cache/readahead.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "proxy/read_path.h"
#include "proxy/refresher.h"
#include "rpc/event_loop.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start
constexpr uint32_t kBlock = 4096;
constexpr uint32_t kAllAccess = 0x3f;

template <typename F>
xdrproc_t Proc(F f) {
  return reinterpret_cast<xdrproc_t>(f);
}

template <typename T>
std::string Xdr(xdrproc_t proc, const T& v) {
  std::string out;
  EXPECT_TRUE(XdrEncode(proc, &v, &out));
  return out;
}

nfs_fh3 Fh(const std::string& bytes) {
  nfs_fh3 fh{};
  fh.data.data_val = const_cast<char*>(bytes.data());
  fh.data.data_len = static_cast<u_int>(bytes.size());
  return fh;
}

std::string Bytes(const nfs_fh3& fh) { return std::string(fh.data.data_val, fh.data.data_len); }

post_op_attr PostOp(const fattr3& a) {
  post_op_attr p{};
  p.attributes_follow = TRUE;
  p.post_op_attr_u.attributes = a;
  return p;
}

fattr3 Attr(ftype3 type, uint64_t size, uint64_t fileid) {
  fattr3 a{};
  a.type = type;
  a.mode = type == NF3DIR ? 0755 : 0644;
  a.nlink = 1;
  a.uid = a.gid = 1000;
  a.size = size;
  a.fileid = fileid;
  a.mtime.seconds = a.ctime.seconds = kWall0 - 3600;
  return a;
}

ExportConfig MakeExportConfig() {
  ExportConfig c;
  c.path = "/e";
  c.upstream_path = "/e";
  c.acregmin = c.acdirmin = c.acregmax = c.acdirmax = 60;
  return c;
}

// One directory entry of a listing.
struct Entry {
  std::string name;
  std::string fh;  // empty: no handle in the entry
  fattr3 attr;
  uint64_t cookie;
};

// One page of a READDIRPLUS listing; owns what the XDR structures point to.
class Page {
 public:
  Page(std::vector<Entry> entries, bool eof, std::string verf = "VERF-000")
      : entries_(std::move(entries)), eof_(eof), verf_(std::move(verf)) {
    nodes_.resize(entries_.size());
    for (size_t i = 0; i < entries_.size(); ++i) {
      entryplus3& n = nodes_[i];
      const Entry& e = entries_[i];
      n.fileid = e.attr.fileid;
      n.name = const_cast<char*>(e.name.c_str());
      n.cookie = e.cookie;
      n.name_attributes = PostOp(e.attr);
      n.name_handle.handle_follows = !e.fh.empty();
      if (!e.fh.empty()) n.name_handle.post_op_fh3_u.handle = Fh(e.fh);
      n.nextentry = i + 1 < entries_.size() ? &nodes_[i + 1] : nullptr;
    }
  }
  Page(const Page&) = delete;
  Page& operator=(const Page&) = delete;

  READDIRPLUS3resok ok() const {
    READDIRPLUS3resok ok{};
    ok.dir_attributes = PostOp(Attr(NF3DIR, 4096, 1));
    std::memcpy(ok.cookieverf, verf_.data(), NFS3_COOKIEVERFSIZE);
    ok.reply.entries = nodes_.empty() ? nullptr : const_cast<entryplus3*>(&nodes_[0]);
    ok.reply.eof = eof_;
    return ok;
  }
  std::string Results() const {
    READDIRPLUS3res res{};
    res.status = NFS3_OK;
    res.READDIRPLUS3res_u.resok = ok();
    return Xdr(Proc(xdr_READDIRPLUS3res), res);
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
  std::vector<entryplus3> nodes_;
  bool eof_;
  std::string verf_;
};

// A call the prefetcher (or its ReadPath) sent, decoded.
struct Sent {
  uint32_t proc;
  std::string fh;
  uint64_t cookie = 0;  // READDIRPLUS
  std::string verf;     // READDIRPLUS
  uint32_t access = 0;  // ACCESS
  uint64_t offset = 0;  // READ
  uint32_t count = 0;   // READ
  std::string cred;
};

class PrefetcherTest : public ::testing::Test {
 protected:
  PrefetcherTest()
      : base_(event_base_new()),
        exp_(0, MakeExportConfig()),
        meta_(clock_, CacheConfig{}),
        blocks_(BlockCacheOptions{64 << 20, kBlock}),
        readahead_(clock_, ReadaheadOptions{}),
        path_(clock_),
        up_(base_.get()) {
    ReadPathOptions ro;
    ro.readahead_max = 0;
    rp_ = std::make_unique<ReadPath>(clock_, meta_, blocks_, nullptr, readahead_, path_, up_, ro);
    // The root as the client lists it: a directory, a small and a big file,
    // and what the prefetcher must skip.
    Add("sub", "FH-SUB", NF3DIR, 4096);
    Add("small", "FH-SMALL", NF3REG, 100);
    Add("big", "FH-BIG", NF3REG, 1 << 20);
    objects_["FH-LINK"] = Attr(NF3LNK, 10, 99);
    data_["FH-SMALL"] = std::string(100, 's');
  }

  void TearDown() override {
    AnswerAll();
    Drain();
  }

  void Make(const PrefetchOptions& o) {
    pf_ = std::make_unique<Prefetcher>(
        meta_, rp_.get(), up_,
        [this](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
               const OpaqueAuth& cred) {
          learned_.push_back(p.proc);
          meta_.Learn(p, args, reply->results(), exp, CredKeyOf(cred));
        },
        o);
  }
  static PrefetchOptions Options() {
    PrefetchOptions o;
    o.small_file_bytes = 64 << 10;
    return o;
  }

  void Add(const std::string& name, const std::string& fh, ftype3 type, uint64_t size) {
    objects_[fh] = Attr(type, size, ++next_fileid_);
    root_.push_back(Entry{name, fh, objects_[fh], ++next_cookie_});
  }
  Entry EntryOf(const std::string& name, const std::string& fh, ftype3 type, uint64_t size) {
    objects_[fh] = Attr(type, size, ++next_fileid_);
    return Entry{name, fh, objects_[fh], ++next_cookie_};
  }
  std::unique_ptr<Page> RootPage() {
    std::vector<Entry> e = root_;
    e.insert(e.begin(), Entry{"..", "FH-PARENT", Attr(NF3DIR, 4096, 2), 1});
    e.insert(e.begin(), Entry{".", "FH-ROOT", Attr(NF3DIR, 4096, 1), 0});
    e.push_back(Entry{"nohandle", "", Attr(NF3REG, 10, 77), 90});
    e.push_back(Entry{"link", "FH-LINK", objects_["FH-LINK"], 91});
    return std::make_unique<Page>(std::move(e), true);
  }
  void List(const Page& page, const OpaqueAuth& cred, uint32_t depth = 0) {
    pf_->OnListing("FH-ROOT", page.ok(), exp_, cred, depth);
  }

  void Drain() {
    for (int i = 0; i < 10000; ++i) {
      if (event_base_loop(base_.get(), EVLOOP_NONBLOCK) != 0) return;
    }
    ADD_FAILURE() << "the loop never went idle";
  }

  Sent Decode(size_t i) const {
    const FakeUpstream::Seen& s = up_.calls[i];
    Sent out;
    out.proc = s.proc;
    out.cred = s.cred.body;
    switch (s.proc) {
      case NFSPROC3_ACCESS: {
        XdrValue<ACCESS3args> a(Proc(xdr_ACCESS3args));
        EXPECT_TRUE(a.Decode(s.args));
        out.fh = Bytes(a->object);
        out.access = a->access;
        break;
      }
      case NFSPROC3_READDIRPLUS: {
        XdrValue<READDIRPLUS3args> a(Proc(xdr_READDIRPLUS3args));
        EXPECT_TRUE(a.Decode(s.args));
        out.fh = Bytes(a->dir);
        out.cookie = a->cookie;
        out.verf.assign(a->cookieverf, NFS3_COOKIEVERFSIZE);
        EXPECT_GT(a->dircount, 0u);
        EXPECT_GT(a->maxcount, 0u);
        break;
      }
      case NFSPROC3_READ: {
        XdrValue<READ3args> a(Proc(xdr_READ3args));
        EXPECT_TRUE(a.Decode(s.args));
        out.fh = Bytes(a->file);
        out.offset = a->offset;
        out.count = a->count;
        break;
      }
      case NFSPROC3_GETATTR: {
        XdrValue<GETATTR3args> a(Proc(xdr_GETATTR3args));
        EXPECT_TRUE(a.Decode(s.args));
        out.fh = Bytes(a->object);
        break;
      }
      default:
        ADD_FAILURE() << "unexpected upstream procedure " << s.proc;
    }
    return out;
  }
  std::vector<Sent> Calls() const {
    std::vector<Sent> out;
    for (size_t i = 0; i < up_.calls.size(); ++i) out.push_back(Decode(i));
    return out;
  }
  // The (procedure, handle) pairs sent so far.
  std::multiset<std::pair<uint32_t, std::string>> Asked() const {
    std::multiset<std::pair<uint32_t, std::string>> out;
    for (const Sent& s : Calls()) out.emplace(s.proc, s.fh);
    return out;
  }
  size_t Outstanding() const { return up_.calls.size() - answered_.size(); }

  // The upstream's answer to call `i`.
  std::string Respond(size_t i) {
    Sent s = Decode(i);
    switch (s.proc) {
      case NFSPROC3_ACCESS: {
        ACCESS3res res{};
        res.status = NFS3_OK;
        res.ACCESS3res_u.resok.obj_attributes = PostOp(objects_[s.fh]);
        res.ACCESS3res_u.resok.access = s.access;
        return Xdr(Proc(xdr_ACCESS3res), res);
      }
      case NFSPROC3_READ: {
        const std::string& d = data_[s.fh];
        std::string piece = s.offset >= d.size() ? std::string() : d.substr(s.offset, s.count);
        READ3res res{};
        res.status = NFS3_OK;
        READ3resok& ok = res.READ3res_u.resok;
        ok.file_attributes = PostOp(objects_[s.fh]);
        ok.count = static_cast<count3>(piece.size());
        ok.eof = s.offset + piece.size() >= d.size();
        ok.data.data_val = piece.data();
        ok.data.data_len = static_cast<u_int>(piece.size());
        return Xdr(Proc(xdr_READ3res), res);
      }
      case NFSPROC3_GETATTR: {
        GETATTR3res res{};
        res.status = NFS3_OK;
        res.GETATTR3res_u.resok.obj_attributes = objects_[s.fh];
        return Xdr(Proc(xdr_GETATTR3res), res);
      }
      case NFSPROC3_READDIRPLUS: {
        auto it = pages_.find({s.fh, s.cookie});
        if (it != pages_.end()) return it->second->Results();
        Page empty({}, true);
        return empty.Results();
      }
      default:
        return std::string();
    }
  }
  // Answers the oldest unanswered call; returns false iff there is none.
  bool AnswerNext() {
    for (size_t i = 0; i < up_.calls.size(); ++i) {
      if (answered_.count(i)) continue;
      answered_.insert(i);
      up_.Answer(i, Respond(i));
      Drain();
      return true;
    }
    return false;
  }
  void AnswerAll() {
    while (AnswerNext()) {
    }
  }

  FakeClock clock_;
  EventBasePtr base_;
  Export exp_;
  MetadataCache meta_;
  BlockCache blocks_;
  ReadaheadTable readahead_;
  PathEstimator path_;
  FakeUpstream up_;
  std::unique_ptr<ReadPath> rp_;
  std::unique_ptr<Prefetcher> pf_;

  std::vector<Entry> root_;
  std::map<std::string, fattr3> objects_;
  std::map<std::string, std::string> data_;
  // (directory handle, cookie) -> the page the upstream lists from there.
  std::map<std::pair<std::string, uint64_t>, std::unique_ptr<Page>> pages_;
  std::set<size_t> answered_;
  std::vector<uint32_t> learned_;
  uint64_t next_fileid_ = 100, next_cookie_ = 1;
  OpaqueAuth user_ = SysCred(1000, 1000);
  OpaqueAuth other_ = SysCred(2000, 2000);
};

using ProcFh = std::pair<uint32_t, std::string>;

// 8. ACCESS for every directory and file, READDIRPLUS for the directory, the
// data of the small file only, with the client's credential.
TEST_F(PrefetcherTest, ListingQueuesAccessListAndSmallFileData) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  std::multiset<ProcFh> want = {
      {NFSPROC3_ACCESS, "FH-SUB"}, {NFSPROC3_READDIRPLUS, "FH-SUB"}, {NFSPROC3_ACCESS, "FH-SMALL"},
      {NFSPROC3_READ, "FH-SMALL"}, {NFSPROC3_ACCESS, "FH-BIG"},
  };
  EXPECT_EQ(Asked(), want);
  for (const Sent& s : Calls()) {
    EXPECT_EQ(s.cred, user_.body) << "prefetch runs with the lister's credential";
    if (s.proc == NFSPROC3_ACCESS) {
      EXPECT_EQ(s.access, kAllAccess);
    }
    if (s.proc == NFSPROC3_READDIRPLUS) {
      EXPECT_EQ(s.cookie, 0u);
    }
    if (s.proc == NFSPROC3_READ) {
      EXPECT_EQ(s.offset, 0u);
      EXPECT_EQ(s.count, kBlock) << "the whole small file, in whole blocks";
    }
  }
  EXPECT_EQ(pf_->stats().access, 3u);
  EXPECT_EQ(pf_->stats().lists, 1u);
  EXPECT_EQ(pf_->stats().files, 1u);
  EXPECT_EQ(pf_->in_flight(), 5u);

  AnswerAll();
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->queued(), 0u);
  EXPECT_EQ(up_.calls.size(), 5u) << "an empty subdirectory adds nothing";
  EXPECT_EQ(pf_->stats().errors, 0u);
  // What was learned serves the client: the small file's data, with the
  // ACCESS evidence the prefetch brought for this credential.
  EXPECT_TRUE(meta_.HasAccess("FH-SMALL", CredKeyOf(user_), kAllAccess));
  EXPECT_FALSE(meta_.HasAccess("FH-SMALL", CredKeyOf(other_), ACCESS3_READ));
  READ3args a{};
  std::string small = "FH-SMALL";
  a.file = Fh(small);
  a.count = 1000;
  int replies = 0, forwards = 0;
  rp_->Serve(
      a, exp_, user_, [&](std::string) { replies++; }, [&] { forwards++; });
  Drain();
  EXPECT_EQ(replies, 1);
  EXPECT_EQ(forwards, 0);
  EXPECT_EQ(up_.calls.size(), 5u) << "served from the prefetched block";
}

// A directory listed in several pages: the next page continues from the last
// cookie with the cookie verifier, until eof.
TEST_F(PrefetcherTest, NextPageUsesLastCookieAndVerifier) {
  Make(Options());
  std::vector<Entry> first = {EntryOf("f1", "FH-F1", NF3REG, 1 << 20),
                              EntryOf("f2", "FH-F2", NF3REG, 1 << 20)};
  const uint64_t last_cookie = first.back().cookie;
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(std::move(first), false, "VERF-SUB");
  pages_[{"FH-SUB", last_cookie}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("f3", "FH-F3", NF3REG, 1 << 20)}, true, "VERF-SUB");
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();

  std::vector<Sent> lists;
  for (const Sent& s : Calls()) {
    if (s.proc == NFSPROC3_READDIRPLUS) lists.push_back(s);
  }
  ASSERT_EQ(lists.size(), 2u) << "page one, then page two (eof): no more";
  EXPECT_EQ(lists[0].fh, "FH-SUB");
  EXPECT_EQ(lists[0].cookie, 0u);
  EXPECT_EQ(lists[1].fh, "FH-SUB");
  EXPECT_EQ(lists[1].cookie, last_cookie);
  EXPECT_EQ(lists[1].verf, "VERF-SUB");
  // The entries of both pages were walked.
  std::multiset<ProcFh> asked = Asked();
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F1"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F2"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F3"}), 1u);
  EXPECT_EQ(pf_->stats().lists, 2u);
  // Every reply went through the learning path.
  size_t readdirplus_learned = 0;
  for (uint32_t p : learned_) readdirplus_learned += p == NFSPROC3_READDIRPLUS;
  EXPECT_EQ(readdirplus_learned, 2u);
}

// At most max_in_flight calls are outstanding at any time, data fetches included.
TEST_F(PrefetcherTest, InFlightBound) {
  PrefetchOptions o = Options();
  o.max_in_flight = 2;
  Make(o);
  for (int i = 0; i < 3; ++i) {
    const std::string fh = "FH-S" + std::to_string(i);
    Add("s" + std::to_string(i), fh, NF3REG, 10);
    data_[fh] = std::string(10, static_cast<char>('a' + i));
  }
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(pf_->in_flight(), 2u);
  size_t max_outstanding = Outstanding();
  while (AnswerNext()) {
    max_outstanding = std::max(max_outstanding, Outstanding());
    EXPECT_LE(pf_->in_flight(), 2u);
  }
  EXPECT_EQ(max_outstanding, 2u);
  // Everything was sent in the end: 6 ACCESS, 1 READDIRPLUS, 4 small files.
  EXPECT_EQ(up_.calls.size(), 11u);
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->queued(), 0u);
}

// Directories are listed down to max_depth levels below the client's listing.
TEST_F(PrefetcherTest, DepthLimit) {
  PrefetchOptions o = Options();
  o.max_depth = 1;
  Make(o);
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("deeper", "FH-DEEPER", NF3DIR, 4096)}, true);
  pages_[{"FH-DEEPER", 0}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("deepest", "FH-DEEPEST", NF3REG, 1 << 20)}, true);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  std::multiset<ProcFh> asked = Asked();
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-SUB"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-DEEPER"}), 1u) << "its entries are still asked";
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-DEEPER"}), 0u) << "two levels below";
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-DEEPEST"}), 0u);
}

TEST_F(PrefetcherTest, DepthZeroListsNothing) {
  PrefetchOptions o = Options();
  o.max_depth = 0;
  Make(o);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READDIRPLUS, "FH-SUB"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SUB"}), 1u);
  EXPECT_EQ(pf_->stats().lists, 0u);
}

// Each object once per credential; another credential gets its own.
TEST_F(PrefetcherTest, SameObjectOncePerCredential) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  const size_t calls = up_.calls.size();
  const uint64_t queued = pf_->stats().queued;
  List(*root, user_);
  List(*root, user_, 3);  // the same objects met again deeper down
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), calls);
  EXPECT_EQ(pf_->stats().queued, queued);

  List(*root, other_);
  Drain();
  size_t others = 0;
  for (const Sent& s : Calls()) {
    if (s.cred != other_.body) continue;
    others++;
    EXPECT_NE(s.proc, static_cast<uint32_t>(NFSPROC3_READ)) << "the data is cached already";
  }
  EXPECT_EQ(others, 4u) << "ACCESS x3 and READDIRPLUS for the other credential";
}

// ACCESS already known for the credential (every bit) is not asked again.
TEST_F(PrefetcherTest, KnownAccessIsNotAsked) {
  Make(Options());
  const std::string big = "FH-BIG";
  ACCESS3args args{Fh(big), kAllAccess};
  ACCESS3res res{};
  res.status = NFS3_OK;
  res.ACCESS3res_u.resok.obj_attributes = PostOp(objects_["FH-BIG"]);
  res.ACCESS3res_u.resok.access = ACCESS3_READ;
  meta_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &args, Xdr(Proc(xdr_ACCESS3res), res), exp_,
              CredKeyOf(user_));
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-BIG"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SMALL"}), 1u);
}

// Beyond max_queue, jobs are dropped and counted.
TEST_F(PrefetcherTest, QueueBoundDrops) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  o.max_queue = 3;
  o.small_file_bytes = 0;  // ACCESS only
  Make(o);
  root_.clear();
  for (int i = 0; i < 6; ++i) Add("f" + std::to_string(i), "FH-F" + std::to_string(i), NF3REG, 1);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(pf_->stats().dropped, 3u);
  EXPECT_EQ(pf_->stats().queued, 3u);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(pf_->queued(), 2u);
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), 3u) << "only what was queued";
  EXPECT_EQ(pf_->stats().access, 3u);
}

// A job dropped for the queue bound was never prefetched: a later listing,
// once there is room, prefetches it ("a bounded set of what was already
// prefetched", prefetcher.h).
TEST_F(PrefetcherTest, DroppedJobIsPrefetchedLater) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  o.max_queue = 1;
  o.small_file_bytes = 0;
  Make(o);
  root_.clear();
  Add("f0", "FH-F0", NF3REG, 1);
  Add("f1", "FH-F1", NF3REG, 1);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  ASSERT_EQ(pf_->stats().dropped, 1u);
  ASSERT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F1"}), 0u);
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F0"}), 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F1"}), 1u)
      << "the dropped job was remembered as prefetched";
}

// Calls without a usable reply are counted and free their slot.
TEST_F(PrefetcherTest, ErrorsFreeTheirSlot) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  Make(o);
  up_.set_fail_with(Timeout("test"));
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), 5u) << "each failure lets the next job go";
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->stats().errors, 4u) << "ACCESS x3 and READDIRPLUS (the READ is ReadPath's)";
  EXPECT_TRUE(learned_.empty());
  up_.set_fail_with(std::nullopt);
  for (size_t i = 0; i < up_.calls.size(); ++i) answered_.insert(i);  // all failed already
}

// An NFS error to READDIRPLUS is counted; nothing below it is walked.
TEST_F(PrefetcherTest, ListingErrorIsCounted) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc != NFSPROC3_READDIRPLUS) continue;
    READDIRPLUS3res res{};
    res.status = NFS3ERR_ACCES;
    answered_.insert(i);
    up_.Answer(i, Xdr(Proc(xdr_READDIRPLUS3res), res));
  }
  Drain();
  AnswerAll();
  EXPECT_EQ(pf_->stats().errors, 1u);
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(up_.calls.size(), 5u);
}

TEST_F(PrefetcherTest, DisabledDoesNothing) {
  PrefetchOptions o = Options();
  o.enabled = false;
  Make(o);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_TRUE(up_.calls.empty());
  EXPECT_EQ(pf_->stats().queued, 0u);
}

// Without a ReadPath (no data cache) there is no data prefetch.
TEST_F(PrefetcherTest, NoReadPathNoData) {
  pf_ = std::make_unique<Prefetcher>(
      meta_, nullptr, up_,
      [](const NfsProc&, const void*, RpcReply*, const Export&, const OpaqueAuth&) {}, Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-SMALL"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SMALL"}), 1u);
}

// Refresh-ahead (proxy/refresher.h): used entries about to expire that
// share a directory are revalidated by one READDIRPLUS of it, which brings
// them all; an entry alone in its directory by a GETATTR.
TEST_F(PrefetcherTest, RefreshAheadListsADirectoryInsteadOfAGetattrPerEntry) {
  std::unique_ptr<Page> page = RootPage();
  const std::string root = "FH-ROOT", sub = "FH-SUB";
  READDIRPLUS3args list{};
  list.dir = Fh(root);
  meta_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &list, page->Results(), exp_, CredKeyOf(user_));
  pages_[{"FH-ROOT", 0}] = std::move(page);
  objects_["FH-LONE"] = Attr(NF3REG, 5, 500);
  LOOKUP3args look{};
  look.what.dir = Fh(sub);
  look.what.name = const_cast<char*>("lone");
  LOOKUP3res found{};
  found.status = NFS3_OK;
  const std::string lone = "FH-LONE";
  found.LOOKUP3res_u.resok.object = Fh(lone);
  found.LOOKUP3res_u.resok.obj_attributes = PostOp(objects_["FH-LONE"]);
  found.LOOKUP3res_u.resok.dir_attributes = PostOp(objects_["FH-SUB"]);
  meta_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &look, Xdr(Proc(xdr_LOOKUP3res), found), exp_,
              CredKeyOf(user_));
  // Clients use three entries: candidates for refresh-ahead.
  for (const char* fh : {"FH-SMALL", "FH-BIG", "FH-LONE"}) {
    ASSERT_TRUE(meta_.FreshAttributes(fh)) << fh;
  }

  ASSERT_EQ(meta_.ParentOf("FH-SMALL").value_or("none"), "FH-ROOT");
  ASSERT_EQ(meta_.ParentOf("FH-LONE").value_or("none"), "FH-SUB");
  HandleRegistry handles(100);
  for (const char* fh : {"FH-ROOT", "FH-SUB", "FH-SMALL", "FH-BIG", "FH-LONE"}) {
    handles.Add(fh, 0, std::string(fh) == "FH-ROOT");
  }
  ExportTable exports({MakeExportConfig()});
  RefresherOptions o;
  o.window = std::chrono::hours(1);  // every used entry is due
  o.period = std::chrono::milliseconds(1);
  {
    Refresher r(base_.get(), meta_, handles, exports, up_, o);
    r.Start();
    for (int i = 0; i < 2000 && up_.calls.size() < 2; ++i) {
      event_base_loop(base_.get(), EVLOOP_ONCE);
    }
    EXPECT_EQ(Asked(), (std::multiset<ProcFh>{{NFSPROC3_READDIRPLUS, "FH-ROOT"},
                                              {NFSPROC3_GETATTR, "FH-LONE"}}));
    EXPECT_EQ(r.listings(), 1u);
    // The answers refresh the entries: they are not asked again.
    for (size_t i = 0; i < up_.calls.size(); ++i) {
      answered_.insert(i);
      up_.Answer(i, Respond(i));
    }
    for (int i = 0; i < 50; ++i) event_base_loop(base_.get(), EVLOOP_ONCE);
    EXPECT_EQ(up_.calls.size(), 2u);
  }
  Drain();
}

}  // namespace
}  // namespace nfsedge
