// NfsService: a client READDIR served by an upstream READDIRPLUS (see
// nfs_service.h and dir_listing.h).
#include <algorithm>

#include "proxy/dir_listing.h"
#include "proxy/nfs_service.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

void NfsService::ForwardReaddirAsPlus(const std::shared_ptr<IncomingCall>& call,
                                      const std::shared_ptr<XdrBox>& args, const Export& exp,
                                      const OpaqueAuth& cred) {
  const NfsProc& readdir = *FindNfsProc(NFSPROC3_READDIR);
  if (upstream_lacks_plus_ || (exp.id() < 64 && ((exports_lacking_plus_ >> exp.id()) & 1))) {
    Forward(readdir, call, args, exp, cred);
    return;
  }
  const auto* a = static_cast<const READDIR3args*>(args->get());
  const uint32_t count = std::min(a->count, options_.max_transfer);
  READDIRPLUS3args plus = PlusArgsForReaddir(*a, options_.max_transfer);
  std::string wire;
  auto plus_args = std::make_shared<XdrBox>(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3args),
                                            sizeof(READDIRPLUS3args));
  if (!XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3args), &plus, &wire) ||
      !plus_args->Decode(wire)) {
    Forward(readdir, call, args, exp, cred);
    return;
  }
  // Single flight among identical client READDIRs (they get converted
  // results, so they never join a forwarded call's raw reply), while no
  // mutation was answered since the first left (Joinable).
  std::string flight = FlightKey(NFSPROC3_READDIR, exp.id(), cred, call->args());
  flight.push_back('+');
  auto [slot, first] = joined_.try_emplace(flight);
  if (first) {
    StartFlight(&slot->second);
  } else if (Joinable(slot->second, readdir, args->get())) {
    slot->second.calls.push_back(call);
    stats_[NFSPROC3_READDIR].coalesced++;
    return;
  } else {
    flight.clear();  // this one goes on its own
  }
  const Export* e = &exp;
  auto done = [this, &readdir, e, call, args, plus_args, cred, flight,
               count](StatusOr<RpcReply> r) {
    std::vector<std::shared_ptr<IncomingCall>> calls{call};
    if (auto it = flight.empty() ? joined_.end() : joined_.find(flight); it != joined_.end()) {
      calls.insert(calls.end(), it->second.calls.begin(), it->second.calls.end());
      joined_.erase(it);
    }
    std::string results;
    if (!r.ok()) {
      stats_[NFSPROC3_READDIR].upstream_errors++;
      NFSEDGE_LOG(kWarn) << "NFS3 READDIR (as READDIRPLUS) for " << call->peer().ToString()
                         << ": " << r.status().ToString() << "; answering NFS3ERR_JUKEBOX";
      results = EncodeNfsError(readdir, NFS3ERR_JUKEBOX);
    } else if (r->header.reply_stat == kMsgAccepted &&
               (r->header.accept_stat == kProcUnavail || r->header.accept_stat == kGarbageArgs)) {
      // An upstream that does not know READDIRPLUS (PROC_UNAVAIL, or
      // GARBAGE_ARGS three times in a row): its READDIRs as they are from
      // now on. One GARBAGE_ARGS (a glitch): this READDIR as it is.
      if (r->header.accept_stat == kProcUnavail || ++plus_garbage_ >= 3) LackingPlus(nullptr);
      for (const auto& c : calls) Forward(readdir, c, args, *e, cred);
      return;
    } else if (RefusesTheProgram(r->header)) {
      NFSEDGE_LOG(kWarn) << "NFS3 READDIR (as READDIRPLUS): the upstream refused the program ("
                         << DescribeRefusal(r->header) << "); answering NFS3ERR_SERVERFAULT";
      results = EncodeNfsError(readdir, NFS3ERR_SERVERFAULT);
    } else if (r->header.reply_stat != kMsgAccepted || r->header.accept_stat != kSuccess) {
      // Refused at the RPC level (credential, program): the same answer.
      for (const auto& c : calls) {
        std::string copy = r->record;
        StoreBE32(copy.data(), c->xid());
        c->Reply(std::move(copy));
      }
      return;
    } else {
      plus_garbage_ = 0;
      LearnAndSpeculate(*FindNfsProc(NFSPROC3_READDIRPLUS), plus_args->get(), &*r, *e, cred);
      XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
      if (!res.Decode(r->results())) {
        NFSEDGE_LOG(kWarn) << "NFS3 READDIRPLUS: upstream results do not decode";
        results = EncodeNfsError(readdir, NFS3ERR_SERVERFAULT);
      } else if (res->status == NFS3ERR_NOTSUPP) {
        // An export without READDIRPLUS (Linux's `nordirplus`): its
        // READDIRs as they are.
        LackingPlus(e);
        for (const auto& c : calls) Forward(readdir, c, args, *e, cred);
        return;
      } else {
        results = ReaddirFromPlus(res.get(), count);
      }
    }
    for (const auto& c : calls) c->ReplySuccess(results);
  };
  Status s = upstream_.CallExpecting(kNfsProgram, kNfsVersion, NFSPROC3_READDIRPLUS, cred, wire,
                                     ExpectedListing(plus), std::move(done));
  if (!s.ok()) {
    if (!flight.empty()) joined_.erase(flight);
    stats_[NFSPROC3_READDIR].upstream_errors++;
    NFSEDGE_LOG(kWarn) << "NFS3 READDIR: " << s.ToString();
    call->ReplySuccess(EncodeNfsError(readdir, NFS3ERR_JUKEBOX));
  }
}

void NfsService::LackingPlus(const Export* exp) {
  if (exp == nullptr) {
    if (upstream_lacks_plus_) return;
    upstream_lacks_plus_ = true;
    NFSEDGE_LOG(kWarn) << "the upstream does not answer READDIRPLUS: client READDIRs go to it "
                          "as they are from now on (no listings from cache)";
    return;
  }
  const uint64_t bit = exp->id() < 64 ? uint64_t{1} << exp->id() : 0;
  if (bit == 0 || (exports_lacking_plus_ & bit) != 0) return;
  exports_lacking_plus_ |= bit;
  NFSEDGE_LOG(kWarn) << "the upstream answers READDIRPLUS NOTSUPP on export " << exp->config().path
                     << ": its client READDIRs go as they are from now on (no listings from cache)";
}

uint64_t NfsService::ExpectedListing(const READDIRPLUS3args& a) const {
  if (cache_ == nullptr) return a.maxcount;
  CookieVerf verf{};
  std::copy(a.cookieverf, a.cookieverf + NFS3_COOKIEVERFSIZE, verf.begin());
  return cache_->ListingReplyHint(std::string_view(a.dir.data.data_val, a.dir.data.data_len),
                                  a.cookie, verf, a.maxcount);
}

}  // namespace nfsedge
