// Listings whose cookies the upstream no longer honours (RFC 1813:
// NFS3ERR_BAD_COOKIE, and NFS3ERR_NOT_SYNC for a cookie verifier) drop the
// directory's listing pages (docs/architecture.md section 8).
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "client_calls.h"
#include "proxy/config.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "rpc/sockaddr.h"
#include "rpc/xdr_codec.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

using test_xdr::Bytes;
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Proc;
using test_xdr::Xdr;

// --- Cookies the upstream no longer honours ----------------------------------

constexpr char kVerf[NFS3_COOKIEVERFSIZE + 1] = "VERF0001";

// The client's listing procedure and the upstream's answer to a listing that
// continues from a cookie.
struct Rejection {
  uint32_t proc;
  nfsstat3 status;
};
void PrintTo(const Rejection& r, std::ostream* os) {
  *os << "procedure " << r.proc << ", upstream status " << r.status;
}

// The proxy with a metadata cache in front of an upstream holding "/e" (a
// root with a file "f" and a directory "sub" holding "g"). The upstream
// lists a directory from cookie 0; a listing from any other cookie gets the
// test's status, with the directory's attributes unchanged (the directory
// did not change as far as attributes show; its cookies are not honoured).
class RejectedCookieTest : public ::testing::TestWithParam<Rejection> {
 protected:
  void SetUp() override {
    ExportConfig e;
    e.path = "/e";
    e.upstream_path = "/e";
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    exports_ = std::make_unique<ExportTable>(std::vector<ExportConfig>{e});
    registry_ = std::make_unique<HandleRegistry>(100);
    registry_->Add(root_, 0, /*root=*/true);
    registry_->Add(sub_, 0);
    cache_ = std::make_unique<MetadataCache>(clock_, CacheConfig{});
    up_ = std::make_unique<FakeUpstream>(loop_.base());
    up_->set_responder([this](const FakeUpstream::Seen& s) { return Respond(s); });
    nfs_ = std::make_unique<NfsService>(*exports_, *registry_, *up_, NfsServiceOptions{},
                                        cache_.get());
    dispatcher_ = std::make_unique<Dispatcher>(std::vector<RpcProgram*>{nfs_.get()});
    server_ = std::make_unique<RpcServer>(loop_.base(), ServerOptions{}, dispatcher_.get());
    port_ = *server_->Listen(*ResolveAddress("127.0.0.1", 0));
    loop_.Start();
    client_ = std::make_unique<BlockingClient>(port_);
    ASSERT_TRUE(client_->connected());
  }
  void TearDown() override {
    client_.reset();
    loop_.RunSync([this] { server_.reset(); });
  }

  static fattr3 AttrOf(ftype3 type, uint64_t fileid) {
    fattr3 a{};
    a.type = type;
    a.mode = 0755;
    a.nlink = type == NF3DIR ? 2 : 1;
    a.uid = a.gid = 1000;
    a.size = 4096;
    a.fileid = fileid;
    a.mtime.seconds = a.ctime.seconds = 1704067200 - 3600;  // an hour before FakeClock's start
    return a;
  }

  std::optional<std::string> Respond(const FakeUpstream::Seen& s) {
    if (s.proc == NFSPROC3_ACCESS) {
      XdrValue<ACCESS3args> a(Proc(xdr_ACCESS3args));
      EXPECT_TRUE(a.Decode(s.args));
      ACCESS3res res{};
      res.status = NFS3_OK;
      res.ACCESS3res_u.resok.obj_attributes = PostOp(attrs_.at(Bytes(a->object)));
      res.ACCESS3res_u.resok.access = a->access;
      return Xdr(Proc(xdr_ACCESS3res), res);
    }
    if (s.proc != NFSPROC3_READDIRPLUS) {
      ADD_FAILURE() << "unexpected upstream call " << s.proc;
      std::string fault;  // NFS3ERR_SERVERFAULT, no attributes
      XdrWriter w(&fault);
      w.WriteU32(NFS3ERR_SERVERFAULT);
      w.WriteU32(0);
      return fault;
    }
    XdrValue<READDIRPLUS3args> a(Proc(xdr_READDIRPLUS3args));
    EXPECT_TRUE(a.Decode(s.args));
    const std::string dir = Bytes(a->dir);
    READDIRPLUS3res res{};
    if (a->cookie != 0) {
      res.status = GetParam().status;
      res.READDIRPLUS3res_u.resfail.dir_attributes = PostOp(attrs_.at(dir));
      return Xdr(Proc(xdr_READDIRPLUS3res), res);
    }
    // Names and handles point into children_, which outlives the encoding.
    const std::vector<std::pair<std::string, std::string>>& children = children_.at(dir);
    std::vector<entryplus3> e(children.size());
    for (size_t i = 0; i < e.size(); ++i) {
      e[i].fileid = attrs_.at(children[i].second).fileid;
      e[i].name = const_cast<char*>(children[i].first.c_str());
      e[i].cookie = 100 + i;
      e[i].name_attributes = PostOp(attrs_.at(children[i].second));
      e[i].name_handle.handle_follows = TRUE;
      e[i].name_handle.post_op_fh3_u.handle = Fh(children[i].second);
      e[i].nextentry = i + 1 < e.size() ? &e[i + 1] : nullptr;
    }
    res.status = NFS3_OK;
    READDIRPLUS3resok& ok = res.READDIRPLUS3res_u.resok;
    ok.dir_attributes = PostOp(attrs_.at(dir));
    std::memcpy(ok.cookieverf, kVerf, NFS3_COOKIEVERFSIZE);
    ok.reply.entries = e.data();
    ok.reply.eof = TRUE;
    return Xdr(Proc(xdr_READDIRPLUS3res), res);
  }

  uint32_t StatusOf(uint32_t proc, const std::string& args) {
    const std::string r = test_calls::CallResults(*client_, ++xid_, kNfsProgram, proc, args);
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }
  // The client's listing (the test's procedure) of `dir` from `cookie`, with
  // the upstream's verifier unless from 0; returns its status.
  uint32_t List(const std::string& dir, uint64_t cookie) {
    if (GetParam().proc == NFSPROC3_READDIRPLUS) {
      READDIRPLUS3args a{};
      a.dir = Fh(dir);
      a.cookie = cookie;
      if (cookie != 0) std::memcpy(a.cookieverf, kVerf, NFS3_COOKIEVERFSIZE);
      a.dircount = 8192;
      a.maxcount = 65536;
      return StatusOf(NFSPROC3_READDIRPLUS, Xdr(Proc(xdr_READDIRPLUS3args), a));
    }
    READDIR3args a{};
    a.dir = Fh(dir);
    a.cookie = cookie;
    if (cookie != 0) std::memcpy(a.cookieverf, kVerf, NFS3_COOKIEVERFSIZE);
    a.count = 8192;
    return StatusOf(NFSPROC3_READDIR, Xdr(Proc(xdr_READDIR3args), a));
  }
  uint32_t Access(const std::string& fh) {
    ACCESS3args a{};
    a.object = Fh(fh);
    a.access = 0x3f;
    return StatusOf(NFSPROC3_ACCESS, Xdr(Proc(xdr_ACCESS3args), a));
  }
  uint32_t Lookup(const std::string& dir, const char* name) {
    LOOKUP3args a{};
    a.what.dir = Fh(dir);
    a.what.name = const_cast<char*>(name);
    return StatusOf(NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), a));
  }
  size_t UpstreamCalls(uint32_t proc) {
    size_t n = 0;
    loop_.RunSync([&] {
      for (const FakeUpstream::Seen& s : up_->calls) n += s.proc == proc;
    });
    return n;
  }
  size_t CachedPages() {
    size_t n = 0;
    loop_.RunSync([&] { n = cache_->dirs().size(); });
    return n;
  }

  const std::string root_ = "ROOT-OF-E-000001", sub_ = "DIR-SUB-IN-E-002";
  const std::string f_ = "FILE-F-IN-E-0003", g_ = "FILE-G-IN-SUB-04";
  std::map<std::string, fattr3> attrs_ = {{root_, AttrOf(NF3DIR, 1)},
                                          {sub_, AttrOf(NF3DIR, 2)},
                                          {f_, AttrOf(NF3REG, 3)},
                                          {g_, AttrOf(NF3REG, 4)}};
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> children_ = {
      {root_, {{".", root_}, {"f", f_}, {"sub", sub_}}}, {sub_, {{".", sub_}, {"g", g_}}}};

  LoopThread loop_;
  FakeClock clock_;
  std::unique_ptr<ExportTable> exports_;
  std::unique_ptr<HandleRegistry> registry_;
  std::unique_ptr<MetadataCache> cache_;
  std::unique_ptr<FakeUpstream> up_;
  std::unique_ptr<NfsService> nfs_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<BlockingClient> client_;
  uint16_t port_ = 0;
  uint32_t xid_ = 0;
};

TEST_P(RejectedCookieTest, DropsThatDirectorysPagesOnlyAndKeepsItsNames) {
  const uint32_t status = GetParam().status;
  ASSERT_EQ(Access(root_), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Access(sub_), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(List(root_, 0), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(List(sub_, 0), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(List(root_, 0), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(List(sub_, 0), static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 2u)
      << "the control: the second listings are answered from the pages";
  ASSERT_EQ(CachedPages(), 2u);

  // (A cookie of the cached page would be answered from it: 99 is not one,
  // say from a listing the proxy did not see.)
  EXPECT_EQ(List(root_, 99), status) << "the client gets the upstream's status";
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 3u);
  EXPECT_EQ(CachedPages(), 1u) << "the root's page, whose cookies the upstream refused, is kept";

  // The names and attributes stay: a LOOKUP in the root is answered locally.
  EXPECT_EQ(Lookup(root_, "f"), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamCalls(NFSPROC3_LOOKUP), 0u);
  // Another directory keeps its page.
  EXPECT_EQ(List(sub_, 0), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 3u);
  // The root is listed again from the upstream, with cookies it honours.
  EXPECT_EQ(List(root_, 0), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamCalls(NFSPROC3_READDIRPLUS), 4u)
      << "listed from the page whose cookies the upstream no longer honours";
}

std::string NameOf(const ::testing::TestParamInfo<Rejection>& info) {
  return std::string(info.param.proc == NFSPROC3_READDIR ? "Readdir" : "Readdirplus") +
         (info.param.status == NFS3ERR_BAD_COOKIE ? "BadCookie" : "NotSync");
}

INSTANTIATE_TEST_SUITE_P(Listings, RejectedCookieTest,
                         ::testing::Values(Rejection{NFSPROC3_READDIRPLUS, NFS3ERR_BAD_COOKIE},
                                           Rejection{NFSPROC3_READDIR, NFS3ERR_BAD_COOKIE},
                                           Rejection{NFSPROC3_READDIRPLUS, NFS3ERR_NOT_SYNC},
                                           Rejection{NFSPROC3_READDIR, NFS3ERR_NOT_SYNC}),
                         NameOf);

}  // namespace
}  // namespace nfsedge
