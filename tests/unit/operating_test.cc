// Operating nfsedge: the config reference documents exactly the keys the
// parser accepts; log line formats and repeat limits; the service manager
// notification datagram; the control socket protocol and its protection.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "proxy/config.h"
#include "proxy/config_reader.h"
#include "proxy/control.h"
#include "proxy/daemon.h"
#include "proxy/service_notify.h"
#include "rpc/log.h"
#include "test_loop.h"

namespace nfsedge {
namespace {

// Returns the keys docs/config.md documents, by table: rows "| `key` |" (or
// "| `key1`, `key2` |") under headings "## `[table]`" or "## `[[table]]`".
std::map<std::string, std::set<std::string>> DocumentedKeys(const std::string& file) {
  std::ifstream in(file);
  std::map<std::string, std::set<std::string>> out;
  std::regex heading(R"(^##+ .*`\[+([a-z_]+)\]+`)");
  // The first cell holds one key or several ("`acregmin`, `acregmax`").
  std::regex row(R"(^\| ((`[a-z_0-9]+`(, )?)+) \|)");
  std::regex key("`([a-z_0-9]+)`");
  std::string table, line;
  bool in_table = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, heading)) {
      table = m[1];
      in_table = true;
      out[""].insert(table);
    } else if (line.rfind("## ", 0) == 0) {
      in_table = false;
    } else if (in_table && std::regex_search(line, m, row)) {
      const std::string cell = m[1];
      for (std::sregex_iterator k(cell.begin(), cell.end(), key), end; k != end; ++k) {
        out[table].insert((*k)[1]);
      }
    }
  }
  return out;
}

std::string Join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& k : s) out += (out.empty() ? "" : ", ") + k;
  return out;
}

TEST(ConfigReference, DocumentsEveryKeyTheParserAcceptsAndNoOther) {
  auto accepted = ConfigKeys();
  auto documented = DocumentedKeys(std::string(NFSEDGE_SOURCE_DIR) + "/docs/config.md");
  ASSERT_FALSE(documented.empty()) << "docs/config.md has no key tables";
  ASSERT_GE(accepted[""].size(), 6u) << "the parser lists its tables";
  ASSERT_GE(accepted["server"].size(), 5u) << "the parser lists [server] keys";
  std::set<std::string> tables;
  for (const auto& [t, k] : accepted) tables.insert(t);
  for (const auto& [t, k] : documented) tables.insert(t);
  for (const std::string& t : tables) {
    std::set<std::string> missing, extra;
    for (const auto& k : accepted[t]) {
      if (!documented[t].count(k)) missing.insert(k);
    }
    for (const auto& k : documented[t]) {
      if (!accepted[t].count(k)) extra.insert(k);
    }
    const std::string where = t.empty() ? "top-level tables" : "[" + t + "]";
    EXPECT_TRUE(missing.empty()) << where << ": accepted by the parser but not in docs/config.md: "
                                 << Join(missing);
    EXPECT_TRUE(extra.empty()) << where << ": in docs/config.md but not accepted by the parser: "
                               << Join(extra);
  }
}

// The example config shows every key the parser accepts, set or commented
// out ("# key = value"), under its table.
TEST(ConfigReference, TheExampleConfigShowsEveryKey) {
  std::ifstream in(std::string(NFSEDGE_SOURCE_DIR) + "/conf/nfsedge.example.toml");
  ASSERT_TRUE(in);
  std::regex table(R"(^#? *\[+([a-z_]+)\]+ *(#.*)?$)");
  std::regex key(R"(^#? *([a-z][a-z_0-9]*) = )");
  std::map<std::string, std::set<std::string>> shown;
  std::string t, line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, table)) {
      t = m[1];
      shown[""].insert(t);
    } else if (std::regex_search(line, m, key)) {
      shown[t].insert(m[1]);
    }
  }
  for (const auto& [tab, keys] : ConfigKeys()) {
    std::set<std::string> missing;
    for (const auto& k : keys) {
      if (!shown[tab].count(k)) missing.insert(k);
    }
    EXPECT_TRUE(missing.empty()) << (tab.empty() ? "tables" : "[" + tab + "]")
                                 << ": not in conf/nfsedge.example.toml: " << Join(missing);
  }
}

TEST(ConfigReference, KeyCatalogIsEmptyOutsideAScope) {
  EXPECT_EQ(KeyCatalogScope::Current(), nullptr);
  EXPECT_TRUE(ConfigKeys()["metrics"].count("listen"));
  EXPECT_EQ(KeyCatalogScope::Current(), nullptr);
}

TEST(OperatingConfig, NewTablesParseAndValidate) {
  const std::string base = "[[export]]\npath = \"/d\"\nclients = [\"10.0.0.0/8\"]\n";
  StatusOr<Config> c = ParseConfig(base + R"(
[metrics]
listen = "127.0.0.1:9567"
[control]
socket = "/run/x.sock"
socket_mode = 0o660
[log]
format = "json"
output = "syslog"
repeat_burst = 5
)",
                                   "t.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->metrics.listen, "127.0.0.1:9567");
  EXPECT_EQ(c->control.socket, "/run/x.sock");
  EXPECT_EQ(c->control.socket_mode, 0660u);
  EXPECT_EQ(c->log.format, LogFormat::kJson);
  EXPECT_EQ(c->log.output, LogOutput::kSyslog);
  EXPECT_EQ(c->log.repeat_burst, 5u);
  StatusOr<Config> d = ParseConfig(base, "t.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->metrics.listen, "") << "metrics are off by default";
  EXPECT_EQ(d->control.socket_mode, 0600u);
  for (const char* bad : {"[metrics]\nlisten = \"9567\"\n", "[metrics]\nlisten = \"host:1\"\n",
                          "[metrics]\nlisten = \"1.2.3.4:70000\"\n",
                          "[control]\nsocket = \"relative.sock\"\n", "[log]\nformat = \"xml\"\n",
                          "[log]\noutput = \"file\"\n", "[control]\nsocket_mode = 0o1777\n"}) {
    StatusOr<Config> e = ParseConfig(base + bad, "bad.toml");
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_NE(e.status().message().find("bad.toml:"), std::string::npos);
    }
  }
}

TEST(Log, LineFormats) {
  const int64_t ms = 1714557600123;  // 2024-05-01T10:00:00.123Z
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kInfo, "/a/b/daemon.cc", 42, ms, "hi"),
            "2024-05-01T10:00:00.123Z INFO hi\n");
  // A client's bytes (an MNT path) cannot start a line of their own.
  EXPECT_EQ(FormatLogLine(LogFormat::kText, LogLevel::kInfo, "d.cc", 1, ms,
                          "MNT /a\n2024-05-01T10:00:00.123Z ERROR x\r\x7f\t"),
            "2024-05-01T10:00:00.123Z INFO MNT /a\\x0a2024-05-01T10:00:00.123Z ERROR "
            "x\\x0d\\x7f\\x09\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kKeyValue, LogLevel::kWarn, "/a/b/daemon.cc", 42, ms,
                          "say \"x\""),
            "ts=2024-05-01T10:00:00.123Z level=warn src=daemon.cc:42 msg=\"say \\\"x\\\"\"\n");
  EXPECT_EQ(FormatLogLine(LogFormat::kJson, LogLevel::kError, "x.cc", 7, ms, "a\nb\\"),
            "{\"ts\":\"2024-05-01T10:00:00.123Z\",\"level\":\"error\",\"src\":\"x.cc:7\","
            "\"msg\":\"a\\nb\\\\\"}\n");
}

// Captures stderr into a pipe while alive.
class StderrCapture {
 public:
  StderrCapture() {
    EXPECT_EQ(pipe(fds_), 0);
    saved_ = dup(STDERR_FILENO);
    dup2(fds_[1], STDERR_FILENO);
  }
  std::string Finish() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    close(fds_[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof(buf))) > 0) out.append(buf, n);
    close(fds_[0]);
    return out;
  }

 private:
  int fds_[2];
  int saved_;
};

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) n++;
  return n;
}

TEST(Log, RepeatsFromOneSiteAreLimitedAndCounted) {
  LogOptions o;
  o.repeat_burst = 3;
  o.repeat_window_s = 3600;
  ConfigureLogging(o);
  StderrCapture cap;
  for (int i = 0; i < 10; ++i) NFSEDGE_LOG(kWarn) << "repeated " << i;
  NFSEDGE_LOG(kWarn) << "other site";
  std::string out = cap.Finish();
  ConfigureLogging(LogOptions());
  EXPECT_EQ(Count(out, "repeated "), 3u) << out;
  EXPECT_EQ(Count(out, "other site"), 1u) << out;
  EXPECT_EQ(out.find("suppressed"), std::string::npos) << "reported with that site's next line";
}

// Lines asked for (counters on SIGUSR1) are never held back.
TEST(Log, AskedLinesAreNotLimited) {
  LogOptions o;
  o.repeat_burst = 2;
  o.repeat_window_s = 3600;
  ConfigureLogging(o);
  StderrCapture cap;
  for (int i = 0; i < 10; ++i) NFSEDGE_LOG_ASKED(kInfo) << "asked " << i;
  std::string out = cap.Finish();
  ConfigureLogging(LogOptions());
  EXPECT_EQ(Count(out, "asked "), 10u) << out;
}

TEST(Log, SuppressedCountIsReportedWhenTheWindowReopens) {
  LogOptions o;
  o.repeat_burst = 1;
  o.repeat_window_s = 1;
  ConfigureLogging(o);
  StderrCapture cap;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 4; ++i) NFSEDGE_LOG(kWarn) << "burst";
    if (round == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  std::string out = cap.Finish();
  ConfigureLogging(LogOptions());
  EXPECT_EQ(Count(out, "burst"), 2u) << out;
  EXPECT_NE(out.find("burst (3 similar messages suppressed)"), std::string::npos) << out;
}

// A datagram socket bound at `path` (made anew), as a service manager's.
int BoundDatagramSocket(const std::string& path) {
  unlink(path.c_str());
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0) << path;
  return fd;
}

TEST(ServiceNotify, SendsOneDatagramToTheSocket) {
  std::string path = "/tmp/nfsedge-notify-" + std::to_string(getpid());
  int fd = BoundDatagramSocket(path);
  ASSERT_TRUE(NotifySocket(path, "READY=1\nSTATUS=serving").ok());
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof(buf), 0);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "READY=1\nSTATUS=serving");
  close(fd);
  unlink(path.c_str());
  EXPECT_FALSE(NotifySocket(path, "READY=1").ok()) << "no listener: an error, not a hang";
  EXPECT_FALSE(NotifySocket("relative", "READY=1").ok());
}

// A receiver that stopped reading (its queue full) makes a notification an
// error at once: the daemon sends them from its event loop.
TEST(ServiceNotify, AReceiverThatDoesNotReadIsAnErrorNotAWait) {
  std::string path = "/tmp/nfsedge-notify-full-" + std::to_string(getpid());
  int fd = BoundDatagramSocket(path);
  int sent = 0;
  Status s = Status::Ok();
  while (s.ok() && sent < 100000) {
    s = NotifySocket(path, "STATUS=serving");
    if (s.ok()) sent++;
  }
  EXPECT_FALSE(s.ok()) << sent << " notifications queued, none refused";
  EXPECT_GT(sent, 0);
  close(fd);
  unlink(path.c_str());
}

// sd_notify(3): RELOADING=1 comes with MONOTONIC_USEC=, the time of
// CLOCK_MONOTONIC in microseconds.
TEST(ServiceNotify, ReloadingCarriesTheMonotonicTime) {
  auto now_usec = [] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  };
  const uint64_t before = now_usec();
  const std::string notice = ReloadingNotice();
  const uint64_t after = now_usec();
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  ASSERT_EQ(notice.compare(0, prefix.size(), prefix), 0) << notice;
  const std::string digits = notice.substr(prefix.size());
  ASSERT_FALSE(digits.empty());
  ASSERT_EQ(digits.find_first_not_of("0123456789"), std::string::npos) << notice;
  const uint64_t usec = std::stoull(digits);
  EXPECT_GE(usec, before);
  EXPECT_LE(usec, after);
}

TEST(Control, CommandsRoundTripWithProgressAndFinalLine) {
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-" + std::to_string(getpid());
  std::vector<std::string> seen;
  auto server = std::make_unique<ControlServer>(
      loop.base(), [&](const std::string& c, const std::string& a,
                       std::shared_ptr<ControlReply> r) {
        seen.push_back(c + "|" + a);
        if (c == "fail") {
          r->Finish(InvalidArgument("no such thing"));
          return;
        }
        r->Progress(1, 2);
        r->Line("hello " + a);
        r->Finish(Status::Ok());
      });
  ASSERT_TRUE(server->Listen(path, 0600).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  loop.Start();
  int code_ok = RunControlCommand(path, "warm", "/data/x");
  int code_fail = RunControlCommand(path, "fail", "");
  int code_gone = RunControlCommand(path + ".missing", "status", "");
  loop.RunSync([&] { server.reset(); });
  EXPECT_EQ(code_ok, 0);
  EXPECT_EQ(code_fail, 1);
  EXPECT_EQ(code_gone, 2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "warm|/data/x");
  EXPECT_EQ(seen[1], "fail|");
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "socket file removed";
}

// A client that sends its request and shuts down its side (socat, nc -N),
// with or without the newline, still reads the answer of a command that
// answers later.
TEST(Control, AClientThatHalfClosesGetsItsAnswer) {
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-half-" + std::to_string(getpid());
  std::vector<std::shared_ptr<ControlReply>> pending;
  std::vector<std::string> seen;
  auto server = std::make_unique<ControlServer>(
      loop.base(), [&](const std::string& c, const std::string& a,
                       std::shared_ptr<ControlReply> r) {
        seen.push_back(c + "|" + a);
        pending.push_back(std::move(r));  // answered by the test
      });
  ASSERT_TRUE(server->Listen(path, 0600).ok());
  loop.Start();
  for (const std::string request : {"reload\n", "status now"}) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    shutdown(fd, SHUT_WR);
    bool taken = false;
    for (int i = 0; i < 500 && !taken; ++i) {
      loop.RunSync([&] { taken = !pending.empty(); });
      if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(taken) << request;
    loop.RunSync([&] {
      EXPECT_TRUE(pending.front()->connected());
      pending.front()->Line("done");
      pending.front()->Finish(Status::Ok());
      pending.clear();
    });
    std::string got;
    char buf[256];
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
    close(fd);
    EXPECT_EQ(got, "done\nok\n") << request;
  }
  loop.RunSync([&] { server.reset(); });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "reload|");
  EXPECT_EQ(seen[1], "status|now");
}

// Connects to the control socket at `path`; returns the descriptor.
int ConnectControl(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  return fd;
}

// What a client sends after its request line is dropped, not kept for as
// long as its command runs; and no more than kMaxControlConnections are
// open at once.
TEST(Control, ABusyOrTalkativeClientHoldsNoMemory) {
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-busy-" + std::to_string(getpid());
  std::vector<std::shared_ptr<ControlReply>> pending;
  auto server = std::make_unique<ControlServer>(
      loop.base(), [&](const std::string&, const std::string&, std::shared_ptr<ControlReply> r) {
        pending.push_back(std::move(r));  // never answered here
      });
  ASSERT_TRUE(server->Listen(path, 0600).ok());
  loop.Start();
  int talker = ConnectControl(path);
  const std::string request = "flush\n";
  ASSERT_EQ(send(talker, request.data(), request.size(), 0), 6);
  const std::string chatter(1 << 20, 'x');
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(send(talker, chatter.data(), chatter.size(), 0),
              static_cast<ssize_t>(chatter.size()));
  }
  size_t buffered = 1;
  for (int i = 0; i < 500 && buffered != 0; ++i) {
    loop.RunSync([&] { buffered = server->buffered_input(); });
    if (buffered != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(buffered, 0u) << "the bytes after the request line are kept";
  loop.RunSync([&] { EXPECT_EQ(pending.size(), 1u); });

  std::vector<int> idle;
  for (size_t i = 1; i < kMaxControlConnections; ++i) idle.push_back(ConnectControl(path));
  int extra = ConnectControl(path);
  std::string got;
  char buf[256];
  timeval tv{5, 0};
  setsockopt(extra, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (ssize_t n; (n = recv(extra, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
  EXPECT_EQ(got.rfind("error busy", 0), 0u) << got;
  close(extra);
  for (int fd : idle) close(fd);
  close(talker);
  loop.RunSync([&] {
    pending.clear();
    server.reset();
  });
}

// Sends `request` on a new connection to the control socket at `path` and
// returns everything the daemon answers until it closes.
std::string AskControl(const std::string& path, const std::string& request) {
  int fd = ConnectControl(path);
  EXPECT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[256];
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) got.append(buf, n);
  close(fd);
  return got;
}

size_t OpenDescriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) n++;
  return n;
}

// No control character passes either way: a request holding one (a NUL
// would cut a path short of its check) or an empty argument ("drop-cache "
// is not "drop-cache", which drops everything) is refused before any
// command runs; one in an answer line (a file name in `status`) cannot end
// the answer or forge a line of it. A trailing CR (telnet) is no part of
// the request.
TEST(Control, NoControlCharacterPassesAndNoArgumentIsEmpty) {
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-chars-" + std::to_string(getpid());
  std::vector<std::string> seen;
  auto server = std::make_unique<ControlServer>(
      loop.base(), [&](const std::string& c, const std::string& a,
                       std::shared_ptr<ControlReply> r) {
        seen.push_back(c + "|" + a);
        r->Line("busy file: x\nok\\x0a");
        r->Finish(InvalidArgument("bad\nok"));
      });
  ASSERT_TRUE(server->Listen(path, 0600).ok());
  loop.Start();
  EXPECT_EQ(AskControl(path, std::string("drop-cache /e/..\0x\n", 19)),
            "error the request holds a control character\n");
  EXPECT_EQ(AskControl(path, "drop-cache \n"), "error 'drop-cache' with an empty argument\n");
  // A line over the limit whose newline comes in the read after the limit.
  EXPECT_EQ(AskControl(path, "drop-cache /" + std::string(6000, 'x') + "\n"),
            "error request line too long\n");
  EXPECT_EQ(AskControl(path, "status\r\n"),
            "busy file: x\\x0aok\\\\x0a\nerror+ bad\nerror ok\n")
      << "a reason of two lines: the last line, not 'ok', ends the answer";
  loop.RunSync([&] { server.reset(); });
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "status|");
}

// A client that goes away while its command runs on (Ctrl-C during a warm)
// leaves no descriptor open behind it once the daemon sees it gone.
TEST(Control, AClientThatLeavesFreesItsSocketAtOnce) {
  std::signal(SIGPIPE, SIG_IGN);  // as the daemon (main.cc): a write to the gone client
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-leave-" + std::to_string(getpid());
  std::shared_ptr<ControlReply> pending;
  auto server = std::make_unique<ControlServer>(
      loop.base(), [&](const std::string&, const std::string&, std::shared_ptr<ControlReply> r) {
        pending = std::move(r);  // runs on: answered by nobody
      });
  ASSERT_TRUE(server->Listen(path, 0600).ok());
  loop.Start();
  const size_t before = OpenDescriptors();
  int fd = ConnectControl(path);
  ASSERT_EQ(send(fd, "warm /e\n", 8, 0), 8);
  bool taken = false;
  for (int i = 0; i < 500 && !taken; ++i) {
    loop.RunSync([&] { taken = pending != nullptr; });
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(taken);
  close(fd);
  // As a warm does every 200 ms: the write finds the client gone (a closed
  // read side alone may be a client that half-closed and waits).
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    loop.RunSync([&] {
      pending->Progress(1, 2);
      gone = !pending->connected();
    });
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(gone);
  loop.RunSync([] {});  // libevent closes a freed bufferevent's socket in a later callback
  EXPECT_EQ(OpenDescriptors(), before) << "the daemon's end of the socket is still open";
  loop.RunSync([&] {
    pending->Line("late");  // ignored, not written to a freed socket
    pending->Finish(Status::Ok());
    pending.reset();
    server.reset();
  });
}

// Each client connection is a descriptor: the daemon raises its soft
// limit to the hard one (at start and at a reload).
TEST(DescriptorLimit, TheSoftLimitIsRaisedToTheHardOne) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max <= 300) GTEST_SKIP() << "hard limit too low";
  rlimit low = saved;
  low.rlim_cur = 300;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  FitDescriptorLimit(1024);
  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
}

TEST(Control, RefusesToReplaceAFileThatIsNotASocket) {
  LoopThread loop;
  std::string path = "/tmp/nfsedge-ctl-file-" + std::to_string(getpid());
  { std::ofstream(path) << "precious"; }
  ControlServer server(loop.base(), [](const std::string&, const std::string&,
                                       std::shared_ptr<ControlReply> r) { r->Finish(Status::Ok()); });
  Status s = server.Listen(path, 0600);
  EXPECT_FALSE(s.ok());
  std::ifstream in(path);
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  unlink(path.c_str());
}

}  // namespace
}  // namespace nfsedge
