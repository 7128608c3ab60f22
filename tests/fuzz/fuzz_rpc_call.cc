// Fuzz target: the RPC call header and its credential (rpc/rpc_message.h,
// rpc/auth_sys.h), as the server reads every record a client sends.
//
// Input: one call record (no record mark). ParseCall must classify it
// without reading past it; a header that parses must encode back to the same
// header; the AUTH_SYS credential must decode iff CheckCallAuth accepts it,
// and root squashing (Export::MapCredential) must keep it decodable. The
// arguments of an NFSv3 call are decoded as the server would. The whole
// input is also decoded as an AUTH_SYS body on its own.
#include <optional>
#include <string>

#include "proxy/config.h"
#include "proxy/exports.h"
#include "proxy/nfs_procs.h"
#include "rpc/auth_sys.h"
#include "rpc/rpc_message.h"
#include "tests/fuzz/fuzz_util.h"

namespace nfsedge::fuzz {
namespace {

bool SameAuth(const AuthSys& a, const AuthSys& b) {
  return a.stamp == b.stamp && a.machine == b.machine && a.uid == b.uid && a.gid == b.gid &&
         a.gids == b.gids;
}

bool SameHeader(const CallHeader& a, const CallHeader& b) {
  return a.xid == b.xid && a.rpcvers == b.rpcvers && a.prog == b.prog && a.vers == b.vers &&
         a.proc == b.proc && a.cred.flavor == b.cred.flavor && a.cred.body == b.cred.body &&
         a.verf.flavor == b.verf.flavor && a.verf.body == b.verf.body;
}

// An AUTH_SYS body that decodes encodes back to one that decodes the same.
void CheckAuthSys(const std::string& body) {
  std::optional<AuthSys> a = DecodeAuthSys(body);
  if (!a) return;
  FUZZ_CHECK(a->machine.size() <= kMaxMachineName);
  std::string again = EncodeAuthSys(*a);
  FUZZ_CHECK(again.size() == body.size());
  std::optional<AuthSys> b = DecodeAuthSys(again);
  FUZZ_CHECK(b && SameAuth(*a, *b));
}

const Export& SquashingExport() {
  static const Export* exp = [] {
    ExportConfig c;
    c.path = "/export";
    c.upstream_path = "/export";
    c.root_squash = true;
    return new Export(0, c);
  }();
  return *exp;
}

}  // namespace
}  // namespace nfsedge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  std::string_view record = AsView(data, size);

  CheckAuthSys(std::string(record));

  ParsedCall p = ParseCall(record);
  if (p.error != CallError::kNone) return 0;
  const CallHeader& h = p.header;
  FUZZ_CHECK(p.args_offset <= record.size());
  FUZZ_CHECK(h.rpcvers == kRpcVersion);
  FUZZ_CHECK(h.cred.body.size() <= kMaxAuthBytes && h.verf.body.size() <= kMaxAuthBytes);

  // The header encodes back to the same length and parses the same.
  std::string again = EncodeCallHeader(h);
  FUZZ_CHECK(again.size() == p.args_offset);
  ParsedCall q = ParseCall(again);
  FUZZ_CHECK(q.error == CallError::kNone && q.args_offset == again.size());
  FUZZ_CHECK(SameHeader(h, q.header));

  AuthStat verdict = CheckCallAuth(h);
  if (h.cred.flavor == kAuthSys) {
    std::optional<AuthSys> sys = DecodeAuthSys(h.cred.body);
    FUZZ_CHECK(sys.has_value() == (verdict != kAuthBadCred));
    CheckAuthSys(h.cred.body);
    OpaqueAuth mapped = SquashingExport().MapCredential(h.cred);
    FUZZ_CHECK(mapped.flavor == kAuthSys);
    if (sys) {
      std::optional<AuthSys> m = DecodeAuthSys(mapped.body);
      FUZZ_CHECK(m.has_value());
      FUZZ_CHECK(m->uid != 0 && m->gid != 0);
      for (uint32_t g : m->gids) FUZZ_CHECK(g != 0);
    } else {
      FUZZ_CHECK(mapped.body == h.cred.body);  // passed on as sent
    }
  } else if (h.cred.flavor != kAuthNone) {
    FUZZ_CHECK(verdict == kAuthBadCred);
  }

  // The arguments of an NFSv3 call, as NfsService::Handle decodes them.
  if (h.prog == kNfsProgram && h.vers == kNfsVersion) {
    if (const NfsProc* np = FindNfsProc(h.proc)) {
      XdrBox args(np->args_xdr, np->args_size);
      if (args.Decode(record.substr(p.args_offset)) && np->arg_handles) {
        std::vector<const nfs_fh3*> fhs;
        np->arg_handles(args.get(), &fhs);
        for (const nfs_fh3* fh : fhs) FUZZ_CHECK(fh->data.data_len <= NFS3_FHSIZE);
      }
    }
  }
  return 0;
}
