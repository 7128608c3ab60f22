// Export rules of docs/security.md without sockets: credential squashing,
// the `secure` port rule, the choice among nested exports, and their config.
#include <gtest/gtest.h>

#include "cache/handle_registry.h"
#include "proxy/config.h"
#include "proxy/exports.h"
#include "rpc/auth_sys.h"

namespace nfsedge {
namespace {

SockAddr Addr(const char* host, uint16_t port = 0) { return *ResolveAddress(host, port); }

ExportConfig MakeExport(const char* path, std::vector<const char*> nets) {
  ExportConfig c;
  c.path = path;
  c.upstream_path = path;
  for (const char* n : nets) c.clients.push_back(*Network::Parse(n));
  return c;
}

OpaqueAuth Cred(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids) {
  return OpaqueAuth{kAuthSys, EncodeAuthSys(AuthSys{7, "host", uid, gid, std::move(gids)})};
}

std::vector<uint32_t> ManyGroups(uint32_t n) {
  std::vector<uint32_t> g;
  for (uint32_t i = 0; i < n; ++i) g.push_back(100 + i);
  return g;
}

TEST(ExportSecurity, AllSquashMapsEveryUserToAnonymousWithoutGroups) {
  ExportConfig c = MakeExport("/x", {"10.0.0.0/8"});
  c.all_squash = true;
  c.anon_uid = 500;
  c.anon_gid = 501;
  Export e(0, c);
  for (uint32_t uid : {0u, 1000u}) {
    std::optional<AuthSys> out = DecodeAuthSys(e.MapCredential(Cred(uid, 20, {20, 0, 30})).body);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->uid, 500u);
    EXPECT_EQ(out->gid, 501u);
    EXPECT_TRUE(out->gids.empty());
    EXPECT_EQ(out->machine, "host");
    EXPECT_EQ(out->stamp, 7u);
  }
  // AUTH_NONE is already anonymous: passed as is.
  OpaqueAuth none{kAuthNone, ""};
  EXPECT_EQ(e.MapCredential(none).flavor, kAuthNone);
}

TEST(ExportSecurity, MoreThanSixteenGroupsPassThroughAsSent) {
  ExportConfig c = MakeExport("/x", {"10.0.0.0/8"});
  c.root_squash = true;
  Export squash(0, c);
  // Unsquashed: the very bytes the client sent.
  OpaqueAuth user = Cred(1000, 1000, ManyGroups(20));
  EXPECT_EQ(squash.MapCredential(user).body, user.body);
  // Squashed root: every group kept, gid 0 among them mapped.
  std::vector<uint32_t> groups = ManyGroups(20);
  groups[17] = 0;
  std::optional<AuthSys> out = DecodeAuthSys(squash.MapCredential(Cred(0, 5, groups)).body);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->uid, c.anon_uid);
  ASSERT_EQ(out->gids.size(), 20u);
  EXPECT_EQ(out->gids[17], c.anon_gid);
  EXPECT_EQ(out->gids[19], 119u);
}

TEST(ExportSecurity, SecureRequiresAPrivilegedSourcePort) {
  ExportConfig c = MakeExport("/x", {"10.0.0.0/8"});
  Export open(0, c);
  EXPECT_TRUE(open.AllowsPort(Addr("10.0.0.1", 40000)));
  c.secure = true;
  Export secure(0, c);
  EXPECT_TRUE(secure.AllowsPort(Addr("10.0.0.1", 1023)));
  EXPECT_TRUE(secure.AllowsPort(Addr("10.0.0.1", 700)));
  EXPECT_FALSE(secure.AllowsPort(Addr("10.0.0.1", 1024)));
  EXPECT_FALSE(secure.AllowsPort(Addr("10.0.0.1", 40000)));
}

TEST(ExportSecurity, ChooseTakesTheDeepestExportThatAdmitsTheClient) {
  ExportConfig outer = MakeExport("/data", {"10.0.0.0/8"});
  ExportConfig inner = MakeExport("/data/proj", {"10.1.0.0/16"});
  ExportConfig other = MakeExport("/other", {"0.0.0.0/0"});
  other.secure = true;
  ExportTable t({outer, inner, other});
  bool port_refused = false;
  const uint64_t both = 0b011;
  // In both networks: the nested export's rules apply.
  const Export* e = t.Choose(both, Addr("10.1.2.3", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data/proj");
  // Only in the outer network.
  e = t.Choose(both, Addr("10.2.0.1", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data");
  // Only in the inner network, handle handed out for the outer only: refused.
  ExportConfig inner_only_net = MakeExport("/data", {"10.9.0.0/16"});
  ExportTable t2({inner_only_net, inner});
  EXPECT_EQ(t2.Choose(0b01, Addr("10.1.2.3", 40000), false, &port_refused), nullptr);
  EXPECT_FALSE(port_refused);
  // A handle of no export the client may use.
  EXPECT_EQ(t.Choose(both, Addr("192.168.0.1", 40000), false, &port_refused), nullptr);
  EXPECT_FALSE(port_refused);
  // The secure export from an unprivileged port.
  EXPECT_EQ(t.Choose(0b100, Addr("192.168.0.1", 40000), false, &port_refused), nullptr);
  EXPECT_TRUE(port_refused);
  EXPECT_NE(t.Choose(0b100, Addr("192.168.0.1", 800), false, &port_refused), nullptr);
  EXPECT_FALSE(port_refused);
  // A secure nested export (root squashed inside it) is not left for the
  // export around it (root not squashed) by a caller from an unprivileged
  // port: refused, as a privileged caller would get the stricter rules.
  ExportConfig open_outer = MakeExport("/data", {"10.0.0.0/8"});
  open_outer.root_squash = false;
  ExportConfig secure_inner = MakeExport("/data/proj", {"10.0.0.0/8"});
  secure_inner.secure = true;
  ExportTable guarded({open_outer, secure_inner});
  EXPECT_EQ(guarded.Choose(0b11, Addr("10.1.2.3", 40000), false, &port_refused), nullptr);
  EXPECT_TRUE(port_refused);
  e = guarded.Choose(0b11, Addr("10.1.2.3", 800), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data/proj");
  e = guarded.Choose(0b01, Addr("10.1.2.3", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr) << "a handle of the outer export alone is the outer export's";
  EXPECT_EQ(e->config().path, "/data");
  // Nesting is the upstream's: an export of /srv/data/private mounted as
  // "/p" lies inside one of /srv/data mounted as "/data", though its path is
  // shorter. A handle of both takes the inner one's rules (read-only here).
  ExportConfig data = MakeExport("/data", {"10.0.0.0/8"});
  data.upstream_path = "/srv/data";
  ExportConfig priv = MakeExport("/p", {"10.0.0.0/8"});
  priv.upstream_path = "/srv/data/private";
  priv.read_only = true;
  ExportTable nested({data, priv});
  e = nested.Choose(0b11, Addr("10.1.2.3", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/p") << "the outer export's rules applied inside the inner one";
}

// Two exports of one upstream directory, one `secure` (or `tls =
// "required"`): a handle both handed out takes, for a caller the stricter
// one refuses, the other's rules (it could mount that one), not a refusal
// that depends on what other clients mounted.
TEST(ExportSecurity, OfTwoExportsOfOneDirectoryTheOneThatAdmitsTheCallerApplies) {
  ExportConfig plain = MakeExport("/data", {"10.0.0.0/8"});
  plain.upstream_path = "/srv/data";
  ExportConfig admin = MakeExport("/data-admin", {"10.0.0.0/8"});
  admin.upstream_path = "/srv/data";
  admin.secure = true;
  ExportConfig sealed = MakeExport("/data-sealed", {"10.0.0.0/8"});
  sealed.upstream_path = "/srv/data";
  sealed.tls = ExportTls::kRequired;
  ExportTable t({plain, admin, sealed});
  bool port_refused = true;
  const Export* e = t.Choose(0b011, Addr("10.1.2.3", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr) << "refused by the secure sibling's rules";
  EXPECT_EQ(e->config().path, "/data");
  EXPECT_FALSE(port_refused);
  e = t.Choose(0b011, Addr("10.1.2.3", 800), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data-admin") << "both admit it: the longer path";
  e = t.Choose(0b101, Addr("10.1.2.3", 40000), false, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data") << "plaintext given the TLS-only sibling's rules";
  e = t.Choose(0b101, Addr("10.1.2.3", 40000), true, &port_refused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->config().path, "/data-sealed");
  // The secure one alone still refuses the unprivileged port.
  EXPECT_EQ(t.Choose(0b010, Addr("10.1.2.3", 40000), false, &port_refused), nullptr);
  EXPECT_TRUE(port_refused);
}

TEST(ExportSecurity, ConfigKeys) {
  StatusOr<Config> c = ParseConfig(R"(
[server]
handle_store = "/var/lib/nfsedge/handles"
[[export]]
path = "/a"
clients = ["10.0.0.0/8"]
all_squash = true
secure = true
anon_uid = 99
[[export]]
path = "/b"
clients = ["10.0.0.0/8"]
)",
                                   "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server.handle_store, "/var/lib/nfsedge/handles");
  EXPECT_TRUE(c->exports[0].all_squash);
  EXPECT_TRUE(c->exports[0].secure);
  EXPECT_EQ(c->exports[0].anon_uid, 99u);
  EXPECT_FALSE(c->exports[1].all_squash);
  EXPECT_FALSE(c->exports[1].secure);
  EXPECT_TRUE(c->server.handle_store.size() > 0);

  StatusOr<Config> bad = ParseConfig(R"(
[server]
handle_store = "relative/dir"
[[export]]
path = "/a"
clients = ["10.0.0.0/8"]
secure = "yes"
)",
                                     "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("handle_store"), std::string::npos);
  EXPECT_NE(bad.status().message().find("secure"), std::string::npos);

  std::string many = "[server]\n";
  for (int i = 0; i <= static_cast<int>(kMaxExports); ++i) {
    many += "[[export]]\npath = \"/e" + std::to_string(i) + "\"\nclients = [\"10.0.0.0/8\"]\n";
  }
  StatusOr<Config> too_many = ParseConfig(many, "t.toml");
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("at most 64"), std::string::npos)
      << too_many.status().message();
}

}  // namespace
}  // namespace nfsedge
