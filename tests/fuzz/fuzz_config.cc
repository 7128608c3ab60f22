// Fuzz target: the config parser (ParseConfig, proxy/config.h) on arbitrary
// text. It must answer every text with a Config or an error, never crash,
// and a Config it accepts must hold the properties its validation promises.
#include <string>

#include "proxy/config.h"
#include "proxy/exports.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  StatusOr<Config> c = ParseConfig(AsView(data, size), "fuzz.toml");
  if (!c.ok()) {
    FUZZ_CHECK(!c.status().message().empty());
    return 0;
  }
  FUZZ_CHECK(!c->exports.empty());
  for (const ExportConfig& e : c->exports) {
    FUZZ_CHECK(IsCleanAbsolutePath(e.path));
    FUZZ_CHECK(IsCleanAbsolutePath(e.upstream_path));
    FUZZ_CHECK(!e.clients.empty());
    FUZZ_CHECK(e.acregmin <= e.acregmax && e.acdirmin <= e.acdirmax);
  }
  FUZZ_CHECK(!c->upstream.host.empty());
  FUZZ_CHECK(c->upstream.reconnect_min_ms <= c->upstream.reconnect_max_ms);
  const CacheConfig& k = c->cache;
  FUZZ_CHECK(k.block_size >= 4096 && k.block_size <= (1u << 20));
  FUZZ_CHECK((k.block_size & (k.block_size - 1)) == 0);
  FUZZ_CHECK(k.disk_policy == "all" || k.disk_policy == "evicted");
  FUZZ_CHECK(k.disk_dir.empty() || k.disk_dir[0] == '/');
  FUZZ_CHECK(c->server.max_record_size >= 8192);
  return 0;
}
