// Fuzz target: every MOUNTv3 argument decoder (RFC 1813 section 5.2, as
// MountService reads calls).
//
// Input: one byte, the procedure number (0..5), then the XDR arguments.
// NULL, DUMP, UMNTALL and EXPORT take none; MNT and UMNT take a dirpath,
// decoded as MountService does (DecodeDirpath). A path that decodes must
// round-trip, keep within MNTPATHLEN, have no "//" nor a trailing "/", and
// go through the checks MNT applies to it (IsCleanAbsolutePath,
// ExportTable::FindByPath): a clean path must map to a clean upstream path
// that encodes as the MNT argument sent upstream.
#include <rpc/xdr/mount3.h>

#include <string>
#include <vector>

#include "proxy/config.h"
#include "proxy/exports.h"
#include "proxy/mount_service.h"
#include "rpc/xdr_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace nfsedge::fuzz {
namespace {

enum ArgKind { kVoid, kDirpath };
constexpr ArgKind kMountArgs[] = {kVoid, kDirpath, kVoid, kDirpath, kVoid, kVoid};

const ExportTable& Exports() {
  static const ExportTable* table = [] {
    std::vector<ExportConfig> v(3);
    v[0].path = "/";
    v[0].upstream_path = "/srv";
    v[1].path = "/export/data";
    v[1].upstream_path = "/";
    v[2].path = "/export";
    v[2].upstream_path = "/vol/export";
    return new ExportTable(v);
  }();
  return *table;
}

}  // namespace
}  // namespace nfsedge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  if (size < 1 || data[0] >= std::size(kMountArgs)) return 0;
  std::string_view args = AsView(data + 1, size - 1);
  if (kMountArgs[data[0]] == kVoid) {
    FUZZ_CHECK(XdrDecode(reinterpret_cast<xdrproc_t>(xdr_void), nullptr, args));
    return 0;
  }

  std::string path;
  if (!DecodeDirpath(args, &path)) return 0;
  FUZZ_CHECK(path.size() <= MNTPATHLEN);
  FUZZ_CHECK(path.find("//") == std::string::npos);
  FUZZ_CHECK(path.size() <= 1 || path.back() != '/');
  std::string once;
  char* p = path.data();
  FUZZ_CHECK(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_dirpath), &p, &once));
  std::string back;
  FUZZ_CHECK(DecodeDirpath(once, &back));
  FUZZ_CHECK(back == path);

  // What MNT does with the path before it asks the upstream.
  bool clean = IsCleanAbsolutePath(path);
  std::string upstream_path;
  const Export* exp = clean ? Exports().FindByPath(path, &upstream_path) : nullptr;
  if (clean) {
    FUZZ_CHECK(exp != nullptr);  // "/" is exported
    FUZZ_CHECK(upstream_path.size() > MNTPATHLEN || IsCleanAbsolutePath(upstream_path));
    // MountService::Mnt sends this encoding upstream as the MNT argument; a
    // mapped path over MNTPATHLEN does not encode, and Mnt then answers
    // MNT3ERR_NAMETOOLONG (F3, tests/unit/server_dispatch_test.cc).
    std::string upstream_args;
    char* u = upstream_path.data();
    bool encodes = XdrEncode(reinterpret_cast<xdrproc_t>(xdr_dirpath), &u, &upstream_args);
    FUZZ_CHECK(encodes == (upstream_path.size() <= MNTPATHLEN));
  }
  return 0;
}
