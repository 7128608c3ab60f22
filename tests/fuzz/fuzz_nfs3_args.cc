// Fuzz target: every NFSv3 argument decoder of the procedure table
// (proxy/nfs_procs.h), as NfsService::Handle decodes a client's call.
//
// Input: one byte, the procedure number (FindNfsProc; unknown numbers are
// skipped), then the XDR arguments. Arguments that decode must encode, and
// decoding that encoding and encoding again must give the same bytes
// (round-trip stability); the file handles the table finds in them must be
// within NFS3_FHSIZE, as the handle registry assumes.
#include <string>
#include <vector>

#include "proxy/nfs_procs.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  if (size < 1) return 0;
  const NfsProc* p = FindNfsProc(data[0]);
  if (!p) return 0;
  FUZZ_CHECK(p->proc == data[0]);
  std::string_view args = AsView(data + 1, size - 1);

  XdrBox first(p->args_xdr, p->args_size);
  if (!first.Decode(args)) return 0;
  if (p->arg_handles) {
    std::vector<const nfs_fh3*> fhs;
    p->arg_handles(first.get(), &fhs);
    FUZZ_CHECK(!fhs.empty());
    for (const nfs_fh3* fh : fhs) FUZZ_CHECK(fh->data.data_len <= NFS3_FHSIZE);
  }

  std::string once;
  FUZZ_CHECK(first.Encode(&once));
  FUZZ_CHECK(once.size() <= args.size());  // decoding consumed at least that much
  XdrBox second(p->args_xdr, p->args_size);
  FUZZ_CHECK(second.Decode(once));
  std::string twice;
  FUZZ_CHECK(second.Encode(&twice));
  FUZZ_CHECK(once == twice);
  return 0;
}
