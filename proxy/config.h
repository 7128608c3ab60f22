// Config: the typed, validated contents of nfsedge's TOML config file.
//
// Every field carries its documented default (conf/nfsedge.example.toml and
// docs/configuration.md). LoadConfig rejects unknown keys, wrong types and
// bad values with "file:line: reason" for each problem found.
//
// Thread-safety: plain values; immutable after load.
#ifndef NFSEDGE_PROXY_CONFIG_H_
#define NFSEDGE_PROXY_CONFIG_H_

#include <cstdint>
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
  uint32_t max_calls_per_connection = 128;
  // Finished non-idempotent calls kept for retransmissions (0 = no cache).
  uint32_t drc_entries = 4096;
  uint32_t max_record_size = 1114112;
  uint32_t max_handles = 1 << 20;
  uint32_t shutdown_grace = 10;  // seconds
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
  bool privileged_port = true;
};

struct ExportConfig {
  std::string path;           // what clients mount
  std::string upstream_path;  // path on the upstream server
  std::vector<Network> clients;
  bool read_only = false;
  bool root_squash = true;
  uint32_t anon_uid = 65534;
  uint32_t anon_gid = 65534;
  // Attribute lifetimes in seconds, as a Linux client's mount options: a
  // cached answer is at most this old; 0/0 means always ask the upstream.
  uint32_t acregmin = 3;
  uint32_t acregmax = 60;
  uint32_t acdirmin = 30;
  uint32_t acdirmax = 60;
};

struct CacheConfig {
  uint32_t max_attr_entries = 1000000;
  uint32_t max_access_entries = 1000000;
  uint32_t max_name_entries = 1000000;
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
  uint32_t max_in_flight = 16;
  uint32_t max_queue = 16384;
  uint32_t depth = 16;
  uint64_t small_file_bytes = 256 << 10;
};

struct Config {
  std::string source;  // file name, for messages
  ServerConfig server;
  UpstreamConfig upstream;
  CacheConfig cache;
  PrefetchConfig prefetch;
  LogLevel log_level = LogLevel::kInfo;
  std::vector<ExportConfig> exports;
};

// Parses and validates TOML `text`; `source` names it in error messages.
StatusOr<Config> ParseConfig(std::string_view text, const std::string& source);
// Reads and parses the file at `path`.
StatusOr<Config> LoadConfig(const std::string& path);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_CONFIG_H_
