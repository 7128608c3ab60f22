#include "live_stack.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "event_loop.h"
#include "harness/files.h"

namespace nfsedge::tools {

using harness::Status;

harness::StatusOr<std::unique_ptr<LiveStack>> LiveStack::Start(bench::Runner& runner,
                                                               const bench::LinkShape& link,
                                                               const std::string& work_dir) {
  std::unique_ptr<LiveStack> s(new LiveStack());
  s->runner_ = &runner;
  s->link_ = link;
  s->work_dir_ = work_dir;
  Status made = harness::MakeDirs(work_dir);
  if (!made.ok()) return made;
  auto wan = bench::WanEmulator::Start(runner.WanOptions(work_dir, link));
  if (!wan.ok()) return wan.status();
  s->wan_ = std::move(wan).value();
  auto proxy = harness::ProxyProcess::Start(
      runner.ProxyOptions(work_dir + "/nfsedge", s->wan_->port(0), s->wan_->port(1), false));
  if (!proxy.ok()) return Status::Error("nfsedge: " + proxy.status().message());
  s->proxy_ = std::move(proxy).value();
  return s;
}

LiveStack::~LiveStack() {
  if (proxy_) proxy_->Stop();
  if (wan_) wan_->Stop().status().IgnoreError();
}

std::string LiveStack::Instructions(const std::string& browse_dir) const {
  const std::string pid = std::to_string(getpid());
  const std::string ns = "nsenter --net=/proc/" + pid + "/ns/net ";
  const std::string exp = runner_->ganesha().export_path();
  const std::string ports = "?version=3&nfsport=" + std::to_string(proxy_->nfs_port()) +
                            "&mountport=" + std::to_string(proxy_->mount_port());
  char link[128];
  std::snprintf(link, sizeof(link), "RTT %g ms%s", link_.rtt_ms,
                link_.rate_bps ? (", " + std::to_string(link_.rate_bps) + " bit/s").c_str() : "");
  std::string out;
  out += "The stack is running in a private network namespace of this process (PID " + pid + "):\n";
  out += "  nfsedge      127.0.0.1:" + std::to_string(proxy_->nfs_port()) +
         " (NFS), 127.0.0.1:" + std::to_string(proxy_->mount_port()) + " (MOUNT), export " + exp +
         "\n";
  out += "  WAN emulator 127.0.0.1:" + std::to_string(wan_->port(0)) +
         ",:" + std::to_string(wan_->port(1)) + " -> ganesha (" + link + ")\n";
  out += "  nfs-ganesha  127.0.0.1:" + std::to_string(runner_->ganesha().nfs_port()) +
         " (NFS), :" + std::to_string(runner_->ganesha().mount_port()) + " (MOUNT)\n";
  out +=
      "\nIts 127.0.0.1 is not the host's: run clients inside the namespace with nsenter\n"
      "(from another terminal, as root). With libnfs-utils:\n";
  out += "  " + ns + "nfs-ls -R 'nfs://127.0.0.1" + exp + "/" + browse_dir + ports + "'\n";
  out += "  " + ns + "nfs-cp 'nfs://127.0.0.1" + exp + "/" + browse_dir + "/f0000.h" + ports +
         "' /tmp/f0000.h\n";
  out += "With a kernel NFS client (this machine's kernel has none):\n";
  out += "  " + ns + "mount -t nfs -o vers=3,proto=tcp,port=" + std::to_string(proxy_->nfs_port()) +
         ",mountport=" + std::to_string(proxy_->mount_port()) +
         ",mountproto=tcp,nolock 127.0.0.1:" + exp + " /mnt\n";
  out += "\nLogs: " + work_dir_ + "/nfsedge/nfsedge.log, " + work_dir_ + "/wan.log\n";
  out += "Ctrl-C (SIGINT) or SIGTERM stops nfsedge, the emulator, ganesha and rpcbind.\n";
  return out;
}

std::string LiveStack::WaitForStop() {
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  // Blocked between checks, delivered only inside ppoll(): no lost wake-up.
  sigprocmask(SIG_BLOCK, &stop, &old);
  std::string why;
  while (why.empty()) {
    if (bench::StopRequested())
      why = "stop signal";
    else if (!proxy_->IsRunning())
      why = "nfsedge exited:\n" + proxy_->LogTail(20);
    else if (!wan_->IsRunning())
      why = "the WAN emulator exited:\n" + wan_->LogTail();
    else if (!runner_->ganesha().IsRunning())
      why = "ganesha exited";
    if (!why.empty()) break;
    timespec second{1, 0};  // Also notice a process dying.
    ppoll(nullptr, 0, &second, &old);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return why;
}

}  // namespace nfsedge::tools
