// The fixture of the Prefetcher tests (prefetcher_test, prefetch_walk_test):
// an in-memory upstream (FakeUpstream, every call held until the test
// answers it), an event loop driven by hand, and the listings the upstream
// gives.
#ifndef NFSEDGE_TESTS_UNIT_PREFETCHER_FIXTURE_H_
#define NFSEDGE_TESTS_UNIT_PREFETCHER_FIXTURE_H_

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
#include "proxy/prefetcher.h"
#include "proxy/read_path.h"
#include "proxy/refresher.h"
#include "rpc/event_loop.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge::prefetcher_test {

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start
constexpr uint32_t kBlock = 4096;
constexpr uint32_t kAllAccess = 0x3f;

using test_xdr::Bytes;
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Proc;
using test_xdr::Xdr;

inline fattr3 Attr(ftype3 type, uint64_t size, uint64_t fileid) {
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

inline ExportConfig MakeExportConfig() {
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
        prefetch_clock_, meta_, rp_.get(), up_,
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
  // The root's listing: "." and "..", root_, an entry without a handle,
  // and, `with_link`, a symlink (FH-LINK).
  std::unique_ptr<Page> RootPage(bool with_link = false) {
    std::vector<Entry> e = root_;
    e.insert(e.begin(), Entry{"..", "FH-PARENT", Attr(NF3DIR, 4096, 2), 1});
    e.insert(e.begin(), Entry{".", "FH-ROOT", Attr(NF3DIR, 4096, 1), 0});
    e.push_back(Entry{"nohandle", "", Attr(NF3REG, 10, 77), 90});
    if (with_link) e.push_back(Entry{"link", "FH-LINK", objects_["FH-LINK"], 91});
    return std::make_unique<Page>(std::move(e), true);
  }
  void List(const Page& page, const OpaqueAuth& cred, uint32_t depth = 0) {
    pf_->OnListing("FH-ROOT", page.ok(), exp_, cred, depth);
  }
  // Makes the prefetcher, gives FH-SUB a file (FH-F, whose attributes its
  // listing needs fresh), lists the root for user_ and answers everything;
  // returns the root's page.
  std::unique_ptr<Page> WalkedWithAFileInSub() {
    Make(Options());
    pages_[{"FH-SUB", 0}] =
        std::make_unique<Page>(std::vector<Entry>{EntryOf("f", "FH-F", NF3REG, 1 << 20)}, true);
    std::unique_ptr<Page> root = RootPage();
    List(*root, user_);
    AnswerAll();
    return root;
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
      case NFSPROC3_READLINK: {
        XdrValue<READLINK3args> a(Proc(xdr_READLINK3args));
        EXPECT_TRUE(a.Decode(s.args));
        out.fh = Bytes(a->symlink);
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
        std::string piece = s.offset >= d.size()
                                ? std::string()
                                : d.substr(s.offset, std::min<uint64_t>(s.count, server_rtmax_));
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
      case NFSPROC3_READLINK: {
        READLINK3res res{};
        res.status = NFS3_OK;
        res.READLINK3res_u.resok.symlink_attributes = PostOp(objects_[s.fh]);
        res.READLINK3res_u.resok.data = const_cast<char*>("small");
        return Xdr(Proc(xdr_READLINK3res), res);
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
  // clock_ as the prefetcher reads it, counting its reads.
  class CountingClock final : public Clock {
   public:
    explicit CountingClock(const FakeClock& c) : c_(c) {}
    MonoTime MonoNow() const override {
      reads++;
      return c_.MonoNow();
    }
    WallTime WallNow() const override { return c_.WallNow(); }
    mutable uint64_t reads = 0;

   private:
    const FakeClock& c_;
  };
  CountingClock prefetch_clock_{clock_};
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
  uint64_t server_rtmax_ = UINT64_MAX;  // READs answered with this much at most
  // (directory handle, cookie) -> the page the upstream lists from there.
  std::map<std::pair<std::string, uint64_t>, std::unique_ptr<Page>> pages_;
  std::set<size_t> answered_;
  std::vector<uint32_t> learned_;
  uint64_t next_fileid_ = 100, next_cookie_ = 1;
  OpaqueAuth user_ = SysCred(1000, 1000);
  OpaqueAuth other_ = SysCred(2000, 2000);
};

using ProcFh = std::pair<uint32_t, std::string>;

}  // namespace nfsedge::prefetcher_test

#endif  // NFSEDGE_TESTS_UNIT_PREFETCHER_FIXTURE_H_
