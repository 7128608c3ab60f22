#include "proxy/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "cache/handle_registry.h"
#include "proxy/config_reader.h"
#include "proxy/exports.h"
#include "proxy/metrics_http.h"

namespace nfsedge {

namespace {

constexpr uint64_t kMaxU32 = 0xffffffffu;
constexpr size_t kMaxConfigBytes = 4u << 20;  // a config file of 64 exports is some KiB

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
  r.Uint("max_connections_per_client", 1, 1000000, &s->max_connections_per_client);
  r.Uint("max_calls_per_connection", 1, 65536, &s->max_calls_per_connection);
  r.Bytes("max_held_call_bytes", 1 << 20, 1ull << 40, &s->max_held_call_bytes);
  r.Uint("idle_timeout_s", 0, 7 * 24 * 3600, &s->idle_timeout_s);
  r.Uint("drc_entries", 0, 1 << 20, &s->drc_entries);
  r.Uint("max_record_size", 8192, 64u << 20, &s->max_record_size);
  r.Uint("max_handles", 1, kMaxU32, &s->max_handles);
  r.String("handle_store", &s->handle_store);
  if (!s->handle_store.empty() && s->handle_store[0] != '/') {
    r.Error("handle_store", "must be an absolute path");
  }
  r.Uint("shutdown_grace", 0, 3600, &s->shutdown_grace);
  r.String("tls_cert_file", &s->tls_cert_file);
  r.String("tls_key_file", &s->tls_key_file);
  r.String("tls_client_ca_file", &s->tls_client_ca_file);
  if (s->tls_cert_file.empty() != s->tls_key_file.empty()) {
    r.Error(s->tls_cert_file.empty() ? "tls_key_file" : "tls_cert_file",
            "tls_cert_file and tls_key_file go together");
  }
  if (!s->tls_client_ca_file.empty() && s->tls_cert_file.empty()) {
    r.Error("tls_client_ca_file", "needs tls_cert_file and tls_key_file");
  }
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
  r.Uint("call_timeout_ms", 101, 3600000, &u->call_timeout_ms);
  r.Uint("reconnect_min_ms", 1, 600000, &u->reconnect_min_ms);
  r.Uint("reconnect_max_ms", 1, 600000, &u->reconnect_max_ms);
  r.Uint("outage_after_ms", 100, 3600000, &u->outage_after_ms);
  r.Bool("privileged_port", &u->privileged_port);
  r.Bool("tls", &u->tls);
  r.String("tls_ca_file", &u->tls_ca_file);
  r.String("tls_server_name", &u->tls_server_name);
  r.String("tls_cert_file", &u->tls_cert_file);
  r.String("tls_key_file", &u->tls_key_file);
  if (u->tls && u->tls_ca_file.empty()) {
    r.Error("tls_ca_file", "required with tls = true (the CAs the upstream's certificate is checked against)");
  }
  // TLS settings without `tls = true` would leave the WAN in plaintext
  // while the file reads as if it were protected.
  if (!u->tls) {
    for (const auto& [key, value] :
         {std::pair<const char*, const std::string*>{"tls_ca_file", &u->tls_ca_file},
          {"tls_server_name", &u->tls_server_name},
          {"tls_cert_file", &u->tls_cert_file},
          {"tls_key_file", &u->tls_key_file}}) {
      if (!value->empty()) {
        r.Error(key, "set while tls = false: the upstream connections would be plaintext (set "
                     "tls = true, or remove it)");
        break;
      }
    }
  }
  if (u->tls_cert_file.empty() != u->tls_key_file.empty()) {
    r.Error(u->tls_cert_file.empty() ? "tls_key_file" : "tls_cert_file",
            "tls_cert_file and tls_key_file go together");
  }
  if (u->host.empty()) r.Error("host", "must not be empty");
  // A call ends at its deadline before an outage could be seen: one client
  // calling one at a time would never make the upstream out.
  if (u->outage_after_ms >= u->call_timeout_ms) {
    r.Error("outage_after_ms", "(" + std::to_string(u->outage_after_ms) +
                                   ", default 5000) must be below call_timeout_ms (" +
                                   std::to_string(u->call_timeout_ms) +
                                   "): calls would end at their deadline before an outage is "
                                   "seen; lower outage_after_ms or raise call_timeout_ms");
  }
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
  r.Bool("all_squash", &e->all_squash);
  r.Bool("secure", &e->secure);
  std::string tls = "off";
  r.String("tls", &tls);
  if (tls == "optional") {
    e->tls = ExportTls::kOptional;
  } else if (tls == "required") {
    e->tls = ExportTls::kRequired;
  } else if (tls != "off") {
    r.Error("tls", "must be \"off\", \"optional\" or \"required\"");
  }
  r.Uint("anon_uid", 0, kMaxU32, &e->anon_uid);
  r.Uint("anon_gid", 0, kMaxU32, &e->anon_gid);
  r.Uint("acregmin", 0, 86400, &e->acregmin);
  r.Uint("acregmax", 0, 86400, &e->acregmax);
  r.Uint("acdirmin", 0, 86400, &e->acdirmin);
  r.Uint("acdirmax", 0, 86400, &e->acdirmax);
  if (e->acregmin > e->acregmax) r.Error("acregmin", "must not exceed acregmax");
  if (e->acdirmin > e->acdirmax) r.Error("acdirmin", "must not exceed acdirmax");
  r.Uint("gather_window_ms", 0, 1000, &e->gather_window_ms);
  r.Bool("write_behind", &e->write_behind);
  r.Bool("write_back", &e->write_back);
  r.Bool("serve_stale_on_outage", &e->serve_stale_on_outage);
  if (r.Has("path") && !IsCleanAbsolutePath(e->path)) {
    r.Error("path", "must be an absolute path without '.', '..', '//' or a trailing '/'");
  }
  if (r.Has("upstream_path") && !IsCleanAbsolutePath(e->upstream_path)) {
    r.Error("upstream_path", "must be an absolute path without '.', '..', '//' or a trailing '/'");
  }
  r.RejectUnknownKeys();
}

// [log] keys besides the level: format, output and repeat limits.
void ReadLogOutput(TableReader& r, LogOptions* o) {
  std::string format = "text";
  r.String("format", &format);
  if (auto f = ParseLogFormat(format)) {
    o->format = *f;
  } else {
    r.Error("format", "must be \"text\", \"kv\" or \"json\"");
  }
  std::string output = "stderr";
  r.String("output", &output);
  if (auto out = ParseLogOutput(output)) {
    o->output = *out;
  } else {
    r.Error("output", "must be \"stderr\" or \"syslog\"");
  }
  r.Uint("repeat_burst", 0, 1000000, &o->repeat_burst);
  r.Uint("repeat_window_s", 1, 86400, &o->repeat_window_s);
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
    // ConfigKeys(): every table is read, present or not, to list its keys.
    static const toml::table kAbsent;
    if (KeyCatalog* keys = KeyCatalogScope::Current()) {
      (*keys)[""].insert(key);
      if (!n) return &kAbsent;
    }
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
    r.Bytes("max_dir_bytes", 0, 1ull << 40, &c.cache.max_dir_bytes);
    r.Bytes("max_link_bytes", 0, 1ull << 40, &c.cache.max_link_bytes);
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
  if (const toml::table* sc = table("scheduler")) {
    SchedulerConfig& q = c.scheduler;
    TableReader r(*sc, source, "[scheduler]", &errors);
    r.Uint("queue_delay_target_ms", 1, 10000, &q.queue_delay_target_ms);
    r.Uint("base_rtt_window_s", 1, 86400, &q.base_rtt_window_s);
    r.Uint("max_writes_in_flight", 1, 4096, &q.max_writes_in_flight);
    r.Uint("background_share_percent", 1, 90, &q.background_share_percent);
    r.Uint("max_queued", 1, 1000000, &q.max_queued);
    r.Uint("timeout_floor_ms", 10, 3600000, &q.timeout_floor_ms);
    r.Uint("timeout_ceiling_ms", 10, 3600000, &q.timeout_ceiling_ms);
    r.Bool("pacing", &q.pacing);
    if (q.timeout_ceiling_ms < q.timeout_floor_ms) {
      r.Error("timeout_ceiling_ms", "must not be below timeout_floor_ms");
    }
    r.RejectUnknownKeys();
  }
  if (const toml::table* pf = table("prefetch")) {
    TableReader r(*pf, source, "[prefetch]", &errors);
    r.Bool("enabled", &c.prefetch.enabled);
    r.Uint("max_in_flight", 1, 1024, &c.prefetch.max_in_flight);
    r.Uint("max_queue", 16, 1 << 24, &c.prefetch.max_queue);
    r.Uint("depth", 0, 1024, &c.prefetch.depth);
    r.Bytes("small_file_bytes", 0, 1 << 20, &c.prefetch.small_file_bytes);
    r.Uint("walk_idle_ms", 100, 600000, &c.prefetch.walk_idle_ms);
    r.RejectUnknownKeys();
  }
  if (const toml::table* w = table("write")) {
    TableReader r(*w, source, "[write]", &errors);
    r.Bytes("buffer_bytes", 1 << 20, 1ull << 40, &c.write.buffer_bytes);
    r.Bytes("file_buffer_bytes", 1 << 20, 1ull << 40, &c.write.file_buffer_bytes);
    r.Bytes("write_size", 0, 1 << 20, &c.write.write_size);
    r.Uint("flush_delay_ms", 1, 60000, &c.write.flush_delay_ms);
    r.Uint("max_background", 1, 1024, &c.write.max_background);
    r.String("journal_dir", &c.write.journal_dir);
    r.Uint("journal_give_up_s", 0, 7 * 24 * 3600, &c.write.journal_give_up_s);
    if (!c.write.journal_dir.empty() && c.write.journal_dir[0] != '/') {
      r.Error("journal_dir", "must be an absolute path");
    }
    if (c.write.file_buffer_bytes > c.write.buffer_bytes) {
      r.Error("file_buffer_bytes", "must not exceed buffer_bytes");
    }
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
    ReadLogOutput(r, &c.log);
    r.RejectUnknownKeys();
  }
  if (const toml::table* m = table("metrics")) {
    TableReader r(*m, source, "[metrics]", &errors);
    r.String("listen", &c.metrics.listen);
    std::string host;
    uint16_t port = 0;
    if (!c.metrics.listen.empty()) {
      Status hp = SplitHostPort(c.metrics.listen, &host, &port);
      if (!hp.ok()) r.Error("listen", hp.message());
    }
    r.RejectUnknownKeys();
  }
  if (const toml::table* ctl = table("control")) {
    TableReader r(*ctl, source, "[control]", &errors);
    r.String("socket", &c.control.socket);
    if (!c.control.socket.empty() && c.control.socket[0] != '/') {
      r.Error("socket", "must be an absolute path (or empty: no control socket)");
    }
    if (c.control.socket.size() >= 100) r.Error("socket", "must be shorter than 100 bytes");
    r.Uint("socket_mode", 0, 0777, &c.control.socket_mode);
    r.Uint("warm_depth", 0, 1024, &c.control.warm_depth);
    r.Bytes("warm_file_bytes", 0, 1ull << 40, &c.control.warm_file_bytes);
    r.Uint("warm_in_flight", 1, 1024, &c.control.warm_in_flight);
    r.RejectUnknownKeys();
  }
  if (KeyCatalog* keys = KeyCatalogScope::Current()) (*keys)[""].insert("export");
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
      if (ec.write_back && c.write.journal_dir.empty()) {
        errors.push_back(source + ":" + std::to_string(e.source().begin.line) + ": [[export]] #" +
                         std::to_string(n) + " write_back: needs [write] journal_dir");
      }
      if (ec.tls != ExportTls::kOff && c.server.tls_cert_file.empty()) {
        errors.push_back(source + ":" + std::to_string(e.source().begin.line) + ": [[export]] #" +
                         std::to_string(n) +
                         " tls: needs [server] tls_cert_file and tls_key_file");
      }
      c.exports.push_back(std::move(ec));
    }
    if (c.exports.size() > kMaxExports) {
      const toml::node& first_extra = *exports->as_array()->get(kMaxExports);
      errors.push_back(source + ":" + std::to_string(first_extra.source().begin.line) + ": " +
                       std::to_string(c.exports.size()) + " [[export]] tables: at most " +
                       std::to_string(kMaxExports) + " are supported");
    }
  }
  // The journal (its default included) is never a cache's directory: a
  // cache store may be rebuilt, the journal never is.
  const auto dir = [](const std::string& p) {
    std::filesystem::path n = std::filesystem::path(p).lexically_normal();
    return n.has_filename() || n == n.root_path() ? n : n.parent_path();  // "/a/b/" is "/a/b"
  };
  // Named alike, or one directory under two names (a symbolic link, a bind
  // mount) once both exist.
  const auto same_place = [&](const std::string& a, const std::string& b) {
    if (a.empty() || b.empty()) return false;
    std::error_code ec;
    return dir(a) == dir(b) || std::filesystem::equivalent(dir(a), dir(b), ec);
  };
  const auto same_dir = [&](const std::string& other) {
    return same_place(other, c.write.journal_dir);
  };
  if (same_dir(c.cache.disk_dir) || same_dir(c.server.handle_store)) {
    // At the journal_dir line, or (the default journal_dir) at the key
    // that names the same directory.
    const toml::node* at = root.at_path("write.journal_dir").node();
    if (!at || !at->is_string()) {  // absent, or not a string: the default counts
      at = root.at_path(same_dir(c.cache.disk_dir) ? "cache.disk_dir" : "server.handle_store")
               .node();
    }
    errors.push_back(source + (at ? ":" + std::to_string(at->source().begin.line) : "") +
                     ": [write] journal_dir: must not be the directory of "
                     "cache.disk_dir or server.handle_store (" +
                     c.write.journal_dir + ")");
  }
  // Two stores of their own: in one directory the handle store, opened
  // first, would take the data cache's for a foreign one and wipe it, and
  // the cache could not open at all.
  if (same_place(c.cache.disk_dir, c.server.handle_store)) {
    const toml::node* at = root.at_path("server.handle_store").node();
    errors.push_back(source + (at ? ":" + std::to_string(at->source().begin.line) : "") +
                     ": [server] handle_store: must not be the directory of cache.disk_dir (" +
                     c.server.handle_store + ")");
  }
  // Keys the top level may hold; anything else is a typo worth reporting.
  for (const auto& [k, v] : root) {
    std::string key(k.str());
    if (key != "server" && key != "upstream" && key != "cache" && key != "prefetch" && key != "log" &&
        key != "write" && key != "scheduler" &&
        key != "metrics" && key != "control" &&
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

std::map<std::string, std::set<std::string>> ConfigKeys() {
  KeyCatalog catalog;
  KeyCatalogScope scope(&catalog);
  // Every table is read even when absent (see `table` above); one export.
  StatusOr<Config> ignored = ParseConfig("[[export]]\npath = \"/x\"\nclients = [\"::1\"]\n", "keys");
  (void)ignored.ok();
  return catalog;
}

StatusOr<Config> LoadConfig(const std::string& path) {
  // A regular file only, and a bounded one: a FIFO would block the start
  // (or ExecStartPre) until a writer came, /dev/zero would never end.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return InvalidArgument(path + ": cannot open config file: " + std::strerror(errno));
  }
  const auto fail = [&](const std::string& why) {
    close(fd);
    return InvalidArgument(path + ": " + why);
  };
  struct stat st {};
  if (fstat(fd, &st) != 0) return fail(std::string("cannot read config file: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail("is a directory, not a config file");
  if (!S_ISREG(st.st_mode)) return fail("is not a regular file");
  if (st.st_size > static_cast<off_t>(kMaxConfigBytes)) {
    return fail("config file larger than " + std::to_string(kMaxConfigBytes >> 20) + " MiB");
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(std::string("cannot read config file: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxConfigBytes) {
      return fail("config file larger than " + std::to_string(kMaxConfigBytes >> 20) + " MiB");
    }
  }
  close(fd);
  return ParseConfig(text, path);
}

}  // namespace nfsedge
