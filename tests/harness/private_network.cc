#include "harness/private_network.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace nfsedge::harness {
namespace {

bool g_entered = false;

Status Errno(const std::string& what) { return Status::Error(what + ": " + std::strerror(errno)); }

// Sets IFF_UP on `ifname` through `fd` (an AF_INET datagram socket).
Status InterfaceUp(int fd, const char* ifname) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) return Errno("SIOCGIFFLAGS lo");
  ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) return Errno("SIOCSIFFLAGS lo");
  return Status::OK();
}

// Adds `address`/32 to lo as alias `label` (SIOCSIFADDR on an alias name
// creates a secondary address instead of replacing 127.0.0.1).
Status AddLoopbackAlias(int fd, const char* label, const char* address) {
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, label, IFNAMSIZ - 1);
  auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  if (inet_pton(AF_INET, address, &sin->sin_addr) != 1) {
    return Status::Error(std::string("bad address ") + address);
  }
  if (ioctl(fd, SIOCSIFADDR, &ifr) != 0) return Errno(std::string("SIOCSIFADDR ") + label);
  ifreq mask{};
  std::strncpy(mask.ifr_name, label, IFNAMSIZ - 1);
  auto* msin = reinterpret_cast<sockaddr_in*>(&mask.ifr_netmask);
  msin->sin_family = AF_INET;
  msin->sin_addr.s_addr = htonl(0xffffffffu);
  if (ioctl(fd, SIOCSIFNETMASK, &mask) != 0) return Errno(std::string("SIOCSIFNETMASK ") + label);
  return Status::OK();
}

Status SetUpLoopback() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  Status s = InterfaceUp(fd, "lo");
  if (s.ok()) s = AddLoopbackAlias(fd, "lo:1", PrivateNetwork::kSecondaryAddress);
  close(fd);
  return s;
}

Status MountPrivateRun() {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("mount --make-rprivate /");
  }
  if (mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno("mount tmpfs /run");
  }
  for (const char* dir : {"/run/rpcbind", "/run/ganesha", "/run/lock"}) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return Errno(std::string("mkdir ") + dir);
  }
  return Status::OK();
}

}  // namespace

Status PrivateNetwork::Enter() {
  if (g_entered) return Status::OK();
  if (geteuid() != 0) {
    return Status::Error("needs root (network/mount namespaces, rpcbind on port 111)");
  }
  if (unshare(CLONE_NEWNET | CLONE_NEWNS) != 0) {
    return Errno("unshare(CLONE_NEWNET|CLONE_NEWNS) (a container without CAP_SYS_ADMIN?)");
  }
  Status s = MountPrivateRun();
  if (!s.ok()) return s;
  s = SetUpLoopback();
  if (!s.ok()) return s;
  std::signal(SIGPIPE, SIG_IGN);
  g_entered = true;
  return Status::OK();
}

bool PrivateNetwork::entered() { return g_entered; }

}  // namespace nfsedge::harness
