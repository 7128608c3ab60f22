// proxy_lifecycle_test: nfsedge as a service around its calls: registration
// with the local rpcbind (a client mounts without port options), removal of
// that registration at SIGTERM with exit code 0, and an upstream server that
// restarts under the proxy (calls wait for the reconnect and succeed).

#include <gtest/gtest.h>
#include <nfsc/libnfs.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <unistd.h>

#include <csignal>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "harness/files.h"
#include "harness/private_network.h"
#include "harness/raw_rpc.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.

// Returns the TCP port rpcbind has for (prog, vers): PMAPPROC_GETPORT.
uint32_t PortFromRpcbind(uint32_t prog, uint32_t vers) {
  TcpEndpoint ep;
  ep.port = 111;
  auto conn = RawConnection::Connect(ep);
  if (!conn.ok()) return 0xffffffffu;
  RpcCall call;
  call.program = 100000;  // portmapper v2
  call.version = 2;
  call.procedure = 3;  // GETPORT
  call.args = XdrWriter().U32(prog).U32(vers).U32(6 /* TCP */).U32(0).data();
  auto reply = (*conn)->Call(call);
  if (!reply.ok() || reply->results.size() != 4) return 0xffffffffu;
  const auto* b = reinterpret_cast<const unsigned char*>(reply->results.data());
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

// The standard output of `cmd` (run by the shell), and its exit status.
std::pair<std::string, int> CommandOutput(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return {"popen failed", -1};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  return {out, pclose(p)};
}

// Returns the port rpcbind has for (prog, vers) over `netid` ("tcp6"), from
// `rpcinfo`'s table (universal address "::.p1.p2"), or 0.
uint32_t PortFromRpcinfo(uint32_t prog, uint32_t vers, const std::string& netid) {
  std::istringstream table(CommandOutput("rpcinfo 2>&1").first);
  std::string line;
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    uint32_t p = 0, v = 0;
    std::string n, addr;
    if (!(fields >> p >> v >> n >> addr) || p != prog || v != vers || n != netid) continue;
    const size_t last = addr.rfind('.');
    const size_t before = addr.rfind('.', last - 1);
    if (last == std::string::npos || before == std::string::npos) continue;
    return std::stoul(addr.substr(before + 1, last - before - 1)) * 256 +
           std::stoul(addr.substr(last + 1));
  }
  return 0;
}

// A command line that cannot work says what is wrong with it (exit 2), and
// a config path that is no file says why (exit 1), before the usage.
TEST(CommandLine, SaysWhatIsWrong) {
  const std::string bin = ProxyProcess::DefaultBinary();
  struct Case {
    std::string args, first_line;
    int status;
  };
  for (const Case& c : std::vector<Case>{
           {"--config", "nfsedge: --config needs a FILE", 2},
           {"--bogus", "nfsedge: unknown argument '--bogus'", 2},
           {"warm", "nfsedge warm: needs the PATH (as clients see it) to walk", 2},
           {"status --socket", "nfsedge status: --socket needs a PATH", 2},
           {"flush extra", "nfsedge flush: unexpected argument 'extra'", 2},
           {"drop-cache ''", "nfsedge drop-cache: an empty PATH", 2},
           {"--check-config /", "nfsedge: invalid config:", 1},
       }) {
    auto [out, status] = CommandOutput(bin + " " + c.args + " 2>&1");
    EXPECT_EQ(out.substr(0, out.find('\n')), c.first_line) << c.args << ":\n" << out;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == c.status) << c.args << ": " << status;
    if (c.args == "--check-config /") {
      EXPECT_NE(out.find("/: is a directory, not a config file"), std::string::npos) << out;
    }
  }
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }
};

TEST_F(LifecycleTest, RegistersWithRpcbindSoClientsNeedNoPorts) {
  Testbed::Options o;
  o.name = "rpcbind";
  o.start_proxy = false;
  auto tb = Testbed::Start(o);
  ASSERT_TRUE(tb.ok()) << tb.status().message();
  Testbed& bed = **tb;
  // ganesha registers too, and may finish after "NFS SERVER INITIALIZED":
  // let it be done before nfsedge registers over it (on a real branch
  // machine only the proxy serves NFS).
  Deadline ganesha_registered(Millis(10000));
  while (PortFromRpcbind(100005, 3) != bed.ganesha().mount_port() &&
         !ganesha_registered.Expired()) {
    usleep(10000);
  }
  ProxyProcess::Options po;
  po.work_dir = bed.dir().Sub("nfsedge");
  po.rpcbind = "yes";
  po.listen = "::";  // IPv6 and IPv4 clients: registered for both
  // The upstream's ports from its rpcbind (the same one: asked before the
  // proxy registers its own there).
  po.upstream_nfs_port = 0;
  po.upstream_mount_port = 0;
  po.exports.emplace_back();
  po.exports.back().path = po.exports.back().upstream_path = bed.ganesha().export_path();
  auto started = ProxyProcess::Start(po);
  ASSERT_TRUE(started.ok()) << started.status().message();
  ProxyProcess& proxy = **started;
  // The proxy registers once it listens: its ports may answer a moment first.
  Deadline registered(Millis(10000));
  while (PortFromRpcbind(100005, 3) != proxy.mount_port() && !registered.Expired()) usleep(10000);
  EXPECT_EQ(PortFromRpcbind(100003, 3), proxy.nfs_port());
  EXPECT_EQ(PortFromRpcbind(100005, 3), proxy.mount_port());
  EXPECT_EQ(PortFromRpcinfo(100003, 3, "tcp6"), proxy.nfs_port());
  EXPECT_EQ(PortFromRpcinfo(100005, 3, "tcp6"), proxy.mount_port());

  // libnfs asks rpcbind for both ports, as mount(8) does without port=.
  nfs_context* nfs = nfs_init_context();
  ASSERT_NE(nfs, nullptr);
  nfs_set_version(nfs, 3);
  const std::string path = bed.ganesha().export_path();
  ASSERT_TRUE(WriteFile(path + "/hello.txt", "hello").ok());
  int rc = nfs_mount(nfs, "127.0.0.1", path.c_str());
  ASSERT_EQ(rc, 0) << nfs_get_error(nfs) << "\n" << proxy.LogTail();
  nfs_stat_64 st{};
  EXPECT_EQ(nfs_stat64(nfs, "/hello.txt", &st), 0) << nfs_get_error(nfs);
  EXPECT_EQ(st.nfs_size, 5u);
  nfs_destroy_context(nfs);

  // The mount went through the proxy: its own mount list has it.
  auto c = ConnectOrFail("127.0.0.1", proxy.mount_port());
  ASSERT_NE(c, nullptr);
  DumpResult dump = c->Dump();
  ASSERT_TRUE(dump.rpc_ok);
  bool found = false;
  for (const MountEntry& m : dump.mounts) found |= m.directory == path;
  EXPECT_TRUE(found) << proxy.LogTail();

  // showmount(8) asks rpcbind for MOUNT version 1, then the proxy.
  EXPECT_EQ(PortFromRpcbind(100005, 1), proxy.mount_port());
  auto [exports, rc_e] = CommandOutput("showmount -e 127.0.0.1 2>&1");
  EXPECT_EQ(rc_e, 0) << exports;
  EXPECT_NE(exports.find(path + " 127.0.0.0/8"), std::string::npos) << exports;
  auto [mounts, rc_a] = CommandOutput("showmount -a 127.0.0.1 2>&1");
  EXPECT_EQ(rc_a, 0) << mounts;
  EXPECT_NE(mounts.find("127.0.0.1:" + path), std::string::npos) << mounts;

  ExitStatus exit = proxy.Stop();
  EXPECT_TRUE(exit.success()) << exit.ToString();
  EXPECT_NE(PortFromRpcbind(100003, 3), proxy.nfs_port()) << "registration left behind";
  EXPECT_NE(PortFromRpcbind(100005, 3), proxy.mount_port()) << "registration left behind";
  EXPECT_NE(PortFromRpcbind(100005, 1), proxy.mount_port()) << "registration left behind";
  EXPECT_NE(PortFromRpcinfo(100005, 3, "tcp6"), proxy.mount_port()) << "registration left behind";
}

// rpcbind, ganesha exporting DIR/export, and nfsedge in front of it with
// `export_toml` and `upstream_toml` in its config's tables.
struct ProxiedGanesha {
  Ganesha::Options go;
  std::unique_ptr<Rpcbind> rpcbind;
  std::unique_ptr<Ganesha> ganesha;
  std::unique_ptr<ProxyProcess> proxy;
};
void StartProxiedGanesha(TempDir& dir, const std::string& export_toml,
                         const std::string& upstream_toml, ProxiedGanesha* bed) {
  ASSERT_TRUE(dir.ok());
  Rpcbind::Options ro;
  ro.log_path = dir.Sub("rpcbind.log");
  auto rpcbind = Rpcbind::Start(ro);
  ASSERT_TRUE(rpcbind.ok()) << rpcbind.status().message();
  bed->rpcbind = std::move(*rpcbind);
  bed->go.work_dir = dir.Sub("ganesha");
  bed->go.exports.emplace_back();
  bed->go.exports.back().path = dir.Sub("export");
  auto ganesha = Ganesha::Start(bed->go);
  ASSERT_TRUE(ganesha.ok()) << ganesha.status().message();
  bed->ganesha = std::move(*ganesha);
  ProxyProcess::Options po;
  po.work_dir = dir.Sub("nfsedge");
  po.exports.emplace_back();
  po.exports.back().path = po.exports.back().upstream_path = dir.Sub("export");
  po.exports.back().extra_toml = export_toml;
  po.extra_upstream_toml = upstream_toml;
  auto proxy = ProxyProcess::Start(po);
  ASSERT_TRUE(proxy.ok()) << proxy.status().message();
  bed->proxy = std::move(*proxy);
}

TEST_F(LifecycleTest, UpstreamRestartIsRiddenThrough) {
  TempDir dir("restart");
  ProxiedGanesha bed;
  ASSERT_NO_FATAL_FAILURE(
      StartProxiedGanesha(dir, "", "reconnect_min_ms = 20\nreconnect_max_ms = 200\n", &bed));
  ProxyProcess* proxy = bed.proxy.get();

  auto c = ConnectOrFail("127.0.0.1", proxy->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(dir.Sub("export"));
  ASSERT_TRUE(mnt.ok());
  ASSERT_EQ(c->Getattr(mnt.fh).status, kNfs3Ok);

  bed.ganesha->Stop();
  auto again = Ganesha::Start(bed.go);
  ASSERT_TRUE(again.ok()) << again.status().message();
  // Same client connection, same handle: the proxy reconnected upstream.
  GetattrResult g = c->Getattr(mnt.fh);
  EXPECT_TRUE(g.rpc_ok);
  EXPECT_EQ(g.status, kNfs3Ok) << proxy->LogTail();
  EXPECT_TRUE(proxy->IsRunning());
  EXPECT_TRUE(proxy->Stop().success());
  (*again)->Stop();
  bed.rpcbind->Stop();
}

// A reload asked while the proxy shuts down (a SIGHUP during the shutdown
// grace, a call still waiting for the upstream) is refused: the service
// manager, told STOPPING=1, hears no READY=1 after it, and nothing a reload
// moves (the metrics endpoint, the limits) moves.
TEST_F(LifecycleTest, AReloadDuringTheShutdownGraceIsRefused) {
  TempDir dir("reload-stop");
  ProxiedGanesha bed;
  ASSERT_NO_FATAL_FAILURE(StartProxiedGanesha(
      dir, "acregmin = 0\nacregmax = 0\nacdirmin = 0\nacdirmax = 0\n", "", &bed));
  ProxyProcess* proxy = bed.proxy.get();
  auto c = ConnectOrFail("127.0.0.1", proxy->nfs_port());
  ASSERT_NE(c, nullptr);
  MntResult mnt = c->Mnt(dir.Sub("export"));
  ASSERT_TRUE(mnt.ok());

  bed.ganesha->Stop();  // a GETATTR now waits for the upstream to come back
  TcpEndpoint ep;
  ep.port = proxy->nfs_port();
  auto held = RawConnection::Connect(ep);
  ASSERT_TRUE(held.ok());
  RpcCall getattr;
  getattr.xid = 77;
  getattr.procedure = 1;
  getattr.args = XdrWriter().Opaque(mnt.fh).data();
  ASSERT_TRUE((*held)->Send(FrameRecord(EncodeCall(getattr))).ok());
  const std::string log = proxy->log_path();
  // Read by the proxy (counted in its stats), and waiting for the upstream.
  ASSERT_TRUE(WaitUntil(
      [&] {
        kill(proxy->pid(), SIGUSR1);
        usleep(50000);
        const std::string l = ReadFile(log);
        const size_t line = l.rfind("stats nfs calls/cache_answers");
        if (line == std::string::npos) return false;
        const size_t at = l.find(" GETATTR=", line);
        return at != std::string::npos && at < l.find('\n', line) &&
               std::stoull(l.substr(at + 9)) >= 1;
      },
      Millis(10000)))
      << proxy->LogTail();
  ASSERT_EQ(kill(proxy->pid(), SIGTERM), 0);
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(log).find("shutting down: 1 calls in flight") !=
                                     std::string::npos; },
                        Millis(10000)))
      << proxy->LogTail();
  ASSERT_EQ(kill(proxy->pid(), SIGHUP), 0);
  EXPECT_TRUE(WaitUntil([&] { return ReadFile(log).find("config reload refused: shutting down") !=
                                     std::string::npos; },
                        Millis(5000)))
      << proxy->LogTail();
  EXPECT_EQ(ReadFile(log).find("config reloaded from"), std::string::npos) << proxy->LogTail();
  EXPECT_TRUE(proxy->Stop().success());
  bed.rpcbind->Stop();
}

}  // namespace
}  // namespace nfsedge::itest
