// Fuzz target: what the proxy decodes from the upstream server's replies:
// the RPC reply header (ParseReply) and the results of every NFSv3
// procedure (the table's result decoders), plus MOUNTv3 MNT's mountres3.
//
// Input: one byte choosing the procedure (0..21: NFSv3; 22: MOUNT MNT),
// then one reply record (no record mark). A header that parses must point
// inside the record and re-encode to a header that parses the same; results
// that decode must round-trip stably; the handles the table registers from
// NFS3_OK results must be within NFS3_FHSIZE. EncodeNfsError, with the
// status the record carries, must give results that decode to that status.
#include <rpc/xdr/mount3.h>

#include <cstring>
#include <string>
#include <vector>

#include "proxy/nfs_procs.h"
#include "rpc/rpc_message.h"
#include "rpc/xdr_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace nfsedge::fuzz {
namespace {

constexpr uint8_t kMountMnt = kNfsProcCount;

void CheckHeaderRoundTrip(const ReplyHeader& h) {
  std::string again;
  if (h.reply_stat == kMsgAccepted) {
    again = EncodeAcceptedReply(h.xid, h.accept_stat, h.mismatch_low, h.mismatch_high);
  } else if (h.reject_stat == kAuthError) {
    again = EncodeAuthErrorReply(h.xid, h.auth_stat);
  } else {
    return;  // RPC_MISMATCH replies are always encoded as (2, 2)
  }
  StatusOr<ReplyHeader> g = ParseReply(again);
  FUZZ_CHECK(g.ok());
  FUZZ_CHECK(g->xid == h.xid && g->reply_stat == h.reply_stat);
  if (h.reply_stat == kMsgAccepted) {
    FUZZ_CHECK(g->accept_stat == h.accept_stat && g->results_offset == again.size());
    if (h.accept_stat == kProgMismatch) {
      FUZZ_CHECK(g->mismatch_low == h.mismatch_low && g->mismatch_high == h.mismatch_high);
    }
  } else {
    FUZZ_CHECK(g->reject_stat == kAuthError && g->auth_stat == h.auth_stat);
  }
}

void CheckNfsResults(const NfsProc& p, std::string_view results) {
  XdrBox first(p.res_xdr, p.res_size);
  if (!first.Decode(results)) return;
  std::string once;
  FUZZ_CHECK(first.Encode(&once));
  FUZZ_CHECK(once.size() <= results.size());
  XdrBox second(p.res_xdr, p.res_size);
  FUZZ_CHECK(second.Decode(once));
  std::string twice;
  FUZZ_CHECK(second.Encode(&twice));
  FUZZ_CHECK(once == twice);
  if (p.proc == 0) return;  // NULL has no results

  // Every NFSv3 result is a union led by its status (nfs_procs.cc relies on
  // it). Read as an integer: a peer's status need not be an nfsstat3
  // enumerator, and loading such a value as the enum type is undefined.
  uint32_t status;
  std::memcpy(&status, first.get(), sizeof(status));
  FUZZ_CHECK(results.size() >= 4 && LoadBE32(results.data()) == status);
  if (status == NFS3_OK && p.result_handles) {
    std::vector<const nfs_fh3*> fhs;
    p.result_handles(first.get(), &fhs);
    for (const nfs_fh3* fh : fhs) FUZZ_CHECK(fh->data.data_len <= NFS3_FHSIZE);
  }
  if (status != NFS3_OK) {
    // Only with a status the enum can hold (the proxy passes enumerators).
    if (status > NFS3ERR_JUKEBOX) return;
    std::string err = EncodeNfsError(p, static_cast<nfsstat3>(status));
    XdrBox back(p.res_xdr, p.res_size);
    FUZZ_CHECK(back.Decode(err));
    FUZZ_CHECK(err.size() >= 4 && LoadBE32(err.data()) == status);
  }
}

void CheckMountResults(std::string_view results) {
  XdrValue<mountres3> first(reinterpret_cast<xdrproc_t>(xdr_mountres3));
  if (!first.Decode(results)) return;
  uint32_t status;  // as an integer, as above
  std::memcpy(&status, &first->fhs_status, sizeof(status));
  if (status == MNT3_OK) {
    FUZZ_CHECK(first->mountres3_u.mountinfo.fhandle.fhandle3_len <= FHSIZE3);
  }
  std::string once;
  FUZZ_CHECK(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_mountres3), &first.get(), &once));
  XdrValue<mountres3> second(reinterpret_cast<xdrproc_t>(xdr_mountres3));
  FUZZ_CHECK(second.Decode(once));
  std::string twice;
  FUZZ_CHECK(XdrEncode(reinterpret_cast<xdrproc_t>(xdr_mountres3), &second.get(), &twice));
  FUZZ_CHECK(once == twice);
}

}  // namespace
}  // namespace nfsedge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  if (size < 1 || data[0] > kMountMnt) return 0;
  std::string_view record = AsView(data + 1, size - 1);
  StatusOr<ReplyHeader> h = ParseReply(record);
  if (!h.ok()) return 0;
  CheckHeaderRoundTrip(*h);
  if (h->reply_stat != kMsgAccepted || h->accept_stat != kSuccess) return 0;
  FUZZ_CHECK(h->results_offset <= record.size());
  std::string_view results = record.substr(h->results_offset);
  if (data[0] == kMountMnt) {
    CheckMountResults(results);
  } else {
    CheckNfsResults(*FindNfsProc(data[0]), results);
  }
  return 0;
}
