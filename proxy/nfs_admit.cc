// NfsService::Admit: which export's rules a call is under, and whether the
// handles it carries let it through at all (docs/security.md).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/nfs_service.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

nfsstat3 NfsService::Admit(const NfsProc& p, const void* args, const IncomingCall& call,
                           const Export** exp) {
  std::vector<const nfs_fh3*> fhs;
  p.arg_handles(args, &fhs);
  *exp = nullptr;
  if (fhs.empty()) return NFS3ERR_BADHANDLE;
  // The exports every handle of the call was handed out for.
  uint64_t common = ~uint64_t{0};
  std::vector<uint64_t> each;
  for (const nfs_fh3* fh : fhs) {
    if (fh->data.data_len == 0) return NFS3ERR_BADHANDLE;
    std::optional<ExportSet> set = handles_.FindAll(HandleBytes(*fh));
    if (!set) return NFS3ERR_STALE;
    common &= set->exports;
    each.push_back(set->exports);
    // ".." of an export's root leads out of that export: not through it.
    if (p.proc == NFSPROC3_LOOKUP) {
      const char* name = static_cast<const LOOKUP3args*>(args)->what.name;
      if (name != nullptr && std::string_view(name) == "..") common &= ~set->roots;
    }
  }
  if (common == 0) {
    if (p.proc == NFSPROC3_LOOKUP) {
      NFSEDGE_LOG(kInfo) << "NFS3 LOOKUP \"..\" of an export's root from "
                         << call.peer().ToString() << " refused: it leaves the export";
      return NFS3ERR_ACCES;
    }
    return NFS3ERR_XDEV;
  }
  bool port_refused = false;
  *exp = exports_.Choose(common, call.peer(), call.tls(), &port_refused);
  if (!*exp) {
    if (port_refused) {
      NFSEDGE_LOG(kInfo) << "NFS3 " << p.name << " from " << call.peer().ToString()
                         << " refused: source port not privileged (export is 'secure')";
      return NFS3ERR_PERM;
    }
    return NFS3ERR_ACCES;
  }
  // A RENAME or LINK between a nested export and the one around it: each
  // handle is under its own deepest export's rules, so one export for both
  // would drop the inner one's (read-only, squashing). Across exports, as
  // a server does.
  if (each.size() > 1) {
    for (uint64_t set : each) {
      if (exports_.Choose(set, call.peer(), call.tls(), &port_refused) != *exp) return NFS3ERR_XDEV;
    }
  }
  return ExportRules(p, call, **exp);
}

// Every directory of an export below its root was handed out for it on the
// way down (LOOKUP, READDIRPLUS, the MNT walk), so the parent of one is
// known as the export's too, unless the directory was moved out of the
// export's tree since: its ".." is then outside, and would lead on from
// there to the whole upstream file system (rule 3's check at the root
// does not see it). A parent the registry forgot (server.max_handles) is
// refused the same way (NFS3ERR_ACCES; its path from the root still
// works).
bool NfsService::RefuseWayOut(const NfsProc& p, const void* args, RpcReply* reply,
                              const Export& exp) {
  if (p.proc != NFSPROC3_LOOKUP) return false;
  const char* name = static_cast<const LOOKUP3args*>(args)->what.name;
  if (name == nullptr || std::string_view(name) != "..") return false;
  const std::string_view results = reply->results();
  if (results.size() < 4 || LoadBE32(results.data()) != NFS3_OK) return false;
  XdrValue<LOOKUP3res> res(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res));
  if (res.Decode(results)) {
    std::optional<ExportSet> set = handles_.Peek(HandleBytes(res->LOOKUP3res_u.resok.object));
    if (set && set->Has(exp.id())) return false;
  }
  NFSEDGE_LOG(kWarn) << "NFS3 LOOKUP \"..\" answered with a directory not known as export "
                     << exp.config().path << "'s (moved out of it?): refused";
  reply->record =
      reply->record.substr(0, reply->header.results_offset) + EncodeNfsError(p, NFS3ERR_ACCES);
  return true;
}

nfsstat3 NfsService::ExportRules(const NfsProc& p, const IncomingCall& call, const Export& exp) {
  if (!exp.AllowsTransport(call.tls())) {
    NFSEDGE_LOG(kWarn) << "NFS3 " << p.name << " from " << call.peer().ToString()
                       << " refused: plaintext connection to export " << exp.config().path
                       << " (tls = \"required\")";
    return NFS3ERR_ACCES;
  }
  // COMMIT changes nothing the proxy caches, but asks the server to write:
  // refused on a read-only export, as knfsd does.
  if (((p.flags & kMutating) || p.proc == NFSPROC3_COMMIT) && exp.read_only()) {
    return NFS3ERR_ROFS;
  }
  return NFS3_OK;
}

}  // namespace nfsedge
