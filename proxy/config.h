// Config: the typed, validated contents of nfsedge's TOML config file.
//
// Every field carries its documented default (docs/config.md; the example
// config, conf/nfsedge.example.toml, sets the packaged paths). LoadConfig
// rejects unknown keys, wrong types and bad values with "file:line: reason"
// for each problem found ("file: reason" for a file with no export).
//
// Thread-safety: plain values; immutable after load.
#ifndef NFSEDGE_PROXY_CONFIG_H_
#define NFSEDGE_PROXY_CONFIG_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/log.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace nfsedge {

enum class RpcbindMode { kAuto, kYes, kNo };

struct ServerConfig {
  std::string listen = "0.0.0.0";
  uint16_t nfs_port = 2049;
  uint16_t mount_port = 20048;
  RpcbindMode rpcbind = RpcbindMode::kAuto;
  uint32_t max_connections = 1024;
  // Connections from one client address at most; more are refused.
  uint32_t max_connections_per_client = 64;
  uint32_t max_calls_per_connection = 128;
  // Bytes of the call records the proxy holds (read, not yet answered),
  // over all connections, at most: beyond, connections with a call in
  // flight are not read until calls are answered.
  uint64_t max_held_call_bytes = 512ull << 20;
  // A connection with no call in flight and no traffic for this long is
  // closed (seconds; 0 = never).
  uint32_t idle_timeout_s = 900;
  // Finished non-idempotent calls kept for retransmissions (0 = no cache).
  uint32_t drc_entries = 4096;
  uint32_t max_record_size = 1114112;
  uint32_t max_handles = 1 << 20;
  // Directory of the persistent handle registry (RocksDB); empty = in memory
  // (clients must remount after a restart).
  std::string handle_store;
  uint32_t shutdown_grace = 10;  // seconds
  // RPC-over-TLS toward clients (docs/security.md): certificate and key
  // (PEM); both or neither. With tls_client_ca_file, clients that start TLS
  // must present a certificate from those CAs (mutual TLS).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
};

struct UpstreamConfig {
  std::string host = "127.0.0.1";
  uint16_t nfs_port = 2049;  // 0 = ask the upstream's rpcbind
  uint16_t mount_port = 0;
  uint32_t connections = 2;
  uint32_t max_in_flight = 128;
  uint32_t max_queued = 4096;
  uint32_t call_timeout_ms = 60000;
  uint32_t reconnect_min_ms = 100;
  uint32_t reconnect_max_ms = 5000;
  // The upstream is "out" (proxy/outage.h) when calls wait and no reply has
  // come for this long; it is back at its next reply.
  uint32_t outage_after_ms = 5000;
  bool privileged_port = true;
  // RPC-over-TLS (RFC 9289) toward the upstream: every connection is
  // upgraded, the server's certificate verified against tls_ca_file for
  // tls_server_name (default: host); never falls back to plaintext.
  bool tls = false;
  std::string tls_ca_file;
  std::string tls_server_name;
  std::string tls_cert_file;  // optional client certificate
  std::string tls_key_file;
};

// Per export: whether clients may (optional) or must (required) use TLS.
enum class ExportTls { kOff, kOptional, kRequired };

struct ExportConfig {
  std::string path;           // what clients mount
  std::string upstream_path;  // path on the upstream server
  std::vector<Network> clients;
  bool read_only = false;
  bool root_squash = true;
  // Every AUTH_SYS credential becomes anon_uid/anon_gid with no groups.
  bool all_squash = false;
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;
  // Calls from a source port >= 1024 are refused (Linux exports' `secure`).
  bool secure = false;
  // kRequired: calls over plaintext connections are refused (ACCES).
  ExportTls tls = ExportTls::kOff;
  // Attribute lifetimes in seconds, as a Linux client's mount options: a
  // cached answer is at most this old; 0/0 means always ask the upstream.
  uint32_t acregmin = 3;
  uint32_t acregmax = 60;
  uint32_t acdirmin = 30;
  uint32_t acdirmax = 60;
  // Write gathering (proxy/write_path.h): a stable write waits at most this
  // long for others to the same file; 0 = never waits.
  uint32_t gather_window_ms = 5;
  // UNSTABLE writes answered from the proxy's buffer (write-behind).
  bool write_behind = true;
  // Edge journal: writes answered once in the local journal ([write]
  // journal_dir), sent upstream afterwards (proxy/write_path.h).
  bool write_back = false;
  // While the upstream is out (proxy/outage.h), GETATTR, ACCESS, LOOKUP and
  // READ are answered from cached entries past their lifetime.
  bool serve_stale_on_outage = false;

  bool operator==(const ExportConfig&) const = default;
};

struct CacheConfig {
  uint32_t max_attr_entries = 1000000;
  uint32_t max_access_entries = 1000000;
  uint32_t max_name_entries = 1000000;
  // Directory listing pages (READDIRPLUS replies) kept, bytes; 0 = none.
  uint64_t max_dir_bytes = 64 << 20;
  // Symbolic links' targets (READLINK answers) kept, bytes; 0 = none.
  uint64_t max_link_bytes = 16 << 20;
  // Revalidate attributes that clients use this long before they expire
  // (refresh-ahead), milliseconds; 0 = off.
  uint32_t refresh_ahead_ms = 1000;

  // Data cache. Memory tier: bytes of file data kept in memory; 0 = no data
  // cache (READs are forwarded as is).
  uint64_t memory_bytes = 1ull << 30;
  // Block size of both tiers: a power of two, 4K..1M.
  uint64_t block_size = 64 << 10;
  // Disk tier (RocksDB) directory; empty = no disk tier.
  std::string disk_dir;
  uint64_t disk_bytes = 16ull << 30;
  // "all": every block fetched is also written to disk; "evicted": only
  // blocks evicted from memory are.
  std::string disk_policy = "all";
  uint32_t disk_threads = 2;
  // Upstream READ size; 0 = the server's FSINFO rtpref.
  uint64_t read_size = 0;
  // Read-ahead of one stream at most this far beyond the client; 0 = off.
  uint64_t readahead_max_bytes = 16 << 20;
  // Read-ahead fetches in flight at most.
  uint32_t readahead_fetches = 16;
  // Read-ahead cursors, shared by all files (8 at most per file).
  uint32_t readahead_cursors = 8192;
};

// Tree-walk prefetch (proxy/prefetcher.h).
struct PrefetchConfig {
  bool enabled = true;
  uint32_t max_in_flight = 64;
  uint32_t max_queue = 16384;
  uint32_t depth = 16;
  uint64_t small_file_bytes = 256 << 10;
  uint32_t walk_idle_ms = 5000;  // a walk without a client call for this long has stopped
};

// Upstream scheduler and congestion control (proxy/scheduler.h,
// proxy/congestion.h).
struct SchedulerConfig {
  uint32_t queue_delay_target_ms = 20;    // queueing delay allowed above the base RTT
  uint32_t base_rtt_window_s = 60;        // how long a minimum round trip stays the base
  uint32_t max_writes_in_flight = 4;      // WRITE calls upstream at most
  uint32_t background_share_percent = 10;  // bulk bytes background keeps while clients wait
  uint32_t max_queued = 4096;             // calls waiting in the scheduler at most
  uint32_t timeout_floor_ms = 1000;       // retransmission timeout bounds
  uint32_t timeout_ceiling_ms = 30000;
  bool pacing = true;                     // pace bulk bytes onto the upstream connection
};

// Write path buffers (proxy/write_path.h).
struct WriteConfig {
  uint64_t buffer_bytes = 256ull << 20;      // all files
  uint64_t file_buffer_bytes = 64ull << 20;  // one file
  uint64_t write_size = 0;                   // upstream WRITE size; 0 = FSINFO wtpref
  uint32_t flush_delay_ms = 50;              // partial WRITEs and idle COMMITs after this
  uint32_t max_background = 16;              // write-behind WRITEs in flight
  // The edge journal of write_back exports (cache/write_journal.h).
  std::string journal_dir = "/var/lib/nfsedge/journal";
  // Journaled data the upstream keeps refusing is given up this long after
  // the first refusal in a row; 0 = never.
  uint32_t journal_give_up_s = 25;
};

// Metrics endpoint for Prometheus (proxy/metrics_http.h).
struct MetricsConfig {
  std::string listen;  // "host:port" ("[v6]:port"); empty = off
};

// Local control socket for the nfsedge subcommands (proxy/control.h).
struct ControlConfig {
  std::string socket = "/run/nfsedge/control.sock";  // empty = off
  uint32_t socket_mode = 0600;
  // `nfsedge warm`: directory levels walked, and the largest file whose
  // data is read into the cache.
  uint32_t warm_depth = 64;
  uint64_t warm_file_bytes = 64ull << 20;
  uint32_t warm_in_flight = 16;
};

struct Config {
  std::string source;  // file name, for messages
  ServerConfig server;
  UpstreamConfig upstream;
  CacheConfig cache;
  PrefetchConfig prefetch;
  SchedulerConfig scheduler;
  WriteConfig write;
  LogLevel log_level = LogLevel::kInfo;
  LogOptions log;  // [log] format, output and repeat limits (level above)
  MetricsConfig metrics;
  ControlConfig control;
  std::vector<ExportConfig> exports;
};

// Parses and validates TOML `text`; `source` names it in error messages.
StatusOr<Config> ParseConfig(std::string_view text, const std::string& source);
// Reads and parses the file at `path`.
StatusOr<Config> LoadConfig(const std::string& path);

// Returns every key the parser accepts, by table ("server", "export", ...;
// "" for the top level), as found by parsing with every table present.
std::map<std::string, std::set<std::string>> ConfigKeys();

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONFIG_H_
