#include "proxy/refresher.h"

#include "rpc/auth_sys.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

Refresher::Refresher(event_base* base, MetadataCache& cache, HandleRegistry& handles,
                     const ExportTable& exports, RpcCaller& upstream, RefresherOptions options)
    : cache_(cache),
      handles_(handles),
      exports_(exports),
      upstream_(upstream),
      options_(options),
      timer_(base, [this] { Tick(); }) {}

void Refresher::Start() {
  if (options_.window > Duration::zero()) timer_.ArmPeriodic(options_.period);
}

void Refresher::SetWindow(Duration window) {
  options_.window = window;
  timer_.Cancel();
  Start();
}

void Refresher::Tick() {
  if (in_flight_ >= options_.max_in_flight) return;
  for (const std::string& handle :
       cache_.RefreshCandidates(options_.window, options_.max_in_flight - in_flight_)) {
    std::optional<uint32_t> export_id = handles_.Find(handle);
    if (!export_id) continue;
    const Export& exp = exports_.Get(*export_id);
    AuthSys anon{0, "nfsedge", exp.config().anon_uid, exp.config().anon_gid, {}};
    OpaqueAuth cred{kAuthSys, EncodeAuthSys(anon)};
    std::string copy = handle;
    GETATTR3args args{};
    args.object.data.data_val = copy.data();
    args.object.data.data_len = static_cast<u_int>(copy.size());
    std::string wire;
    XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args), &args, &wire);
    const Export* e = &exp;
    Status s = upstream_.Call(
        kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, cred, wire,
        [this, copy, e](StatusOr<RpcReply> r) mutable {
          in_flight_--;
          if (!r.ok() || r->header.reply_stat != kMsgAccepted ||
              r->header.accept_stat != kSuccess) {
            return;
          }
          GETATTR3args a{};
          a.object.data.data_val = copy.data();
          a.object.data.data_len = static_cast<u_int>(copy.size());
          cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &a, r->results(), *e, CredKey::AuthNone());
        });
    if (!s.ok()) return;
    in_flight_++;
    sent_++;
  }
}

}  // namespace nfsedge
