#include "proxy/exports.h"

#include <gtest/gtest.h>

#include "rpc/auth_sys.h"

namespace nfsedge {
namespace {

SockAddr Addr(const char* host) { return *ResolveAddress(host, 0); }

ExportConfig MakeExport(const char* path, const char* upstream, std::vector<const char*> nets) {
  ExportConfig c;
  c.path = path;
  c.upstream_path = upstream;
  for (const char* n : nets) c.clients.push_back(*Network::Parse(n));
  return c;
}

TEST(Network, ContainsIpv4AndIpv6) {
  Network n = *Network::Parse("10.1.0.0/16");
  EXPECT_TRUE(n.Contains(Addr("10.1.200.3")));
  EXPECT_FALSE(n.Contains(Addr("10.2.0.1")));
  EXPECT_TRUE(n.Contains(Addr("::ffff:10.1.0.9")));  // IPv4-mapped
  Network one = *Network::Parse("127.0.0.1");
  EXPECT_TRUE(one.Contains(Addr("127.0.0.1")));
  EXPECT_FALSE(one.Contains(Addr("127.0.0.2")));
  Network v6 = *Network::Parse("fd00::/8");
  EXPECT_TRUE(v6.Contains(Addr("fd12::1")));
  EXPECT_FALSE(v6.Contains(Addr("10.1.0.1")));
  Network odd = *Network::Parse("192.168.1.128/25");
  EXPECT_TRUE(odd.Contains(Addr("192.168.1.200")));
  EXPECT_FALSE(odd.Contains(Addr("192.168.1.100")));
  EXPECT_FALSE(Network::Parse("300.1.1.1").ok());
  EXPECT_FALSE(Network::Parse("10.0.0.0/").ok());
}

TEST(ExportTable, FindsLongestMatchingExportAndUpstreamPath) {
  ExportTable t({MakeExport("/data", "/srv/data", {"10.0.0.0/8"}),
                 MakeExport("/data/proj", "/vol/proj", {"10.0.0.0/8"})});
  std::string up;
  const Export* e = t.FindByPath("/data", &up);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(up, "/srv/data");
  e = t.FindByPath("/data/sub/dir", &up);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id(), 0u);
  EXPECT_EQ(up, "/srv/data/sub/dir");
  e = t.FindByPath("/data/proj/x", &up);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id(), 1u);
  EXPECT_EQ(up, "/vol/proj/x");
  EXPECT_EQ(t.FindByPath("/dataset", &up), nullptr);
  EXPECT_EQ(t.FindByPath("/", &up), nullptr);
}

TEST(ExportTable, CleanPaths) {
  EXPECT_TRUE(IsCleanAbsolutePath("/"));
  EXPECT_TRUE(IsCleanAbsolutePath("/a/b"));
  EXPECT_FALSE(IsCleanAbsolutePath("/a/../etc"));
  EXPECT_FALSE(IsCleanAbsolutePath("/a/./b"));
  EXPECT_FALSE(IsCleanAbsolutePath("a/b"));
  EXPECT_FALSE(IsCleanAbsolutePath("/a//b"));
  EXPECT_FALSE(IsCleanAbsolutePath("/a/"));
}

TEST(Export, RootSquashMapsUidGidAndGroups) {
  ExportConfig c = MakeExport("/d", "/d", {"0.0.0.0/0"});
  c.anon_uid = 999;
  c.anon_gid = 998;
  Export e(0, c);
  OpaqueAuth root{kAuthSys, EncodeAuthSys(AuthSys{1, "m", 0, 0, {0, 5}})};
  std::optional<AuthSys> out = DecodeAuthSys(e.MapCredential(root).body);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->uid, 999u);
  EXPECT_EQ(out->gid, 998u);
  EXPECT_EQ(out->gids, (std::vector<uint32_t>{998, 5}));

  OpaqueAuth user{kAuthSys, EncodeAuthSys(AuthSys{1, "m", 1000, 1000, {}})};
  EXPECT_EQ(e.MapCredential(user).body, user.body);

  c.root_squash = false;
  Export open(0, c);
  EXPECT_EQ(open.MapCredential(root).body, root.body);
}

}  // namespace
}  // namespace nfsedge
