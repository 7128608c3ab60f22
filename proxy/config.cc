#include "proxy/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "proxy/config_reader.h"
#include "proxy/exports.h"

namespace nfsedge {

namespace {

constexpr uint64_t kMaxU32 = 0xffffffffu;

void ReadServer(const toml::table& t, const std::string& src, ServerConfig* s,
                std::vector<std::string>* errors) {
  TableReader r(t, src, "[server]", errors);
  r.String("listen", &s->listen);
  r.Port("nfs_port", true, &s->nfs_port);
  r.Port("mount_port", true, &s->mount_port);
  std::string rpcbind = "auto";
  r.String("rpcbind", &rpcbind);
  if (rpcbind == "auto") {
    s->rpcbind = RpcbindMode::kAuto;
  } else if (rpcbind == "yes") {
    s->rpcbind = RpcbindMode::kYes;
  } else if (rpcbind == "no") {
    s->rpcbind = RpcbindMode::kNo;
  } else {
    r.Error("rpcbind", "must be \"auto\", \"yes\" or \"no\"");
  }
  r.Uint("max_connections", 1, 1000000, &s->max_connections);
  r.Uint("max_calls_per_connection", 1, 65536, &s->max_calls_per_connection);
  r.Uint("drc_entries", 0, 1 << 20, &s->drc_entries);
  r.Uint("max_record_size", 8192, 64u << 20, &s->max_record_size);
  r.Uint("max_handles", 1, kMaxU32, &s->max_handles);
  r.Uint("shutdown_grace", 0, 3600, &s->shutdown_grace);
  if (Network::Parse(s->listen).ok() == false || s->listen.find('/') != std::string::npos) {
    r.Error("listen", "must be a numeric IPv4 or IPv6 address (got '" + s->listen + "')");
  }
  r.RejectUnknownKeys();
}

void ReadUpstream(const toml::table& t, const std::string& src, UpstreamConfig* u,
                  std::vector<std::string>* errors) {
  TableReader r(t, src, "[upstream]", errors);
  r.String("host", &u->host);
  r.Port("nfs_port", true, &u->nfs_port);
  r.Port("mount_port", true, &u->mount_port);
  r.Uint("connections", 1, 64, &u->connections);
  r.Uint("max_in_flight", 1, 65536, &u->max_in_flight);
  r.Uint("max_queued", 1, 1000000, &u->max_queued);
  r.Uint("call_timeout_ms", 100, 3600000, &u->call_timeout_ms);
  r.Uint("reconnect_min_ms", 1, 600000, &u->reconnect_min_ms);
  r.Uint("reconnect_max_ms", 1, 600000, &u->reconnect_max_ms);
  r.Bool("privileged_port", &u->privileged_port);
  if (u->host.empty()) r.Error("host", "must not be empty");
  if (u->reconnect_max_ms < u->reconnect_min_ms) {
    r.Error("reconnect_max_ms", "must not be below reconnect_min_ms");
  }
  r.RejectUnknownKeys();
}

void ReadExport(const toml::table& t, const std::string& src, int n, ExportConfig* e,
                std::vector<std::string>* errors) {
  TableReader r(t, src, "[[export]] #" + std::to_string(n), errors);
  if (!r.Has("path")) r.Error(nullptr, "missing required key 'path'");
  r.String("path", &e->path);
  e->upstream_path = e->path;
  r.String("upstream_path", &e->upstream_path);
  std::vector<std::string> clients;
  if (!r.Has("clients")) r.Error(nullptr, "missing required key 'clients' (client networks)");
  r.StringArray("clients", &clients);
  for (const auto& c : clients) {
    StatusOr<Network> net = Network::Parse(c);
    if (!net.ok()) {
      r.Error("clients", net.status().message());
    } else {
      e->clients.push_back(*net);
    }
  }
  if (r.Has("clients") && clients.empty()) r.Error("clients", "must list at least one network");
  std::string access = "rw";
  r.String("access", &access);
  if (access == "ro") {
    e->read_only = true;
  } else if (access != "rw") {
    r.Error("access", "must be \"rw\" or \"ro\"");
  }
  r.Bool("root_squash", &e->root_squash);
  r.Uint("anon_uid", 0, kMaxU32, &e->anon_uid);
  r.Uint("anon_gid", 0, kMaxU32, &e->anon_gid);
  r.Uint("acregmin", 0, 86400, &e->acregmin);
  r.Uint("acregmax", 0, 86400, &e->acregmax);
  r.Uint("acdirmin", 0, 86400, &e->acdirmin);
  r.Uint("acdirmax", 0, 86400, &e->acdirmax);
  if (e->acregmin > e->acregmax) r.Error("acregmin", "must not exceed acregmax");
  if (e->acdirmin > e->acdirmax) r.Error("acdirmin", "must not exceed acdirmax");
  if (r.Has("path") && !IsCleanAbsolutePath(e->path)) {
    r.Error("path", "must be an absolute path without '.', '..', '//' or a trailing '/'");
  }
  if (r.Has("upstream_path") && !IsCleanAbsolutePath(e->upstream_path)) {
    r.Error("upstream_path", "must be an absolute path without '.', '..', '//' or a trailing '/'");
  }
  r.RejectUnknownKeys();
}

}  // namespace

StatusOr<Config> ParseConfig(std::string_view text, const std::string& source) {
  Config c;
  c.source = source;
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(source + ":" + std::to_string(e.source().begin.line) + ": " +
                           std::string(e.description()));
  }
  std::vector<std::string> errors;
  TableReader top(root, source, "top level", &errors);
  auto table = [&](const char* key) -> const toml::table* {
    const toml::node* n = root.get(key);
    if (n && !n->is_table()) top.Error(key, "must be a table ([" + std::string(key) + "])");
    return n ? n->as_table() : nullptr;
  };
  static const toml::table kEmpty;
  const toml::table* server = table("server");
  ReadServer(server ? *server : kEmpty, source, &c.server, &errors);
  const toml::table* upstream = table("upstream");
  ReadUpstream(upstream ? *upstream : kEmpty, source, &c.upstream, &errors);
  if (const toml::table* cache = table("cache")) {
    TableReader r(*cache, source, "[cache]", &errors);
    r.Uint("max_attr_entries", 0, kMaxU32, &c.cache.max_attr_entries);
    r.Uint("max_access_entries", 0, kMaxU32, &c.cache.max_access_entries);
    r.Uint("max_name_entries", 0, kMaxU32, &c.cache.max_name_entries);
    r.Uint("refresh_ahead_ms", 0, 3600000, &c.cache.refresh_ahead_ms);
    r.Bytes("memory_bytes", 0, 1ull << 40, &c.cache.memory_bytes);
    r.Bytes("block_size", 4096, 1 << 20, &c.cache.block_size);
    if ((c.cache.block_size & (c.cache.block_size - 1)) != 0) {
      r.Error("block_size", "must be a power of two");
    }
    r.String("disk_dir", &c.cache.disk_dir);
    if (!c.cache.disk_dir.empty() && c.cache.disk_dir[0] != '/') {
      r.Error("disk_dir", "must be an absolute path");
    }
    r.Bytes("disk_bytes", 1 << 20, 1ull << 50, &c.cache.disk_bytes);
    r.String("disk_policy", &c.cache.disk_policy);
    if (c.cache.disk_policy != "all" && c.cache.disk_policy != "evicted") {
      r.Error("disk_policy", "must be \"all\" or \"evicted\"");
    }
    r.Uint("disk_threads", 1, 64, &c.cache.disk_threads);
    r.Bytes("read_size", 0, 1 << 20, &c.cache.read_size);
    r.Bytes("readahead_max_bytes", 0, 1ull << 30, &c.cache.readahead_max_bytes);
    r.Uint("readahead_fetches", 1, 1024, &c.cache.readahead_fetches);
    r.Uint("readahead_cursors", 16, 1 << 24, &c.cache.readahead_cursors);
    r.RejectUnknownKeys();
  }
  if (const toml::table* pf = table("prefetch")) {
    TableReader r(*pf, source, "[prefetch]", &errors);
    r.Bool("enabled", &c.prefetch.enabled);
    r.Uint("max_in_flight", 1, 1024, &c.prefetch.max_in_flight);
    r.Uint("max_queue", 16, 1 << 24, &c.prefetch.max_queue);
    r.Uint("depth", 0, 1024, &c.prefetch.depth);
    r.Bytes("small_file_bytes", 0, 1 << 20, &c.prefetch.small_file_bytes);
    r.RejectUnknownKeys();
  }
  if (const toml::table* log = table("log")) {
    TableReader r(*log, source, "[log]", &errors);
    std::string level = "info";
    r.String("level", &level);
    if (auto l = ParseLogLevel(level)) {
      c.log_level = *l;
    } else {
      r.Error("level", "must be one of error, warn, info, debug, trace");
    }
    r.RejectUnknownKeys();
  }
  const toml::node* exports = root.get("export");
  if (!exports) {
    errors.push_back(source + ": no [[export]] table: nothing to serve");
  } else if (!exports->is_array_of_tables()) {
    top.Error("export", "must be an array of tables ([[export]])");
  } else {
    int n = 0;
    std::set<std::string> paths;
    for (const toml::node& e : *exports->as_array()) {
      ExportConfig ec;
      ReadExport(*e.as_table(), source, ++n, &ec, &errors);
      if (!ec.path.empty() && !paths.insert(ec.path).second) {
        errors.push_back(source + ":" + std::to_string(e.source().begin.line) + ": [[export]] #" +
                         std::to_string(n) + " path: '" + ec.path + "' is exported twice");
      }
      c.exports.push_back(std::move(ec));
    }
  }
  // Keys the top level may hold; anything else is a typo worth reporting.
  for (const auto& [k, v] : root) {
    std::string key(k.str());
    if (key != "server" && key != "upstream" && key != "cache" && key != "prefetch" && key != "log" &&
        key != "export") {
      errors.push_back(source + ":" + std::to_string(k.source().begin.line) +
                       ": unknown top-level key '" + key + "'");
    }
  }
  if (!errors.empty()) {
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "\n") + e;
    return InvalidArgument(msg);
  }
  return c;
}

StatusOr<Config> LoadConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(path + ": cannot open config file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

}  // namespace nfsedge
