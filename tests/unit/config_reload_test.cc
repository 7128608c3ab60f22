// Config reload: every key is either live or needs a restart, docs/config.md
// says which, and a reload plan takes the live keys and keeps the others.
#include "proxy/config_reload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace nfsedge {
namespace {

const char* kBase = R"(
[[export]]
path = "/d"
clients = ["10.0.0.0/8"]
)";

Config Parse(const std::string& extra) {
  StatusOr<Config> c = ParseConfig(std::string(kBase) + extra, "t.toml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : Config{};
}

bool Has(const std::vector<std::string>& v, const std::string& k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}

// Returns the `table.key` names docs/config.md lists under "## Reload", by
// the "### " heading they are listed under.
std::map<std::string, std::set<std::string>> DocumentedReloadKeys() {
  std::ifstream in(std::string(NFSEDGE_SOURCE_DIR) + "/docs/config.md");
  std::map<std::string, std::set<std::string>> out;
  std::regex key("`([a-z_]+\\.[a-z_0-9]+)`");
  std::string line, section;
  bool in_reload = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_reload = line == "## Reload";
      section.clear();
    } else if (in_reload && line.rfind("### ", 0) == 0) {
      section = line.substr(4);
    } else if (in_reload && !section.empty()) {
      for (std::sregex_iterator k(line.begin(), line.end(), key), end; k != end; ++k) {
        out[section].insert((*k)[1]);
      }
    }
  }
  return out;
}

TEST(ConfigReload, EveryKeyTheParserAcceptsIsLiveOrNeedsARestart) {
  std::set<std::string> classified;
  for (const ReloadKey& k : ReloadKeys()) {
    EXPECT_TRUE(classified.insert(k.name).second) << k.name << " is listed twice";
  }
  std::set<std::string> accepted;
  for (const auto& [table, keys] : ConfigKeys()) {
    if (table.empty() || table == "export") continue;  // tables; [[export]] is applied whole
    for (const std::string& k : keys) accepted.insert(table + "." + k);
  }
  ASSERT_GT(accepted.size(), 50u);
  for (const std::string& k : accepted) {
    EXPECT_TRUE(classified.count(k))
        << k << " is accepted by the parser but not classified in ReloadKeys() "
        << "(proxy/config_reload.cc): a reload would ignore it silently";
  }
  for (const std::string& k : classified) {
    EXPECT_TRUE(accepted.count(k)) << k << " is classified but not accepted by the parser";
  }
}

TEST(ConfigReload, DocsListTheLiveAndTheRestartKeys) {
  std::map<std::string, std::set<std::string>> documented = DocumentedReloadKeys();
  std::set<std::string> live, restart;
  for (const ReloadKey& k : ReloadKeys()) {
    (k.reload == KeyReload::kRestart ? restart : live).insert(k.name);
  }
  EXPECT_EQ(documented["Applied at once"], live)
      << "docs/config.md, \"## Reload\", \"### Applied at once\"";
  EXPECT_EQ(documented["Need a restart"], restart)
      << "docs/config.md, \"## Reload\", \"### Need a restart\"";
}

TEST(ConfigReload, PlanTakesLiveKeysAndKeepsRestartKeys) {
  const Config in_force = Parse(R"(
[cache]
max_attr_entries = 1000
memory_bytes = "64M"
[upstream]
call_timeout_ms = 6000
)");
  Config loaded = Parse(R"(
[cache]
max_attr_entries = 10
memory_bytes = "32M"
disk_dir = "/var/cache/x"
[upstream]
call_timeout_ms = 9000
host = "10.1.2.3"
[log]
level = "debug"
)");
  loaded.server.listen = "::1";
  loaded.exports[0].acregmax = 7;
  ReloadPlan plan = PlanReload(in_force, loaded);

  EXPECT_EQ(plan.next.cache.max_attr_entries, 10u);
  EXPECT_EQ(plan.next.cache.memory_bytes, 32u << 20);
  EXPECT_EQ(plan.next.upstream.call_timeout_ms, 9000u);
  EXPECT_EQ(plan.next.log_level, LogLevel::kDebug);
  EXPECT_EQ(plan.next.exports[0].acregmax, 7u) << "[[export]] tables are taken whole";
  EXPECT_TRUE(Has(plan.applied, "cache.max_attr_entries"));
  EXPECT_TRUE(Has(plan.applied, "cache.memory_bytes"));
  EXPECT_TRUE(Has(plan.applied, "upstream.call_timeout_ms"));
  EXPECT_TRUE(Has(plan.applied, "log.level"));

  EXPECT_EQ(plan.next.server.listen, "0.0.0.0");
  EXPECT_EQ(plan.next.upstream.host, "127.0.0.1");
  EXPECT_EQ(plan.next.cache.disk_dir, "");
  EXPECT_EQ(plan.restart,
            (std::vector<std::string>{"server.listen", "upstream.host", "cache.disk_dir"}));
  EXPECT_EQ(plan.applied.size(), 4u) << "unchanged keys are in neither list";
}

TEST(ConfigReload, TheDataCacheGoesOnOrOffOnlyAtARestart) {
  const Config on = Parse("[cache]\nmemory_bytes = \"64M\"\n");
  const Config off = Parse("[cache]\nmemory_bytes = 0\n");
  ReloadPlan to_off = PlanReload(on, off);
  EXPECT_EQ(to_off.restart, std::vector<std::string>{"cache.memory_bytes"});
  EXPECT_EQ(to_off.next.cache.memory_bytes, 64u << 20);
  ReloadPlan to_on = PlanReload(off, on);
  EXPECT_EQ(to_on.restart, std::vector<std::string>{"cache.memory_bytes"});
  EXPECT_EQ(to_on.next.cache.memory_bytes, 0u);
}

TEST(ConfigReload, WriteBackWaitsForTheRestartThatOpensTheJournal) {
  const std::string two = R"(
[[export]]
path = "/e"
clients = ["10.0.0.0/8"]
)";
  const Config none = Parse("[write]\njournal_dir = \"/j\"\n" + two);
  Config on = none;
  on.exports[1].write_back = true;
  ReloadPlan to_on = PlanReload(none, on, /*journal_open=*/false);
  EXPECT_FALSE(to_on.next.exports[1].write_back) << "no journal was opened at start";
  EXPECT_EQ(to_on.restart, std::vector<std::string>{"[[export]] #2 write_back"});
  // A journal left by an earlier run was opened at start: it takes writes.
  EXPECT_TRUE(PlanReload(none, on, /*journal_open=*/true).next.exports[1].write_back);

  // With the journal open, another export may join, and both may leave.
  Config both = on;
  both.exports[0].write_back = true;
  ReloadPlan join = PlanReload(on, both, /*journal_open=*/true);
  EXPECT_TRUE(join.next.exports[0].write_back);
  EXPECT_TRUE(join.restart.empty());
  ReloadPlan leave = PlanReload(both, none, /*journal_open=*/true);
  EXPECT_FALSE(leave.next.exports[0].write_back);
  EXPECT_FALSE(leave.next.exports[1].write_back);
  EXPECT_TRUE(leave.restart.empty());
}

TEST(ConfigReload, AnUnchangedFileChangesNothing) {
  const Config c = Parse("[scheduler]\nmax_writes_in_flight = 9\n");
  ReloadPlan plan = PlanReload(c, c);
  EXPECT_TRUE(plan.applied.empty());
  EXPECT_TRUE(plan.restart.empty());
  EXPECT_EQ(plan.next.scheduler.max_writes_in_flight, 9u);
}

TEST(ConfigReload, OptionsFollowTheConfig) {
  const Config c = Parse(R"(
[server]
max_connections_per_client = 3
idle_timeout_s = 7
max_calls_per_connection = 5
max_record_size = 70000
[upstream]
max_in_flight = 5
reconnect_max_ms = 900
call_timeout_ms = 7000
[scheduler]
timeout_floor_ms = 250
max_writes_in_flight = 2
)");
  EXPECT_EQ(ServerLimitsOf(c.server).max_connections_per_client, 3u);
  EXPECT_EQ(ServerLimitsOf(c.server).idle_timeout, std::chrono::seconds(7));
  EXPECT_EQ(ServerLimitsOf(c.server).max_calls_per_connection, 5u);
  EXPECT_EQ(ServerLimitsOf(c.server).max_record_size, 70000u);
  EXPECT_EQ(ClientLimitsOf(c.upstream).max_in_flight, 5u);
  EXPECT_EQ(ClientLimitsOf(c.upstream).reconnect_max, std::chrono::milliseconds(900));
  const SchedulerOptions so = SchedulerOptionsOf(c.scheduler, c.upstream);
  EXPECT_EQ(so.congestion.rto_floor, std::chrono::milliseconds(250));
  EXPECT_EQ(so.max_writes_in_flight, 2u);
  EXPECT_EQ(so.queue_timeout, std::chrono::milliseconds(7000));
}

}  // namespace
}  // namespace nfsedge
