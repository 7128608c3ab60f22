#include "harness/nfs_types.h"

#include <cstdio>
#include <map>
#include <sstream>

namespace nfsedge::harness {

std::string NfsStatName(uint32_t s) {
  static const std::map<uint32_t, const char*> kNames = {
      {0, "NFS3_OK"},
      {1, "NFS3ERR_PERM"},
      {2, "NFS3ERR_NOENT"},
      {5, "NFS3ERR_IO"},
      {6, "NFS3ERR_NXIO"},
      {13, "NFS3ERR_ACCES"},
      {17, "NFS3ERR_EXIST"},
      {18, "NFS3ERR_XDEV"},
      {19, "NFS3ERR_NODEV"},
      {20, "NFS3ERR_NOTDIR"},
      {21, "NFS3ERR_ISDIR"},
      {22, "NFS3ERR_INVAL"},
      {27, "NFS3ERR_FBIG"},
      {28, "NFS3ERR_NOSPC"},
      {30, "NFS3ERR_ROFS"},
      {31, "NFS3ERR_MLINK"},
      {63, "NFS3ERR_NAMETOOLONG"},
      {66, "NFS3ERR_NOTEMPTY"},
      {69, "NFS3ERR_DQUOT"},
      {70, "NFS3ERR_STALE"},
      {71, "NFS3ERR_REMOTE"},
      {10001, "NFS3ERR_BADHANDLE"},
      {10002, "NFS3ERR_NOT_SYNC"},
      {10003, "NFS3ERR_BAD_COOKIE"},
      {10004, "NFS3ERR_NOTSUPP"},
      {10005, "NFS3ERR_TOOSMALL"},
      {10006, "NFS3ERR_SERVERFAULT"},
      {10007, "NFS3ERR_BADTYPE"},
      {10008, "NFS3ERR_JUKEBOX"},
  };
  auto it = kNames.find(s);
  return it != kNames.end() ? it->second : "nfsstat3(" + std::to_string(s) + ")";
}

std::string MountStatName(uint32_t s) {
  static const std::map<uint32_t, const char*> kNames = {
      {0, "MNT3_OK"},
      {1, "MNT3ERR_PERM"},
      {2, "MNT3ERR_NOENT"},
      {5, "MNT3ERR_IO"},
      {13, "MNT3ERR_ACCES"},
      {20, "MNT3ERR_NOTDIR"},
      {22, "MNT3ERR_INVAL"},
      {63, "MNT3ERR_NAMETOOLONG"},
      {10004, "MNT3ERR_NOTSUPP"},
      {10006, "MNT3ERR_SERVERFAULT"},
  };
  auto it = kNames.find(s);
  return it != kNames.end() ? it->second : "mountstat3(" + std::to_string(s) + ")";
}

std::string NfsResult::StatusString() const {
  if (!rpc_ok) return "RPC failure: " + rpc_error;
  return NfsStatName(status);
}

std::string Fattr::Summary() const {
  char mode_buf[16];
  std::snprintf(mode_buf, sizeof(mode_buf), "%04o", mode);
  std::ostringstream s;
  s << "type=" << type << " mode=" << mode_buf << " nlink=" << nlink << " uid=" << uid
    << " gid=" << gid << " size=" << size;
  if (type == static_cast<uint32_t>(FileType::kChr) ||
      type == static_cast<uint32_t>(FileType::kBlk)) {
    s << " rdev=" << rdev1 << "," << rdev2;
  }
  return s.str();
}

}  // namespace nfsedge::harness
