// Directories: names and listing pages answered from the metadata cache,
// seen by clients of the proxy (docs/architecture.md section 8,
// docs/security.md "Confinement of file handles" and "Nested exports",
// docs/consistency.md).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/dir_listing.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_procs.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "rpc/xdr_codec.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

using test_xdr::Bytes;
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Proc;
using test_xdr::Xdr;

constexpr uint32_t kWall0 = 1704067200;  // FakeClock's wall start
constexpr uint32_t kLongAgo = kWall0 - 3600;

fattr3 Attr(ftype3 type, uint64_t fileid, uint32_t changed_at = kLongAgo) {
  fattr3 a{};
  a.type = type;
  a.mode = type == NF3DIR ? 0755 : 0644;
  a.nlink = type == NF3DIR ? 2 : 1;
  a.uid = a.gid = 1000;
  a.size = type == NF3DIR ? 4096 : 100;
  a.fileid = fileid;
  a.mtime.seconds = a.ctime.seconds = changed_at;
  return a;
}

// --- Handles handed out from the cache ---------------------------------------
//
// docs/security.md: a handle "enters [the registry] only from an upstream
// reply to a client's call on an export", and "a handle reached through two
// exports (nested exports) belongs to both". A LOOKUP or READDIRPLUS answered
// from the metadata cache registers the handles it gives out for the export
// the client used, as the upstream's reply to the same call would. Two
// exports: /data (upstream /srv/data) for the host 127.0.0.2 only, and
// /data/proj (upstream /srv/data/proj) for 127.0.0.1 only. The client of
// /data/proj is told a handle by the cache (learned from the client of
// /data), and its calls with that handle are answered, not refused
// NFS3ERR_ACCES as for a handle of /data alone.

constexpr char kRoot[] = "ROOT-OF-SRV-DATA";    // /srv/data
constexpr char kProj[] = "PROJ-OF-SRV-DATA-1";  // /srv/data/proj
constexpr char kF[] = "FILE-F-IN-PROJ-0001";    // /srv/data/proj/f
constexpr char kG[] = "FILE-G-IN-PROJ-0002";    // /srv/data/proj/g
constexpr char kDataHost[] = "127.0.0.2";       // a client of /data only
constexpr char kProjHost[] = "127.0.0.1";       // a client of /data/proj only

class CachedHandoutTest : public ProgramsBed {
 protected:
  void SetUp() override {
    ExportConfig data;
    data.path = "/data";
    data.upstream_path = "/srv/data";
    data.clients.push_back(*Network::Parse("127.0.0.2/32"));
    ExportConfig proj;
    proj.path = "/data/proj";
    proj.upstream_path = "/srv/data/proj";
    proj.clients.push_back(*Network::Parse("127.0.0.1/32"));
    cache_ = std::make_unique<MetadataCache>(clock_, CacheConfig{});
    StartPrograms({data, proj}, cache_.get());
    attrs_[kRoot] = Attr(NF3DIR, 2);
    attrs_[kProj] = Attr(NF3DIR, 3);
    attrs_[kF] = Attr(NF3REG, 4);
    attrs_[kG] = Attr(NF3REG, 5);
    lookups_[{kRoot, "proj"}] = kProj;
    lookups_[{kProj, "f"}] = kF;
    lookups_[{kProj, "g"}] = kG;
    mount_up_->set_responder([](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      std::string path;
      XdrReader r(s.args);
      EXPECT_TRUE(r.ReadString(&path, 1024));
      std::string out;
      XdrWriter w(&out);
      w.WriteU32(MNT3_OK);
      w.WriteOpaque(path == "/srv/data/proj" ? kProj : kRoot);
      w.WriteU32(1);
      w.WriteU32(kAuthSys);
      return out;
    });
    up_->set_responder([this](const FakeUpstream::Seen& s) { return Respond(s); });
    loop_.Start();
  }

  // The upstream: LOOKUP, GETATTR, ACCESS (all asked bits granted) and
  // READDIRPLUS of proj (".", "..", "f", "g") from the tables above.
  std::optional<std::string> Respond(const FakeUpstream::Seen& s) {
    switch (s.proc) {
      case NFSPROC3_LOOKUP: {
        XdrValue<LOOKUP3args> a(Proc(xdr_LOOKUP3args));
        EXPECT_TRUE(a.Decode(s.args));
        const std::string dir = Bytes(a->what.dir);
        LOOKUP3res res{};
        auto it = lookups_.find({dir, a->what.name ? a->what.name : ""});
        if (it == lookups_.end()) {
          res.status = NFS3ERR_NOENT;
          res.LOOKUP3res_u.resfail.dir_attributes = PostOp(attrs_[dir]);
          return Xdr(Proc(xdr_LOOKUP3res), res);
        }
        res.status = NFS3_OK;
        res.LOOKUP3res_u.resok.object = Fh(it->second);
        res.LOOKUP3res_u.resok.obj_attributes = PostOp(attrs_[it->second]);
        res.LOOKUP3res_u.resok.dir_attributes = PostOp(attrs_[dir]);
        return Xdr(Proc(xdr_LOOKUP3res), res);
      }
      case NFSPROC3_GETATTR: {
        XdrValue<GETATTR3args> a(Proc(xdr_GETATTR3args));
        EXPECT_TRUE(a.Decode(s.args));
        GETATTR3res res{};
        res.status = NFS3_OK;
        res.GETATTR3res_u.resok.obj_attributes = attrs_[Bytes(a->object)];
        return Xdr(Proc(xdr_GETATTR3res), res);
      }
      case NFSPROC3_ACCESS: {
        XdrValue<ACCESS3args> a(Proc(xdr_ACCESS3args));
        EXPECT_TRUE(a.Decode(s.args));
        ACCESS3res res{};
        res.status = NFS3_OK;
        res.ACCESS3res_u.resok.obj_attributes = PostOp(attrs_[Bytes(a->object)]);
        res.ACCESS3res_u.resok.access = a->access;
        return Xdr(Proc(xdr_ACCESS3res), res);
      }
      case NFSPROC3_READDIR: {  // an empty directory
        XdrValue<READDIR3args> a(Proc(xdr_READDIR3args));
        EXPECT_TRUE(a.Decode(s.args));
        READDIR3res res{};
        res.status = NFS3_OK;
        res.READDIR3res_u.resok.dir_attributes = PostOp(attrs_[Bytes(a->dir)]);
        res.READDIR3res_u.resok.reply.eof = TRUE;
        return Xdr(Proc(xdr_READDIR3res), res);
      }
      case NFSPROC3_READDIRPLUS: {
        XdrValue<READDIRPLUS3args> a(Proc(xdr_READDIRPLUS3args));
        EXPECT_TRUE(a.Decode(s.args));
        if (root_lacks_plus_ && Bytes(a->dir) == kRoot) {
          READDIRPLUS3res res{};
          res.status = NFS3ERR_NOTSUPP;
          return Xdr(Proc(xdr_READDIRPLUS3res), res);
        }
        EXPECT_EQ(Bytes(a->dir), kProj);
        const std::string proj = kProj, f = kF, g = kG;
        entryplus3 e[4]{};
        const char* names[4] = {".", "..", "f", "g"};
        const std::string* fhs[4] = {&proj, nullptr, &f, &g};
        for (int i = 0; i < 4; ++i) {
          e[i].fileid = 10 + i;
          e[i].name = const_cast<char*>(names[i]);
          e[i].cookie = 100 + i;
          if (fhs[i] != nullptr) {  // ".." of an export's root: nothing (Linux)
            e[i].name_attributes = PostOp(attrs_[*fhs[i]]);
            e[i].name_handle.handle_follows = TRUE;
            e[i].name_handle.post_op_fh3_u.handle = Fh(*fhs[i]);
          }
          e[i].nextentry = i < 3 ? &e[i + 1] : nullptr;
        }
        READDIRPLUS3res res{};
        res.status = NFS3_OK;
        res.READDIRPLUS3res_u.resok.dir_attributes = PostOp(attrs_[kProj]);
        std::memcpy(res.READDIRPLUS3res_u.resok.cookieverf, "VERF0001", NFS3_COOKIEVERFSIZE);
        res.READDIRPLUS3res_u.resok.reply.entries = &e[0];
        res.READDIRPLUS3res_u.resok.reply.eof = TRUE;
        return Xdr(Proc(xdr_READDIRPLUS3res), res);
      }
      default:
        ADD_FAILURE() << "unexpected upstream call " << s.proc;
        return std::nullopt;
    }
  }

  // One call from `host` as uid 1000; returns the results.
  std::string Call(const char* host, uint32_t prog, uint32_t proc, const std::string& args) {
    BlockingClient c(port_, host);
    EXPECT_TRUE(c.connected()) << "cannot connect from " << host;
    if (!c.connected()) return "";
    c.SendRecord(MakeCall(++xid_, prog, 3, proc, args, SysCred(1000, 1000)));
    std::optional<std::string> reply = c.ReadRecord();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return "";
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    EXPECT_TRUE(h.ok() && h->accept_stat == kSuccess);
    return h.ok() ? reply->substr(h->results_offset) : "";
  }
  std::string Mount(const char* host, const std::string& path) {
    std::string args;
    XdrWriter(&args).WriteOpaque(path);
    const std::string r = Call(host, kMountProgram, /*MNT*/ 1, args);
    XdrReader rd(r);
    uint32_t status = 0xffffffff;
    std::string fh;
    EXPECT_TRUE(rd.ReadU32(&status));
    EXPECT_EQ(status, static_cast<uint32_t>(MNT3_OK)) << "MNT " << path << " from " << host;
    if (status == MNT3_OK) {
      EXPECT_TRUE(rd.ReadString(&fh, 64));
    }
    return fh;
  }
  // LOOKUP `name` in `dir`: the status and the handle.
  std::pair<uint32_t, std::string> Lookup(const char* host, const std::string& dir,
                                          const char* name) {
    LOOKUP3args a{};
    a.what.dir = Fh(dir);
    a.what.name = const_cast<char*>(name);
    const std::string r =
        Call(host, kNfsProgram, NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), a));
    XdrValue<LOOKUP3res> res(Proc(xdr_LOOKUP3res));
    if (!res.Decode(r)) return {0xffffffff, ""};
    if (res->status != NFS3_OK) return {res->status, ""};
    return {NFS3_OK, Bytes(res->LOOKUP3res_u.resok.object)};
  }
  uint32_t Access(const char* host, const std::string& fh) {
    ACCESS3args a{};
    a.object = Fh(fh);
    a.access = 0x3f;
    const std::string r = Call(host, kNfsProgram, NFSPROC3_ACCESS, Xdr(Proc(xdr_ACCESS3args), a));
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }
  uint32_t Getattr(const char* host, const std::string& fh) {
    GETATTR3args a{};
    a.object = Fh(fh);
    const std::string r =
        Call(host, kNfsProgram, NFSPROC3_GETATTR, Xdr(Proc(xdr_GETATTR3args), a));
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }
  // READDIRPLUS of `dir` from cookie 0: the status and the entries' handles
  // by name.
  std::pair<uint32_t, std::map<std::string, std::string>> Readdirplus(const char* host,
                                                                     const std::string& dir) {
    READDIRPLUS3args a{};
    a.dir = Fh(dir);
    a.dircount = 8192;
    a.maxcount = 65536;
    const std::string r =
        Call(host, kNfsProgram, NFSPROC3_READDIRPLUS, Xdr(Proc(xdr_READDIRPLUS3args), a));
    XdrValue<READDIRPLUS3res> res(Proc(xdr_READDIRPLUS3res));
    std::map<std::string, std::string> handles;
    if (!res.Decode(r)) return {0xffffffff, handles};
    if (res->status != NFS3_OK) return {res->status, handles};
    for (const entryplus3* e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
      if (e->name_handle.handle_follows) {
        handles[e->name] = Bytes(e->name_handle.post_op_fh3_u.handle);
      }
    }
    return {NFS3_OK, handles};
  }
  // The status of a READDIR of kProj from `cookie` by kDataHost.
  uint32_t ReaddirProj(uint64_t cookie = 0) {
    const std::string proj = kProj;
    READDIR3args a{};
    a.dir = Fh(proj);
    a.cookie = cookie;
    a.count = 8192;
    const std::string r =
        Call(kDataHost, kNfsProgram, NFSPROC3_READDIR, Xdr(Proc(xdr_READDIR3args), a));
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }
  size_t UpstreamCalls(uint32_t proc) {
    size_t n = 0;
    loop_.RunSync([&] {
      for (const FakeUpstream::Seen& s : up_->calls) n += s.proc == proc;
    });
    return n;
  }

  FakeClock clock_;
  std::unique_ptr<MetadataCache> cache_;
  uint32_t xid_ = 0;
  std::map<std::string, fattr3> attrs_;  // the upstream's attributes, by handle
  bool root_lacks_plus_ = false;  // READDIRPLUS of kRoot answered NOTSUPP (nordirplus)
  std::map<std::pair<std::string, std::string>, std::string> lookups_;
};

TEST_F(CachedHandoutTest, HandleFromACachedLookupIsUsableThroughTheExportThatAnswered) {
  // The client of /data walks to proj/f: the proxy caches the name.
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  ASSERT_EQ(Lookup(kDataHost, kRoot, "proj"), std::make_pair(uint32_t{NFS3_OK}, std::string(kProj)));
  ASSERT_EQ(Lookup(kDataHost, kProj, "f"), std::make_pair(uint32_t{NFS3_OK}, std::string(kF)));
  // The client of /data/proj mounts it, has its ACCESS evidence on the
  // directory, and looks f up: answered from the name cache.
  ASSERT_EQ(Mount(kProjHost, "/data/proj"), kProj);
  ASSERT_EQ(Access(kProjHost, kProj), static_cast<uint32_t>(NFS3_OK));
  const size_t lookups = UpstreamCalls(NFSPROC3_LOOKUP);
  ASSERT_EQ(Lookup(kProjHost, kProj, "f"), std::make_pair(uint32_t{NFS3_OK}, std::string(kF)));
  ASSERT_EQ(UpstreamCalls(NFSPROC3_LOOKUP), lookups) << "the cached path is what this tests";
  // The handle it was just given, inside the export it mounted.
  EXPECT_EQ(Getattr(kProjHost, kF), static_cast<uint32_t>(NFS3_OK))
      << "a handle the proxy handed out through /data/proj is refused through it";
}

// A CREATE whose reply never came (the upstream may have made the file)
// leaves nothing cached about its directory: another client's LOOKUP of the
// name, cached as absent before, and its listing, go to the upstream.
TEST_F(CachedHandoutTest, AChangeWhoseReplyIsLostLeavesItsDirectoryUncached) {
  ASSERT_EQ(Mount(kProjHost, "/data/proj"), kProj);
  ASSERT_EQ(Access(kProjHost, kProj), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Lookup(kProjHost, kProj, "x").first, static_cast<uint32_t>(NFS3ERR_NOENT));
  ASSERT_EQ(Readdirplus(kProjHost, kProj).first, static_cast<uint32_t>(NFS3_OK));
  const size_t lookups = UpstreamCalls(NFSPROC3_LOOKUP);
  const size_t listings = UpstreamCalls(NFSPROC3_READDIRPLUS);
  ASSERT_EQ(Lookup(kProjHost, kProj, "x").first, static_cast<uint32_t>(NFS3ERR_NOENT));
  ASSERT_EQ(Readdirplus(kProjHost, kProj).first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(UpstreamCalls(NFSPROC3_LOOKUP), lookups) << "the absent name is what this tests";
  ASSERT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), listings) << "so is the cached listing";

  loop_.RunSync([&] { up_->set_fail_with(Timeout("the reply was lost")); });
  const std::string proj = kProj;  // Fh() points into it
  CREATE3args c{};
  c.where.dir = Fh(proj);
  c.where.name = const_cast<char*>("x");
  c.how.mode = UNCHECKED;
  const std::string r = Call(kProjHost, kNfsProgram, NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), c));
  ASSERT_GE(r.size(), 4u);
  EXPECT_EQ(LoadBE32(r.data()), static_cast<uint32_t>(NFS3ERR_JUKEBOX));
  // The upstream made it.
  loop_.RunSync([&] { up_->set_fail_with(std::nullopt); });
  attrs_["FILE-X-IN-PROJ-0003"] = Attr(NF3REG, 6);
  lookups_[{kProj, "x"}] = "FILE-X-IN-PROJ-0003";

  EXPECT_EQ(Lookup(kProjHost, kProj, "x").first, static_cast<uint32_t>(NFS3_OK))
      << "answered from the name cached as absent before the CREATE";
  Readdirplus(kProjHost, kProj);
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), listings + 1)
      << "the listing from before the CREATE answered from cache";
}

// A client READDIR goes upstream as a READDIRPLUS. An upstream that does not
// know that procedure (PROC_UNAVAIL) gets the READDIR as it is, and every
// later one: the client's ls works, at one call each.
TEST_F(CachedHandoutTest, AnUpstreamWithoutReaddirplusGetsTheClientsReaddirsAsTheyAre) {
  loop_.RunSync([this] {
    up_->set_refuser([](const FakeUpstream::Seen& s) -> std::optional<AcceptStat> {
      if (s.proc == NFSPROC3_READDIRPLUS) return kProcUnavail;
      return std::nullopt;
    });
  });
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  ASSERT_EQ(Lookup(kDataHost, kRoot, "proj").first, static_cast<uint32_t>(NFS3_OK));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(ReaddirProj(), static_cast<uint32_t>(NFS3_OK)) << i;
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 1u) << "asked again after PROC_UNAVAIL";
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIR), 2u);
}

// One GARBAGE_ARGS (a glitch, not an upstream without the procedure): that
// READDIR goes as it is, and the next is sent as a READDIRPLUS again.
TEST_F(CachedHandoutTest, OneGarbageArgsToAReaddirplusDoesNotStopTheConversion) {
  loop_.RunSync([this] {
    up_->set_refuser([n = 0](const FakeUpstream::Seen& s) mutable -> std::optional<AcceptStat> {
      if (s.proc == NFSPROC3_READDIRPLUS && n++ == 0) return kGarbageArgs;
      return std::nullopt;
    });
  });
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  ASSERT_EQ(Lookup(kDataHost, kRoot, "proj").first, static_cast<uint32_t>(NFS3_OK));
  for (int i = 0; i < 2; ++i) EXPECT_EQ(ReaddirProj(), static_cast<uint32_t>(NFS3_OK)) << i;
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 2u);
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIR), 1u);
  // Three in a row: an upstream without it, whose READDIRs then go as they are.
  loop_.RunSync([this] {
    up_->set_refuser([](const FakeUpstream::Seen& s) -> std::optional<AcceptStat> {
      return s.proc == NFSPROC3_READDIRPLUS ? std::optional(kGarbageArgs) : std::nullopt;
    });
  });
  for (uint64_t c = 1; c <= 5; ++c) ReaddirProj(c);  // (cookies no page holds)
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 5u);
}

// NOTSUPP is an export's answer (Linux's `nordirplus` export option): the
// READDIRs of that export go as they are, those of the others still as
// READDIRPLUS, from which their listings are cached.
TEST_F(CachedHandoutTest, OneExportsReaddirplusRefusalLeavesTheOthersTheirs) {
  root_lacks_plus_ = true;
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  const std::string root = kRoot, proj = kProj;
  READDIR3args a{};
  a.dir = Fh(root);
  a.count = 8192;
  std::string r = Call(kDataHost, kNfsProgram, NFSPROC3_READDIR, Xdr(Proc(xdr_READDIR3args), a));
  ASSERT_GE(r.size(), 4u);
  EXPECT_EQ(LoadBE32(r.data()), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIR), 1u);
  ASSERT_EQ(Mount(kProjHost, "/data/proj"), kProj);
  ASSERT_EQ(Access(kProjHost, kProj), static_cast<uint32_t>(NFS3_OK));
  const size_t plus = UpstreamCalls(NFSPROC3_READDIRPLUS);
  a.dir = Fh(proj);
  r = Call(kProjHost, kNfsProgram, NFSPROC3_READDIR, Xdr(Proc(xdr_READDIR3args), a));
  ASSERT_GE(r.size(), 4u);
  EXPECT_EQ(LoadBE32(r.data()), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), plus + 1)
      << "another export's READDIR not sent as READDIRPLUS";
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIR), 1u);
}

TEST_F(CachedHandoutTest, HandleFromACachedListingIsUsableThroughTheExportThatAnswered) {
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  ASSERT_EQ(Lookup(kDataHost, kRoot, "proj").first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Readdirplus(kDataHost, kProj).first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Mount(kProjHost, "/data/proj"), kProj);
  ASSERT_EQ(Access(kProjHost, kProj), static_cast<uint32_t>(NFS3_OK));
  const size_t lists = UpstreamCalls(NFSPROC3_READDIRPLUS);
  auto [status, handles] = Readdirplus(kProjHost, kProj);
  ASSERT_EQ(status, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), lists) << "the cached path is what this tests";
  ASSERT_EQ(handles["g"], kG);
  EXPECT_EQ(Getattr(kProjHost, kG), static_cast<uint32_t>(NFS3_OK))
      << "a handle the proxy listed through /data/proj is refused through it";
}

// A client READDIRPLUS the cache cannot answer is counted in the upstream
// scheduler's bytes in flight at the page last stored for it (and a quarter
// more), not at the client's maxcount: a tree walk's listings are a few KB.
TEST_F(CachedHandoutTest, AForwardedListingIsExpectedAtTheSizeOfItsStoredPage) {
  ASSERT_EQ(Mount(kDataHost, "/data"), kRoot);
  ASSERT_EQ(Lookup(kDataHost, kRoot, "proj").first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Readdirplus(kDataHost, kProj).first, static_cast<uint32_t>(NFS3_OK));
  std::optional<uint64_t> first, second;
  size_t page = 0;
  loop_.RunSync([&] {
    for (const FakeUpstream::Seen& c : up_->calls) {
      if (c.proc == NFSPROC3_READDIRPLUS) first = c.expected_reply;
    }
    // Every cached attribute outlives its lifetime: the next listing goes
    // upstream again.
    clock_.Advance(std::chrono::hours(2));
  });
  ASSERT_EQ(first, std::optional<uint64_t>(65536)) << "nothing stored: the client's maxcount";
  const size_t lists = UpstreamCalls(NFSPROC3_READDIRPLUS);
  ASSERT_EQ(Readdirplus(kDataHost, kProj).first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), lists + 1) << "the forwarded path is tested";
  loop_.RunSync([&] {
    second = up_->calls.back().expected_reply;
    page = Respond(up_->calls.back())->size();
  });
  ASSERT_TRUE(second.has_value());
  EXPECT_GE(*second, page) << "at least the page stored";
  EXPECT_LE(*second, page + page / 4 + 64);
}

// --- ".." of a directory moved through the proxy -----------------------------
//
// cache/name_cache.h: ".." is not cached because it "changes when a directory
// moves, without a change to the directory itself" (and not every server
// changes the moved object's ctime). A listing page of the moved directory
// holds the ".." entry all the same: a RENAME through the proxy drops the
// moved directory's pages with its names, so the next READDIRPLUS does not
// show the old parent (docs/consistency.md 1: "a write, create, rename or
// delete made by one branch client updates or drops what the proxy has
// cached before the reply goes back").
class MovedDirectoryListingTest : public ::testing::Test {
 protected:
  MovedDirectoryListingTest() : exp_(0, MakeConfig()), cache_(clock_, CacheConfig{}) {}
  static ExportConfig MakeConfig() {
    ExportConfig c;
    c.path = "/e";
    c.upstream_path = "/e";
    return c;  // default lifetimes: files 3-60 s, directories 30-60 s
  }
  template <typename Args>
  void Learn(uint32_t proc, const Args& a, const std::string& results, SentCall sent = {}) {
    cache_.Learn(*FindNfsProc(proc), &a, results, exp_, user_, sent);
  }
  void LearnGetattr(const std::string& fh, const fattr3& attr) {
    GETATTR3args a{Fh(fh)};
    GETATTR3res res{};
    res.status = NFS3_OK;
    res.GETATTR3res_u.resok.obj_attributes = attr;
    Learn(NFSPROC3_GETATTR, a, Xdr(Proc(xdr_GETATTR3res), res));
  }
  void LearnLookup(const std::string& dir, const char* name, const std::string& child) {
    LOOKUP3args a{};
    a.what.dir = Fh(dir);
    a.what.name = const_cast<char*>(name);
    LOOKUP3res res{};
    res.status = NFS3_OK;
    res.LOOKUP3res_u.resok.object = Fh(child);
    res.LOOKUP3res_u.resok.obj_attributes = PostOp(attrs_[child]);
    res.LOOKUP3res_u.resok.dir_attributes = PostOp(attrs_[dir]);
    Learn(NFSPROC3_LOOKUP, a, Xdr(Proc(xdr_LOOKUP3res), res));
  }
  // The user may do everything to `fh` (an ACCESS reply learned).
  void GrantAccess(const std::string& fh) {
    ACCESS3args acc{Fh(fh), 0x3f};
    ACCESS3res ares{};
    ares.status = NFS3_OK;
    ares.ACCESS3res_u.resok.obj_attributes = PostOp(attrs_[fh]);
    ares.ACCESS3res_u.resok.access = 0x3f;
    Learn(NFSPROC3_ACCESS, acc, Xdr(Proc(xdr_ACCESS3res), ares));
  }
  // The listing of x: ".", ".." (its parent `parent`) and "a", from a call
  // `sent` (by default: none known, as if sent now).
  void LearnListing(const std::string& parent, SentCall sent = {}) {
    const std::string* fhs[3] = {&x_, &parent, &a_};
    const char* names[3] = {".", "..", "a"};
    entryplus3 e[3]{};
    for (int i = 0; i < 3; ++i) {
      e[i].fileid = attrs_[*fhs[i]].fileid;
      e[i].name = const_cast<char*>(names[i]);
      e[i].cookie = 100 + i;
      e[i].name_attributes = PostOp(attrs_[*fhs[i]]);
      e[i].name_handle.handle_follows = TRUE;
      e[i].name_handle.post_op_fh3_u.handle = Fh(*fhs[i]);
      e[i].nextentry = i < 2 ? &e[i + 1] : nullptr;
    }
    READDIRPLUS3res res{};
    res.status = NFS3_OK;
    res.READDIRPLUS3res_u.resok.dir_attributes = PostOp(attrs_[x_]);
    res.READDIRPLUS3res_u.resok.reply.entries = &e[0];
    res.READDIRPLUS3res_u.resok.reply.eof = TRUE;
    Learn(NFSPROC3_READDIRPLUS, PlusArgs(), Xdr(Proc(xdr_READDIRPLUS3res), res), sent);
  }
  READDIRPLUS3args PlusArgs() {
    READDIRPLUS3args a{};
    a.dir = Fh(x_);
    a.dircount = 8192;
    a.maxcount = 65536;
    return a;
  }
  // The ".." handle of x's listing as the cache answers it; nullopt if the
  // cache does not answer.
  std::optional<std::string> CachedDotDot() {
    READDIRPLUS3args a = PlusArgs();
    std::optional<std::string> r =
        cache_.Answer(*FindNfsProc(NFSPROC3_READDIRPLUS), &a, exp_, user_);
    if (!r) return std::nullopt;
    XdrValue<READDIRPLUS3res> res(Proc(xdr_READDIRPLUS3res));
    EXPECT_TRUE(res.Decode(*r));
    for (const entryplus3* e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
      if (std::string(e->name) == ".." && e->name_handle.handle_follows) {
        return Bytes(e->name_handle.post_op_fh3_u.handle);
      }
    }
    return std::string();
  }

  FakeClock clock_;
  Export exp_;
  MetadataCache cache_;
  CredKey user_ = CredKey::FromIds(1000, 1000, {});
  const std::string p1_ = "PARENT-ONE-00001", p2_ = "PARENT-TWO-00002";
  const std::string x_ = "MOVED-DIR-X-0003", a_ = "FILE-A-IN-X-0004";
  std::map<std::string, fattr3> attrs_ = {{p1_, Attr(NF3DIR, 11)},
                                          {p2_, Attr(NF3DIR, 12)},
                                          {x_, Attr(NF3DIR, 13)},
                                          {a_, Attr(NF3REG, 14)}};
};

TEST_F(MovedDirectoryListingTest, RenameThroughTheProxyDoesNotLeaveTheOldDotDotInTheListing) {
  LearnLookup(p1_, "x", x_);
  LearnGetattr(p2_, attrs_[p2_]);
  LearnListing(p1_);
  GrantAccess(x_);
  ASSERT_EQ(CachedDotDot(), p1_) << "the control: the page is answered before the rename";

  // RENAME p1/x -> p2/x through the proxy, a second later.
  RENAME3args rn{};
  rn.from.dir = Fh(p1_);
  rn.from.name = const_cast<char*>("x");
  rn.to.dir = Fh(p2_);
  rn.to.name = const_cast<char*>("x");
  fattr3 p1_after = attrs_[p1_], p2_after = attrs_[p2_];
  p1_after.mtime.seconds = p1_after.ctime.seconds = kWall0 - 1;
  p1_after.nlink = 1;
  p2_after.mtime.seconds = p2_after.ctime.seconds = kWall0 - 1;
  p2_after.nlink = 3;
  RENAME3res rr{};
  rr.status = NFS3_OK;
  rr.RENAME3res_u.resok.fromdir_wcc = test_xdr::Wcc(attrs_[p1_], p1_after);
  rr.RENAME3res_u.resok.todir_wcc = test_xdr::Wcc(attrs_[p2_], p2_after);
  Learn(NFSPROC3_RENAME, rn, Xdr(Proc(xdr_RENAME3res), rr));
  attrs_[p1_] = p1_after;
  attrs_[p2_] = p2_after;
  // x's attributes asked again: a server that does not change the moved
  // object's ctime shows them as they were.
  LearnGetattr(x_, attrs_[x_]);

  std::optional<std::string> dotdot = CachedDotDot();
  if (dotdot) {
    EXPECT_NE(*dotdot, p1_) << "x was moved to p2 through the proxy; its cached listing still "
                               "gives the old parent as \"..\"";
  }
}

// An upstream file system whose PATHCONF says it ignores case: a name
// there may be found under another spelling than the one cached ("foo"
// absent, then "Foo" created), so LOOKUPs in it are not answered from the
// name cache, found or absent.
TEST_F(MovedDirectoryListingTest, ACaseInsensitiveFileSystemsNamesAreNotAnsweredFromCache) {
  LearnLookup(p1_, "x", x_);
  GrantAccess(p1_);
  LOOKUP3args look{};
  look.what.dir = Fh(p1_);
  look.what.name = const_cast<char*>("x");
  ASSERT_TRUE(cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &look, exp_, user_))
      << "the control: answered from the name cache";
  PATHCONF3args pa{};
  pa.object = Fh(p1_);
  PATHCONF3res pr{};
  pr.status = NFS3_OK;
  pr.PATHCONF3res_u.resok.obj_attributes = PostOp(attrs_[p1_]);
  pr.PATHCONF3res_u.resok.name_max = 255;
  pr.PATHCONF3res_u.resok.case_insensitive = TRUE;
  pr.PATHCONF3res_u.resok.case_preserving = TRUE;
  Learn(NFSPROC3_PATHCONF, pa, Xdr(Proc(xdr_PATHCONF3res), pr));
  EXPECT_FALSE(cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &look, exp_, user_))
      << "a name answered from cache on a file system that ignores case";
}

// A rename within one directory is one change of it, described twice (from
// and to): the directory keeps its other names, updated in place
// (docs/architecture.md), rather than dropping them for a "before" that no
// longer matches.
TEST_F(MovedDirectoryListingTest, RenameWithinADirectoryKeepsItsOtherNames) {
  LearnLookup(p1_, "x", x_);
  LearnLookup(p1_, "b", a_);
  GrantAccess(p1_);
  LOOKUP3args look{};
  look.what.dir = Fh(p1_);
  look.what.name = const_cast<char*>("b");
  ASSERT_TRUE(cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &look, exp_, user_));

  RENAME3args rn{};
  rn.from.dir = Fh(p1_);
  rn.from.name = const_cast<char*>("x");
  rn.to.dir = Fh(p1_);
  rn.to.name = const_cast<char*>("z");
  fattr3 after = attrs_[p1_];
  after.mtime.seconds = after.ctime.seconds = kWall0 - 1;
  RENAME3res rr{};
  rr.status = NFS3_OK;
  rr.RENAME3res_u.resok.fromdir_wcc = test_xdr::Wcc(attrs_[p1_], after);
  rr.RENAME3res_u.resok.todir_wcc = test_xdr::Wcc(attrs_[p1_], after);
  Learn(NFSPROC3_RENAME, rn, Xdr(Proc(xdr_RENAME3res), rr));

  EXPECT_TRUE(cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &look, exp_, user_))
      << "the directory's other name went upstream again after a rename within it";
  // The moved one's attributes went (its ctime changed); once known again,
  // its new name answers.
  LearnGetattr(x_, attrs_[x_]);
  look.what.name = const_cast<char*>("z");
  std::optional<std::string> r = cache_.Answer(*FindNfsProc(NFSPROC3_LOOKUP), &look, exp_, user_);
  ASSERT_TRUE(r);
  XdrValue<LOOKUP3res> res(Proc(xdr_LOOKUP3res));
  ASSERT_TRUE(res.Decode(*r));
  ASSERT_EQ(res->status, NFS3_OK);
  EXPECT_EQ(Bytes(res->LOOKUP3res_u.resok.object), x_);
}

// A directory moved through the proxy under a name the proxy does not know
// (never looked up, or its name cache entry evicted at max_name_entries):
// the RENAME does not say which object moved, but every listing page whose
// ".." is the source directory may be the moved one's, and those go.
class MovedUnknownDirectoryTest : public MovedDirectoryListingTest {
 protected:
  void SetUp() override {
    LearnGetattr(p1_, attrs_[p1_]);
    LearnGetattr(p2_, attrs_[p2_]);
    LearnGetattr(x_, attrs_[x_]);
    LearnListing(p1_);
    GrantAccess(x_);
    ASSERT_EQ(CachedDotDot(), p1_) << "the control: the page is answered before the rename";
  }
  RENAME3args Rename(const std::string& to_dir) {
    RENAME3args rn{};
    rn.from.dir = Fh(p1_);
    rn.from.name = const_cast<char*>("x");
    rn.to.dir = Fh(to_dir);
    rn.to.name = const_cast<char*>("y");
    return rn;
  }
  // The RENAME's reply; without the source's attributes after it if
  // `from_after` is false.
  void LearnRename(const std::string& to_dir, bool from_after) {
    fattr3 p1_after = attrs_[p1_], to_after = attrs_[to_dir];
    p1_after.mtime.seconds = p1_after.ctime.seconds = kWall0 - 1;
    to_after.mtime.seconds = to_after.ctime.seconds = kWall0 - 1;
    RENAME3res rr{};
    rr.status = NFS3_OK;
    rr.RENAME3res_u.resok.fromdir_wcc = test_xdr::Wcc(attrs_[p1_], p1_after);
    if (!from_after) rr.RENAME3res_u.resok.fromdir_wcc.after.attributes_follow = FALSE;
    rr.RENAME3res_u.resok.todir_wcc = test_xdr::Wcc(attrs_[to_dir], to_after);
    RENAME3args rn = Rename(to_dir);
    Learn(NFSPROC3_RENAME, rn, Xdr(Proc(xdr_RENAME3res), rr));
    // x's attributes asked again: as they were (its ctime unchanged).
    LearnGetattr(x_, attrs_[x_]);
  }
};

TEST_F(MovedUnknownDirectoryTest, ItsListingNamingTheSourceAsDotDotGoes) {
  LearnRename(p2_, true);
  EXPECT_EQ(CachedDotDot(), std::nullopt)
      << "an unknown object moved from p1 to p2: x's listing, whose \"..\" is p1, was answered";
}

TEST_F(MovedUnknownDirectoryTest, TheSourceKnownFromTheCacheWhenTheReplyHasNoAttributes) {
  LearnRename(p2_, false);
  EXPECT_EQ(CachedDotDot(), std::nullopt);
}

TEST_F(MovedUnknownDirectoryTest, ARenameLeftUnansweredDropsItToo) {
  RENAME3args rn = Rename(p2_);
  cache_.ForgetUnanswered(*FindNfsProc(NFSPROC3_RENAME), &rn);
  LearnGetattr(x_, attrs_[x_]);
  EXPECT_EQ(CachedDotDot(), std::nullopt);
}

// The same for an RMDIR of a directory the proxy does not know by its name:
// a client still holding its handle is not answered its listing (".",
// "..") as if it still existed.
TEST_F(MovedUnknownDirectoryTest, AnRmdirOfItDropsItsListing) {
  fattr3 p1_after = attrs_[p1_];
  p1_after.mtime.seconds = p1_after.ctime.seconds = kWall0 - 1;
  RMDIR3args rm{};
  rm.object.dir = Fh(p1_);
  rm.object.name = const_cast<char*>("x");
  RMDIR3res rr{};
  rr.status = NFS3_OK;
  rr.RMDIR3res_u.resok.dir_wcc = test_xdr::Wcc(attrs_[p1_], p1_after);
  Learn(NFSPROC3_RMDIR, rm, Xdr(Proc(xdr_RMDIR3res), rr));
  LearnGetattr(x_, attrs_[x_]);  // a GETATTR answered before the RMDIR, say
  EXPECT_EQ(CachedDotDot(), std::nullopt) << "the removed directory's listing was answered";
}

TEST_F(MovedUnknownDirectoryTest, AnRmdirLeftUnansweredDropsItToo) {
  RMDIR3args rm{};
  rm.object.dir = Fh(p1_);
  rm.object.name = const_cast<char*>("x");
  cache_.ForgetUnanswered(*FindNfsProc(NFSPROC3_RMDIR), &rm);
  LearnGetattr(x_, attrs_[x_]);
  EXPECT_EQ(CachedDotDot(), std::nullopt);
}

// A listing of x sent before the RENAME and answered after it (a client's,
// the prefetcher's, the refresher's) is not kept either: its ".." is the
// source. One sent after it is.
TEST_F(MovedUnknownDirectoryTest, AListingInFlightAcrossTheRenameIsNotKept) {
  const SentCall before{std::chrono::steady_clock::now(), 1};
  LearnRename(p2_, true);
  ASSERT_EQ(CachedDotDot(), std::nullopt);
  LearnListing(p1_, before);
  EXPECT_EQ(CachedDotDot(), std::nullopt) << "the old \"..\" came back with a listing sent "
                                             "before the rename";
  LearnListing(p1_, SentCall{std::chrono::steady_clock::now(), 1});
  EXPECT_EQ(CachedDotDot(), p1_) << "a listing sent after the rename is kept";
}

// The source's fileid known neither from the reply nor from the cache (an
// unanswered RENAME out of a directory never seen): every listing with a
// ".." goes, and every one in flight is not kept.
TEST_F(MovedUnknownDirectoryTest, ASourceOfUnknownFileidDropsEveryListingWithADotDot) {
  const SentCall before{std::chrono::steady_clock::now(), 1};
  RENAME3args rn = Rename(p2_);
  const std::string unseen = "NEVER-SEEN-00009";
  rn.from.dir = Fh(unseen);
  cache_.ForgetUnanswered(*FindNfsProc(NFSPROC3_RENAME), &rn);
  LearnGetattr(x_, attrs_[x_]);
  EXPECT_EQ(CachedDotDot(), std::nullopt);
  LearnListing(p1_, before);
  EXPECT_EQ(CachedDotDot(), std::nullopt) << "a listing in flight across it was kept";
}

TEST_F(MovedUnknownDirectoryTest, ARenameWithinTheSourceKeepsTheListing) {
  // "..": unchanged by a rename within one directory.
  LearnRename(p1_, true);
  EXPECT_EQ(CachedDotDot(), p1_);
}

}  // namespace
}  // namespace nfsedge
