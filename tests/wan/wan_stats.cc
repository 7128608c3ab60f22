#include "wan_stats.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "rpc_names.h"

namespace nfsedge::wan {

namespace {

// Appends `"key":` to `out`, after a comma unless `first`. Keys are ours: no escaping needed.
void Key(std::string* out, bool* first, const std::string& key) {
  if (!*first) out->push_back(',');
  *first = false;
  out->append("\"").append(key).append("\":");
}

void Field(std::string* out, bool* first, const std::string& key, uint64_t value) {
  Key(out, first, key);
  out->append(std::to_string(value));
}

std::string LinkJson(const LinkCounters& link) {
  std::string out = "{";
  bool first = true;
  Field(&out, &first, "bytes", link.bytes);
  Field(&out, &first, "pauses", link.pauses);
  Field(&out, &first, "max_backlog_bytes", link.max_backlog_bytes);
  out.push_back('}');
  return out;
}

}  // namespace

uint64_t WanStats::CallCount(uint32_t prog, uint32_t proc) const {
  uint64_t n = 0;
  for (const auto& [key, count] : calls) {
    if (std::get<0>(key) == prog && std::get<2>(key) == proc) n += count;
  }
  return n;
}

std::string StatsToJson(const WanStats& stats) {
  std::map<uint32_t, std::map<uint32_t, uint64_t>> by_number;
  std::map<std::string, uint64_t> by_name;
  for (const auto& [key, count] : stats.calls) {
    const auto& [prog, vers, proc] = key;
    by_number[prog][proc] += count;
    std::string name = RpcProcedureName(prog, vers, proc);
    if (!name.empty()) by_name[name] += count;
  }

  std::string out = "{";
  bool first = true;
  Field(&out, &first, "up_bytes", stats.up_bytes);
  Field(&out, &first, "down_bytes", stats.down_bytes);
  Field(&out, &first, "connections", stats.connections);
  Field(&out, &first, "replies", stats.replies);
  Key(&out, &first, "calls");
  out.push_back('{');
  bool first_prog = true;
  for (const auto& [prog, procs] : by_number) {
    Key(&out, &first_prog, std::to_string(prog));
    out.push_back('{');
    bool first_proc = true;
    for (const auto& [proc, count] : procs) Field(&out, &first_proc, std::to_string(proc), count);
    out.push_back('}');
  }
  out.push_back('}');
  Key(&out, &first, "calls_by_name");
  out.push_back('{');
  bool first_name = true;
  for (const auto& [name, count] : by_name) Field(&out, &first_name, name, count);
  out.push_back('}');
  Field(&out, &first, "connect_failures", stats.connect_failures);
  Field(&out, &first, "non_rpc_streams", stats.non_rpc_streams);
  Field(&out, &first, "malformed_records", stats.malformed_records);
  Key(&out, &first, "up_link");
  out.append(LinkJson(stats.up_link));
  Key(&out, &first, "down_link");
  out.append(LinkJson(stats.down_link));
  out.push_back('}');
  return out;
}

Status WriteStatsFile(const WanStats& stats, const std::string& path) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const std::string json = StatsToJson(stats) + "\n";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return Status::IOError(tmp + ": " + std::strerror(errno));
  bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  bool closed = std::fclose(f) == 0;
  if (!written || !closed) {
    std::remove(tmp.c_str());
    return Status::IOError(tmp + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status status = Status::IOError(path + ": " + std::strerror(errno));
    std::remove(tmp.c_str());
    return status;
  }
  return Status::OK();
}

}  // namespace nfsedge::wan
