#include "harness/proxy_process.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "harness/files.h"

#ifndef NFSEDGE_PROXY_BINARY
#define NFSEDGE_PROXY_BINARY "nfsedge"
#endif

namespace nfsedge::harness {
namespace {

// A TOML basic string.
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string QuoteList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + Quote(v[i]);
  return out + "]";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

// The [control] socket path. A Unix socket path must fit sun_path (nfsedge
// refuses 100 bytes or more), and a work directory deep in a build tree can
// be longer than that: such a proxy gets a short, work-dir-specific path in
// /tmp instead.
std::string ControlSocketPath(const ProxyProcess::Options& o) {
  if (o.control_socket == "none") return std::string();
  if (!o.control_socket.empty()) return o.control_socket;
  std::string path = o.work_dir + "/control.sock";
  if (path.size() < 100) return path;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/tmp/nfsedge-ctl-%zx.sock", std::hash<std::string>{}(path));
  return buf;
}

// Whether `line` is a table header: "[log]" (a comment may follow), with
// `*table` = "log", or an element of an array of tables ("[[export]]"),
// with `*table` empty: each opens a new element and is never folded.
bool TableHeader(const std::string& line, std::string* table) {
  table->clear();
  size_t b = line.find_first_not_of(" \t");
  if (b == std::string::npos || line[b] != '[') return false;
  if (line.compare(b, 2, "[[") == 0) return true;
  size_t e = line.find(']', b);
  if (e == std::string::npos) return false;
  *table = line.substr(b + 1, e - b - 1);
  table->erase(0, table->find_first_not_of(" \t"));
  table->erase(table->find_last_not_of(" \t") + 1);
  return true;
}

}  // namespace

std::pair<int, std::string> RunNfsedge(const std::string& args) {
  std::string cmd = ProxyProcess::DefaultBinary() + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string ProxyProcess::DefaultBinary() {
  const char* env = std::getenv("NFSEDGE_BINARY");
  return env && *env ? env : NFSEDGE_PROXY_BINARY;
}

std::string ProxyProcess::FoldTables(const std::string& toml) {
  struct Section {
    std::string table;  // empty: lines before the first header, or an array element
    std::vector<std::string> lines;
    bool folded = false;
  };
  std::vector<Section> sections(1);
  std::istringstream in(toml);
  for (std::string line; std::getline(in, line);) {
    std::string table;
    if (TableHeader(line, &table)) sections.push_back(Section{table, {}, false});
    sections.back().lines.push_back(line);
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].table.empty()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (sections[j].folded || sections[j].table != sections[i].table) continue;
      // Its keys join the first table of that name (its header dropped).
      sections[j].lines.insert(sections[j].lines.end(), sections[i].lines.begin() + 1,
                               sections[i].lines.end());
      sections[i].folded = true;
      break;
    }
  }
  std::string out;
  for (const Section& s : sections) {
    if (s.folded) continue;
    for (const std::string& l : s.lines) out += l + "\n";
  }
  return out;
}

std::string ProxyProcess::RenderConfig(const Options& o) {
  std::ostringstream c;
  c << "# Written by the nfsedge test harness.\n"
    << "[server]\n"
    << "listen = " << Quote(o.listen) << "\n"
    << "nfs_port = " << o.nfs_port << "\n"
    << "mount_port = " << o.mount_port << "\n"
    << "rpcbind = " << Quote(o.rpcbind) << "\n";
  if (o.max_record_size) c << "max_record_size = " << *o.max_record_size << "\n";
  c << o.extra_server_toml << "\n"
    << "[upstream]\n"
    << "host = " << Quote(o.upstream_host) << "\n"
    << "nfs_port = " << o.upstream_nfs_port << "\n"
    << "mount_port = " << o.upstream_mount_port << "\n"
    << "privileged_port = " << Bool(o.privileged_port) << "\n"
    << o.extra_upstream_toml << "\n"
    << "[log]\n"
    << "level = " << Quote(o.log_level) << "\n\n"
    << "[control]\n"
    << "socket = "
    << Quote(ControlSocketPath(o))
    << "\n\n"
    << o.extra_toml << "\n";
  for (const ProxyExport& e : o.exports) {
    c << "[[export]]\n"
      << "path = " << Quote(e.path) << "\n"
      << "upstream_path = " << Quote(e.upstream_path.empty() ? e.path : e.upstream_path) << "\n"
      << "clients = " << QuoteList(e.clients) << "\n"
      << "access = " << Quote(e.access) << "\n"
      << "root_squash = " << Bool(e.root_squash) << "\n"
      << "anon_uid = " << e.anon_uid << "\n"
      << "anon_gid = " << e.anon_gid << "\n"
      << e.extra_toml << "\n";
  }
  return FoldTables(c.str());
}

std::string ProxyProcess::control_socket_path() const { return ControlSocketPath(options_); }

StatusOr<std::unique_ptr<ProxyProcess>> ProxyProcess::Start(const Options& in) {
  if (in.work_dir.empty()) return Status::Error("ProxyProcess: work_dir is required");
  Options o = in;
  if (o.binary.empty()) o.binary = DefaultBinary();
  if (access(o.binary.c_str(), X_OK) != 0) {
    return Status::Error("nfsedge binary not found at " + o.binary +
                         " (build the `nfsedge` target or set NFSEDGE_BINARY)");
  }
  Status s = MakeDirs(o.work_dir);
  if (!s.ok()) return s;
  const std::string conf = o.work_dir + "/nfsedge.toml";
  s = WriteFile(conf, RenderConfig(o));
  if (!s.ok()) return s;

  std::vector<std::string> argv = {o.binary, "--config", conf};
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  auto p = Subprocess::Start(argv, o.work_dir + "/nfsedge.log");
  if (!p.ok()) return p.status();
  std::unique_ptr<ProxyProcess> proxy(new ProxyProcess(o, std::move(p).value()));

  bool died = false;
  bool ready = WaitUntil(
      [&] {
        if (!proxy->process_->IsRunning()) return died = true;
        return TcpConnectable(o.listen, o.nfs_port) && TcpConnectable(o.listen, o.mount_port);
      },
      o.start_timeout);
  if (died || !ready) {
    std::string why =
        died ? "nfsedge exited: " + proxy->Stop().ToString() : "nfsedge did not listen in time";
    std::string tail = proxy->LogTail();
    proxy->Stop();
    return Status::Error(why + "\n--- " + conf + " ---\n" + ReadFile(conf) + "--- log ---\n" +
                         tail);
  }
  return proxy;
}

}  // namespace nfsedge::harness
