#include "proxy/exports.h"

#include <gtest/gtest.h>

#include <string>

#include "proxy/config.h"
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
  EXPECT_FALSE(IsCleanAbsolutePath(std::string("/a/..\0b", 7))) << "a C string ends at the NUL";
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

// --- Export networks written as IPv4-mapped IPv6 -------------------------------

// "::ffff:a.b.c.d/n" (n >= 96) is the IPv4 network a.b.c.d/(n-96): it admits
// the client whether it arrives over IPv4 or, on a dual-stack socket, as an
// IPv4-mapped IPv6 address; and an IPv4 network admits both forms too.
TEST(MappedNetworkTest, MappedAndIpv4NetworksMatchBothFormsOfAClient) {
  StatusOr<Network> mapped = Network::Parse("::ffff:10.1.0.0/112");
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_TRUE(mapped->Contains(Addr("10.1.2.3"))) << "an IPv4 client of ::ffff:10.1.0.0/112";
  EXPECT_TRUE(mapped->Contains(Addr("::ffff:10.1.2.3")));
  EXPECT_FALSE(mapped->Contains(Addr("10.2.0.1")));
  EXPECT_FALSE(mapped->Contains(Addr("::ffff:10.2.0.1")));
  EXPECT_FALSE(mapped->Contains(Addr("fd00::a01:203")));
  EXPECT_EQ(mapped->text(), "::ffff:10.1.0.0/112") << "shown as written";

  StatusOr<Network> host = Network::Parse("::ffff:192.168.1.7");
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_TRUE(host->Contains(Addr("192.168.1.7")));
  EXPECT_FALSE(host->Contains(Addr("192.168.1.8")));
  StatusOr<Network> odd = Network::Parse("::ffff:192.168.1.128/121");
  ASSERT_TRUE(odd.ok()) << odd.status().ToString();
  EXPECT_TRUE(odd->Contains(Addr("192.168.1.200")));
  EXPECT_FALSE(odd->Contains(Addr("192.168.1.100")));
  StatusOr<Network> every = Network::Parse("::ffff:0.0.0.0/96");
  ASSERT_TRUE(every.ok()) << every.status().ToString();
  EXPECT_TRUE(every->Contains(Addr("203.0.113.9")));
  EXPECT_FALSE(every->Contains(Addr("2001:db8::1")));

  Network v4 = *Network::Parse("10.1.0.0/16");
  EXPECT_TRUE(v4.Contains(Addr("10.1.2.3")));
  EXPECT_TRUE(v4.Contains(Addr("::ffff:10.1.2.3"))) << "a dual-stack socket's IPv4 client";
  EXPECT_FALSE(v4.Contains(Addr("::ffff:10.2.2.3")));
  EXPECT_FALSE(v4.Contains(Addr("::a01:203"))) << "not an IPv4-mapped address";

  // An IPv6 network holds IPv6 clients only: an IPv4 client on a dual-stack
  // socket is not in "::/0" (nor in "::/80", whose bytes it shares), as it
  // would not be with an IPv4 listener.
  for (const char* net : {"::/0", "::/64", "::/80", "::ffff:0:0:0/48"}) {
    StatusOr<Network> six = Network::Parse(net);
    ASSERT_TRUE(six.ok()) << net << ": " << six.status().ToString();
    EXPECT_FALSE(six->Contains(Addr("::ffff:10.1.2.3"))) << net;
    EXPECT_FALSE(six->Contains(Addr("10.1.2.3"))) << net;
  }
  EXPECT_TRUE(Network::Parse("::/0")->Contains(Addr("2001:db8::1")));
}

constexpr char kUpstream[] = "[upstream]\nhost = \"10.9.9.9\"\n";

std::string ExportWith(const std::string& net) {
  return std::string(kUpstream) + "[[export]]\npath = \"/data\"\nclients = [\"" + net + "\"]\n";
}

// From the config file to the export rule; a mapped address with a prefix
// shorter than its 96 mapping bits (a network of other IPv6 addresses, and
// of every IPv4 client with a prefix of 80 or less) is refused at load.
TEST(MappedNetworkTest, ConfigAdmitsMappedNetworksAndRefusesShortPrefixes) {
  StatusOr<Config> c = ParseConfig(ExportWith("::ffff:10.1.0.0/112"), "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->exports.size(), 1u);
  Export e(0, c->exports[0]);
  EXPECT_TRUE(e.AllowsClient(Addr("10.1.2.3")));
  EXPECT_TRUE(e.AllowsClient(Addr("::ffff:10.1.2.3")));
  EXPECT_FALSE(e.AllowsClient(Addr("10.3.2.1")));

  for (const char* net : {"::ffff:10.1.0.0/16", "::ffff:0.0.0.0/80", "::ffff:10.1.0.0/95"}) {
    StatusOr<Config> bad = ParseConfig(ExportWith(net), "t.toml");
    ASSERT_FALSE(bad.ok()) << net << " is accepted";
    const std::string m = bad.status().message();
    EXPECT_NE(m.find(std::string("'") + net + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("IPv4-mapped"), std::string::npos) << m;
    EXPECT_NE(m.find("96"), std::string::npos) << m;
  }
  for (const char* net : {"::ffff:10.1.0.0/129", "::ffff:10.1.0.0/-0", "10.0.0.0/33"}) {
    StatusOr<Config> bad = ParseConfig(ExportWith(net), "t.toml");
    ASSERT_FALSE(bad.ok()) << net << " is accepted";
    const std::string m = bad.status().message();
    EXPECT_NE(m.find("bad prefix length"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace nfsedge
