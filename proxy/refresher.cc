#include "proxy/refresher.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proxy/dir_listing.h"
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

OpaqueAuth Refresher::AnonCred(const Export& exp) {
  AuthSys anon{0, "nfsedge", exp.config().anon_uid, exp.config().anon_gid, {}};
  return OpaqueAuth{kAuthSys, EncodeAuthSys(anon)};
}

void Refresher::Tick() {
  if (in_flight_ >= options_.max_in_flight) return;
  // More candidates than calls: several may share one listing.
  const size_t room = options_.max_in_flight - in_flight_;
  std::vector<std::string> candidates = cache_.RefreshCandidates(options_.window, 4 * room);
  std::unordered_map<std::string, int> per_dir;
  std::vector<std::optional<std::string>> parents;
  parents.reserve(candidates.size());
  for (const std::string& h : candidates) {
    parents.push_back(cache_.ParentOf(h));
    if (parents.back()) per_dir[*parents.back()]++;
  }
  std::unordered_set<std::string> listed, unlisted;  // listing sent / could not be
  std::vector<std::string> left;  // no room for their call: handed back
  bool full = false;              // the upstream took no more
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::string& handle = candidates[i];
    const std::optional<std::string>& dir = parents[i];
    if (dir && listed.contains(*dir)) continue;  // that listing brings it too
    if (full || in_flight_ >= options_.max_in_flight) {
      left.push_back(handle);
      continue;
    }
    if (dir && per_dir[*dir] >= 2 && !unlisted.contains(*dir)) {
      std::optional<uint32_t> dir_export = handles_.Find(*dir);
      if (dir_export && SendListing(*dir, exports_.Get(*dir_export), 0, {}, 0)) {
        listed.insert(*dir);
        continue;
      }
      unlisted.insert(*dir);  // its entries one by one
    }
    std::optional<uint32_t> export_id = handles_.Find(handle);
    if (!export_id) continue;
    if (!SendGetattr(handle, exports_.Get(*export_id))) {
      full = true;
      left.push_back(handle);
    }
  }
  cache_.ReturnRefreshCandidates(left);
}

bool Refresher::SendGetattr(const std::string& handle, const Export& exp) {
  std::string copy = handle;
  GETATTR3args args{};
  args.object.data.data_val = copy.data();
  args.object.data.data_len = static_cast<u_int>(copy.size());
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args), &args, &wire);
  const Export* e = &exp;
  Status s = upstream_.Call(
      kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, AnonCred(exp), wire,
      [this, copy, e](StatusOr<RpcReply> r) mutable {
        in_flight_--;
        if (!Succeeded(r)) return;
        GETATTR3args a{};
        a.object.data.data_val = copy.data();
        a.object.data.data_len = static_cast<u_int>(copy.size());
        cache_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &a, r->results(), *e, CredKey::AuthNone(),
                     SentOf(*r));
      });
  if (!s.ok()) return false;
  in_flight_++;
  sent_++;
  return true;
}

bool Refresher::SendListing(const std::string& dir, const Export& exp, uint64_t cookie,
                            const std::array<char, 8>& verf, int page) {
  // A directory of more pages than this is left to GETATTRs next time.
  constexpr int kMaxPages = 16;
  if (page >= kMaxPages) return false;
  std::string copy = dir;
  // The arguments point into `copy`: made again where it lives.
  auto make_args = [cookie, verf](std::string& d) {
    READDIRPLUS3args a{};
    a.dir.data.data_val = d.data();
    a.dir.data.data_len = static_cast<u_int>(d.size());
    a.cookie = cookie;
    std::copy(verf.begin(), verf.end(), a.cookieverf);
    a.dircount = kListingDircount;
    a.maxcount = kListingMaxcount;
    return a;
  };
  READDIRPLUS3args args = make_args(copy);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3args), &args, &wire);
  const Export* e = &exp;
  // Counted in flight at the size of the page it refreshes, not maxcount.
  const uint64_t expected = cache_.ListingReplyHint(dir, cookie, verf, kListingMaxcount);
  Status s = upstream_.CallExpecting(
      kNfsProgram, kNfsVersion, NFSPROC3_READDIRPLUS, AnonCred(exp), wire, expected,
      [this, copy, e, make_args, page, cookie](StatusOr<RpcReply> r) mutable {
        in_flight_--;
        if (!Succeeded(r)) return;
        READDIRPLUS3args a = make_args(copy);
        cache_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &a, r->results(), *e,
                     CredKey::AuthNone(), SentOf(*r));
        XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
        if (!res.Decode(r->results()) || res->status != NFS3_OK) return;
        const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
        if (ok.reply.eof) return;
        uint64_t last = 0;
        for (const entryplus3* en = ok.reply.entries; en != nullptr; en = en->nextentry) {
          last = en->cookie;
        }
        if (last == 0 || last == cookie) return;  // no way on (a server's fault)
        std::array<char, 8> next_verf{};
        std::copy(ok.cookieverf, ok.cookieverf + 8, next_verf.begin());
        SendListing(copy, *e, last, next_verf, page + 1);
      });
  if (!s.ok()) return false;
  in_flight_++;
  listings_++;
  return true;
}

}  // namespace nfsedge
