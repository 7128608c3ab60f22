#include "conformance/fs.h"

#include <cerrno>

namespace nfsedge::fsx {

std::string ErrnoName(int err) {
  if (err < 0) err = -err;
  switch (err) {
    case 0:
      return "OK";
    case EPERM:
      return "EPERM";
    case ENOENT:
      return "ENOENT";
    case EINTR:
      return "EINTR";
    case EIO:
      return "EIO";
    case ENXIO:
      return "ENXIO";
    case EBADF:
      return "EBADF";
    case ENOMEM:
      return "ENOMEM";
    case EACCES:
      return "EACCES";
    case EFAULT:
      return "EFAULT";
    case EBUSY:
      return "EBUSY";
    case EEXIST:
      return "EEXIST";
    case EXDEV:
      return "EXDEV";
    case ENOTDIR:
      return "ENOTDIR";
    case EISDIR:
      return "EISDIR";
    case EINVAL:
      return "EINVAL";
    case EFBIG:
      return "EFBIG";
    case ENOSPC:
      return "ENOSPC";
    case EROFS:
      return "EROFS";
    case EMLINK:
      return "EMLINK";
    case ENAMETOOLONG:
      return "ENAMETOOLONG";
    case ENOTEMPTY:
      return "ENOTEMPTY";
    case ELOOP:
      return "ELOOP";
    case ENOTSUP:
      return "ENOTSUP";
    case ETIMEDOUT:
      return "ETIMEDOUT";
    case ECONNRESET:
      return "ECONNRESET";
    case ESTALE:
      return "ESTALE";
    case EREMOTEIO:
      return "EREMOTEIO";
    default:
      return "E" + std::to_string(err);
  }
}

}  // namespace nfsedge::fsx
