#include "proxy/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace nfsedge {
namespace {

constexpr const char* kMinimal = R"(
[upstream]
host = "10.1.2.3"

[[export]]
path = "/data"
clients = ["10.0.0.0/8"]
)";

TEST(Config, MinimalGetsDocumentedDefaults) {
  StatusOr<Config> c = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server.listen, "0.0.0.0");
  EXPECT_EQ(c->server.nfs_port, 2049);
  EXPECT_EQ(c->server.mount_port, 20048);
  EXPECT_EQ(c->server.rpcbind, RpcbindMode::kAuto);
  EXPECT_EQ(c->server.max_record_size, 1114112u);
  EXPECT_EQ(c->upstream.host, "10.1.2.3");
  EXPECT_EQ(c->upstream.nfs_port, 2049);
  EXPECT_EQ(c->upstream.mount_port, 0);
  EXPECT_EQ(c->upstream.connections, 2u);
  EXPECT_TRUE(c->upstream.privileged_port);
  ASSERT_EQ(c->exports.size(), 1u);
  EXPECT_EQ(c->exports[0].upstream_path, "/data");
  EXPECT_FALSE(c->exports[0].read_only);
  EXPECT_TRUE(c->exports[0].root_squash);
  EXPECT_EQ(c->exports[0].anon_uid, 65534u);
  EXPECT_EQ(c->log_level, LogLevel::kInfo);
}

TEST(Config, ExampleConfigIsValid) {
  std::ifstream in(std::string(NFSEDGE_SOURCE_DIR) + "/conf/nfsedge.example.toml");
  ASSERT_TRUE(in);
  StatusOr<Config> c = LoadConfig(std::string(NFSEDGE_SOURCE_DIR) + "/conf/nfsedge.example.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->exports[0].upstream_path, "/srv/data");
  EXPECT_EQ(c->exports[0].clients.size(), 3u);
}

TEST(Config, OutageKeys) {
  StatusOr<Config> d = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->upstream.outage_after_ms, 5000u);
  EXPECT_FALSE(d->exports[0].serve_stale_on_outage);
  const std::string text = R"(
[upstream]
host = "10.1.2.3"
outage_after_ms = 1500

[[export]]
path = "/data"
clients = ["10.0.0.0/8"]
serve_stale_on_outage = true
)";
  StatusOr<Config> c = ParseConfig(text, "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->upstream.outage_after_ms, 1500u);
  EXPECT_TRUE(c->exports[0].serve_stale_on_outage);
  const std::string minimal(kMinimal);
  const std::string export_table = minimal.substr(minimal.find("[[export]]"));
  StatusOr<Config> low =
      ParseConfig("[upstream]\noutage_after_ms = 50\n" + export_table, "t.toml");
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.status().message().find("outage_after_ms"), std::string::npos)
      << low.status().message();
  StatusOr<Config> bad = ParseConfig(std::string(kMinimal) + "serve_stale_on_outage = \"yes\"\n",
                                     "t.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("serve_stale_on_outage"), std::string::npos)
      << bad.status().message();
}

// Returns the error message for `text`, which must not parse.
std::string ErrorOf(const std::string& text) {
  StatusOr<Config> c = ParseConfig(text, "bad.toml");
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.status().message();
}

TEST(Config, DataCacheKeysTakeByteCountsWithSuffixes) {
  std::string text = std::string(kMinimal) + R"(
[cache]
memory_bytes = "512M"
block_size = 131072
disk_dir = "/var/cache/nfsedge"
disk_bytes = "2G"
disk_policy = "evicted"
readahead_max_bytes = "8m"
max_link_bytes = "2M"
)";
  StatusOr<Config> c = ParseConfig(text, "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cache.max_link_bytes, 2ull << 20);
  EXPECT_EQ(c->cache.memory_bytes, 512ull << 20);
  EXPECT_EQ(c->cache.block_size, 128ull << 10);
  EXPECT_EQ(c->cache.disk_dir, "/var/cache/nfsedge");
  EXPECT_EQ(c->cache.disk_bytes, 2ull << 30);
  EXPECT_EQ(c->cache.disk_policy, "evicted");
  EXPECT_EQ(c->cache.readahead_max_bytes, 8ull << 20);
  StatusOr<Config> d = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cache.memory_bytes, 1ull << 30);
  EXPECT_EQ(d->cache.block_size, 64ull << 10);
  EXPECT_TRUE(d->cache.disk_dir.empty());
  EXPECT_EQ(d->cache.max_link_bytes, 16ull << 20);
}

TEST(Config, BadDataCacheValuesAreReported) {
  std::string text = std::string(kMinimal) + R"(
[cache]
memory_bytes = "lots"
block_size = 100000
disk_dir = "relative/dir"
disk_policy = "sometimes"
readahead_max_bytes = "3X"
max_link_bytes = -1
)";
  StatusOr<Config> c = ParseConfig(text, "t.toml");
  ASSERT_FALSE(c.ok());
  const std::string m = c.status().message();
  EXPECT_NE(m.find("memory_bytes: must be a byte count"), std::string::npos) << m;
  EXPECT_NE(m.find("block_size: must be a power of two"), std::string::npos) << m;
  EXPECT_NE(m.find("disk_dir: must be an absolute path"), std::string::npos) << m;
  EXPECT_NE(m.find("disk_policy: must be"), std::string::npos) << m;
  EXPECT_NE(m.find("readahead_max_bytes: must be a byte count"), std::string::npos) << m;
  EXPECT_NE(m.find("max_link_bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("t.toml:"), std::string::npos) << m;
}

TEST(Config, TheJournalHasADirectoryOfItsOwn) {
  const std::string base = std::string(kMinimal) +
                           "[server]\nhandle_store = \"/var/lib/nfsedge/handles\"\n"
                           "[cache]\ndisk_dir = \"/var/cache/nfsedge\"\n";
  for (const char* j : {"/var/cache/nfsedge/", "/var/lib/nfsedge/./handles"}) {
    const std::string msg = ErrorOf(base + "[write]\njournal_dir = \"" + j + "\"\n");
    EXPECT_NE(msg.find("journal_dir: must not be the directory of cache.disk_dir or "
                       "server.handle_store"),
              std::string::npos)
        << j << ": " << msg;
  }
  // The default journal_dir counts too.
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[cache]\ndisk_dir = \"/var/lib/nfsedge/journal\"\n")
                .find("journal_dir: must not be the directory"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + "[write]\njournal_dir = \"journal\"\n")
                .find("journal_dir: must be an absolute path"),
            std::string::npos);
  StatusOr<Config> ok =
      ParseConfig(base + "[write]\njournal_dir = \"/var/lib/nfsedge/journal\"\n", "t.toml");
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// One directory under two names (here a symbolic link; a bind mount is the
// same) is one directory: the cache would rebuild the journal it found.
TEST(Config, TheJournalUnderAnotherNameIsStillTheJournal) {
  char tmpl[] = "/tmp/nfsedge-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::filesystem::path root = tmpl;
  std::filesystem::create_directory(root / "journal");
  std::filesystem::create_directory_symlink(root / "journal", root / "cache");
  const std::string msg = ErrorOf(std::string(kMinimal) + "[cache]\ndisk_dir = \"" +
                                  (root / "cache").string() + "\"\n[write]\njournal_dir = \"" +
                                  (root / "journal").string() + "\"\n");
  EXPECT_NE(msg.find("journal_dir: must not be the directory of cache.disk_dir"),
            std::string::npos)
      << msg;
  std::filesystem::remove_all(root);
}

TEST(Config, TheHandleStoreAndTheDiskCacheHaveADirectoryEach) {
  const std::string msg = ErrorOf(std::string(kMinimal) +
                                  "[server]\nhandle_store = \"/var/lib/nfsedge/store\"\n"
                                  "[cache]\ndisk_dir = \"/var/lib/nfsedge/./store/\"\n");
  EXPECT_NE(msg.find(":9: [server] handle_store: must not be the directory of cache.disk_dir"),
            std::string::npos)
      << msg;
}

// Whole-file checks name the line too: the first export beyond the 64, the
// journal_dir (or, for the default one, the key naming its directory).
TEST(Config, WholeFileChecksNameALine) {
  std::string many = "[upstream]\nhost = \"h\"\n";  // lines 1-2
  for (int i = 0; i < 65; ++i) {  // export i at line 3 + 3 * i
    many += "[[export]]\npath = \"/d" + std::to_string(i) + "\"\nclients = [\"10.0.0.0/8\"]\n";
  }
  std::string msg = ErrorOf(many);
  EXPECT_NE(msg.find("bad.toml:195: 65 [[export]] tables: at most 64"), std::string::npos) << msg;

  const std::string cache = "[cache]\ndisk_dir = \"/var/lib/nfsedge/journal\"\n";  // lines 8-9
  msg = ErrorOf(std::string(kMinimal) + cache);
  EXPECT_NE(msg.find("bad.toml:9: [write] journal_dir: must not"), std::string::npos) << msg;
  msg = ErrorOf(std::string(kMinimal) + cache + "[write]\njournal_dir = \"/var/lib/nfsedge/journal\"\n");
  EXPECT_NE(msg.find("bad.toml:11: [write] journal_dir: must not"), std::string::npos) << msg;
  msg = ErrorOf(std::string(kMinimal) + "[server]\nhandle_store = \"/var/lib/nfsedge/journal\"\n");
  EXPECT_NE(msg.find("bad.toml:9: [write] journal_dir: must not"), std::string::npos) << msg;
  // A journal_dir of the wrong type leaves the default, which is what clashes.
  msg = ErrorOf(std::string(kMinimal) + cache + "[write]\njournal_dir = 5\n");
  EXPECT_NE(msg.find("bad.toml:9: [write] journal_dir: must not"), std::string::npos) << msg;
}

// A path that is no config file says why: not there, a directory (read as
// an empty file it would be "no [[export]] table"), a FIFO (whose open would
// wait for a writer) or a device that never ends.
TEST(Config, AFileThatCannotBeReadSaysWhy) {
  StatusOr<Config> c = LoadConfig("/nonexistent/nfsedge.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), std::string("/nonexistent/nfsedge.toml: cannot open config "
                                              "file: ") + std::strerror(ENOENT));
  c = LoadConfig(NFSEDGE_SOURCE_DIR);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            std::string(NFSEDGE_SOURCE_DIR) + ": is a directory, not a config file");
  char dir[] = "/tmp/nfsedge-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo.toml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  c = LoadConfig(fifo);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), fifo + ": is not a regular file");
  unlink(fifo.c_str());
  rmdir(dir);
  c = LoadConfig("/dev/zero");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "/dev/zero: is not a regular file");
}

TEST(Config, UnknownKeyIsReportedWithFileAndLine) {
  std::string msg = ErrorOf(std::string(kMinimal) + "\n[server]\nnfs_prot = 2049\n");
  EXPECT_NE(msg.find("bad.toml:10:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'nfs_prot'"), std::string::npos) << msg;
}

TEST(Config, UnknownTableIsReported) {
  std::string msg = ErrorOf(std::string(kMinimal) + "\n[cahce]\nsize = 1\n");
  EXPECT_NE(msg.find("unknown top-level key 'cahce'"), std::string::npos) << msg;
}

TEST(Config, BadValuesAreReported) {
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nnfs_port = 70000\n").find("between 0 and 65535"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nnfs_port = \"2049\"\n").find("integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nrpcbind = \"maybe\"\n").find("rpcbind"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nlisten = \"nowhere\"\n").find("listen"),
            std::string::npos);
  std::string exp = "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.1\"]\n";
  EXPECT_NE(ErrorOf("[upstream]\nconnections = 0\n" + exp).find("upstream] connections"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[upstream]\nreconnect_min_ms = 50\nreconnect_max_ms = 10\n" + exp)
                .find("reconnect_max_ms"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[log]\nlevel = \"loud\"\n").find("level"),
            std::string::npos);
}

TEST(Config, BadExportsAreReported) {
  std::string base = "[upstream]\nhost = \"h\"\n";
  EXPECT_NE(ErrorOf(base).find("no [[export]]"), std::string::npos);
  EXPECT_NE(ErrorOf(base + "[[export]]\nclients = [\"1.2.3.4\"]\n").find("missing required key 'path'"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + "[[export]]\npath = \"/d\"\n").find("clients"), std::string::npos);
  EXPECT_NE(ErrorOf(base + "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.0/33\"]\n")
                .find("bad prefix"),
            std::string::npos);
  // A signed prefix is no prefix ("-0" would be 0: every host).
  for (const char* net : {"10.0.0.0/-0", "10.0.0.0/+8", "10.0.0.0/"}) {
    EXPECT_NE(ErrorOf(base + "[[export]]\npath = \"/d\"\nclients = [\"" + net + "\"]\n")
                  .find("bad prefix"),
              std::string::npos)
        << net;
  }
  EXPECT_NE(ErrorOf(base + "[[export]]\npath = \"d/../x\"\nclients = [\"10.0.0.1\"]\n")
                .find("absolute path"),
            std::string::npos);
  EXPECT_NE(ErrorOf(base + "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.1\"]\naccess = \"rx\"\n")
                .find("access"),
            std::string::npos);
  std::string twice = base + "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.1\"]\n" +
                      "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.1\"]\n";
  EXPECT_NE(ErrorOf(twice).find("exported twice"), std::string::npos);
}

TEST(Config, SyntaxErrorHasLine) {
  std::string msg = ErrorOf("[server]\nlisten = \n");
  EXPECT_NE(msg.find("bad.toml:2:"), std::string::npos) << msg;
}

TEST(Config, AllErrorsAreListedAtOnce) {
  std::string msg = ErrorOf(std::string(kMinimal) + "[server]\nfoo = 1\nbar = 2\n");
  EXPECT_NE(msg.find("'foo'"), std::string::npos);
  EXPECT_NE(msg.find("'bar'"), std::string::npos);
}

}  // namespace
TEST(Config, ConnectionLimitsHaveDefaultsParseAndAreChecked) {
  StatusOr<Config> d = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->server.max_connections_per_client, 64u);
  EXPECT_EQ(d->server.idle_timeout_s, 900u);
  StatusOr<Config> c = ParseConfig(
      std::string(kMinimal) + "[server]\nmax_connections_per_client = 3\nidle_timeout_s = 0\n",
      "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->server.max_connections_per_client, 3u);
  EXPECT_EQ(c->server.idle_timeout_s, 0u);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nmax_connections_per_client = 0\n")
                .find("max_connections_per_client"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[server]\nidle_timeout_s = -1\n").find("idle_timeout_s"),
            std::string::npos);
}

// An outage needs a call to wait outage_after_ms: one that ends at its
// deadline first never shows it.
TEST(Config, AnOutageIsSeenBeforeACallsDeadline) {
  const std::string msg = ErrorOf(
      "[upstream]\nhost = \"10.1.2.3\"\ncall_timeout_ms = 1000\noutage_after_ms = 5000\n"
      "[[export]]\npath = \"/data\"\nclients = [\"10.0.0.0/8\"]\n");
  EXPECT_NE(msg.find("outage_after_ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("call_timeout_ms (1000)"), std::string::npos) << msg;
  // The least call_timeout_ms is above the least outage_after_ms (100).
  const std::string low = ErrorOf(
      "[upstream]\nhost = \"10.1.2.3\"\ncall_timeout_ms = 100\noutage_after_ms = 100\n"
      "[[export]]\npath = \"/data\"\nclients = [\"10.0.0.0/8\"]\n");
  EXPECT_NE(low.find("call_timeout_ms: must be"), std::string::npos) << low;
}

// No share for background work would leave a client COMMIT waiting for a
// write-behind flush as long as other clients' data keeps coming.
TEST(Config, BackgroundWorkKeepsAShare) {
  StatusOr<Config> d = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->scheduler.background_share_percent, 10u);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "[scheduler]\nbackground_share_percent = 0\n")
                .find("background_share_percent"),
            std::string::npos);
  EXPECT_TRUE(
      ParseConfig(std::string(kMinimal) + "[scheduler]\nbackground_share_percent = 1\n", "t.toml")
          .ok());
}

TEST(Config, TlsKeysDefaultOffAndParse) {
  StatusOr<Config> d = ParseConfig(kMinimal, "t.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->upstream.tls);
  EXPECT_TRUE(d->server.tls_cert_file.empty());
  EXPECT_EQ(d->exports[0].tls, ExportTls::kOff);
  StatusOr<Config> c = ParseConfig(R"(
[server]
tls_cert_file = "/c.pem"
tls_key_file = "/k.pem"
tls_client_ca_file = "/ca.pem"
[upstream]
host = "gw"
tls = true
tls_ca_file = "/ca.pem"
tls_server_name = "gw.example.com"
[[export]]
path = "/data"
clients = ["10.0.0.0/8"]
tls = "required"
[[export]]
path = "/other"
clients = ["10.0.0.0/8"]
tls = "optional"
)",
                                   "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->upstream.tls);
  EXPECT_EQ(c->upstream.tls_server_name, "gw.example.com");
  EXPECT_EQ(c->server.tls_client_ca_file, "/ca.pem");
  EXPECT_EQ(c->exports[0].tls, ExportTls::kRequired);
  EXPECT_EQ(c->exports[1].tls, ExportTls::kOptional);
}

TEST(Config, TlsMistakesAreReported) {
  EXPECT_NE(ErrorOf("[upstream]\ntls = true\n[[export]]\npath = \"/d\"\nclients = [\"10.0.0.0/8\"]\n")
                .find("tls_ca_file"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[server]\ntls_cert_file = \"/c\"\n[[export]]\npath = \"/d\"\nclients = "
                    "[\"10.0.0.0/8\"]\n")
                .find("go together"),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "tls = \"maybe\"\n").find("\"optional\""),
            std::string::npos);
  EXPECT_NE(ErrorOf(std::string(kMinimal) + "tls = \"required\"\n").find("tls_cert_file"),
            std::string::npos);
  // The upstream's TLS settings without tls = true: the WAN would be
  // plaintext while the file reads as protected.
  for (const char* key : {"tls_ca_file", "tls_server_name"}) {
    const std::string e = ErrorOf(std::string("[upstream]\nhost = \"h\"\n") + key +
                                  " = \"x\"\n[[export]]\npath = \"/d\"\nclients = [\"10.0.0.0/8\"]\n");
    EXPECT_NE(e.find(key), std::string::npos) << e;
    EXPECT_NE(e.find("tls = false"), std::string::npos) << e;
  }
}

}  // namespace nfsedge
