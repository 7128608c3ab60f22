#include "proxy/prefetcher.h"

#include <cstring>

#include "proxy/dir_listing.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// Asked of the upstream per listing page: large pages cost fewer round trips.

}  // namespace

Prefetcher::Prefetcher(MetadataCache& meta, ReadPath* read_path, RpcCaller& upstream,
                       LearnFn learn, const PrefetchOptions& options)
    : meta_(meta),
      read_path_(read_path),
      upstream_(upstream),
      learn_(std::move(learn)),
      options_(options) {}

void Prefetcher::OnListing(std::string_view dir, const READDIRPLUS3resok& ok, const Export& exp,
                           const OpaqueAuth& cred, uint32_t depth) {
  if (!options_.enabled) return;
  for (const entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
    if (!e->name_handle.handle_follows || !e->name_attributes.attributes_follow) continue;
    std::string_view name(e->name ? e->name : "");
    if (name == "." || name == "..") continue;
    const nfs_fh3& h = e->name_handle.post_op_fh3_u.handle;
    if (h.data.data_len == 0) continue;
    const fattr3& a = e->name_attributes.post_op_attr_u.attributes;
    Job base;
    base.kind = Kind::kAccess;
    base.fh.assign(h.data.data_val, h.data.data_len);
    base.exp = &exp;
    base.cred = cred;
    if (a.type == NF3DIR || a.type == NF3REG) Queue(base);
    if (a.type == NF3DIR && depth < options_.max_depth) {
      Job list = base;
      list.kind = Kind::kList;
      list.depth = depth + 1;
      Queue(std::move(list));
    } else if (a.type == NF3REG && read_path_ && a.size > 0 &&
               a.size <= options_.small_file_bytes) {
      Job data = base;
      data.kind = Kind::kData;
      data.size = a.size;
      data.version = ChangeId::FromFattr(a);
      Queue(std::move(data));
    }
  }
  (void)dir;
  Pump();
}

void Prefetcher::Queue(Job job, bool front) {
  if (queue_.size() >= options_.max_queue) {
    stats_.dropped++;  // not remembered: a later listing may queue it again
    return;
  }
  if (!front) {
    std::string seen = std::to_string(static_cast<int>(job.kind)) + ":" +
                       std::string(CredKeyOf(job.cred).bytes()) + ":" + job.fh;
    if (seen_.Find(seen)) return;
    seen_.Put(seen, true);
    while (seen_.size() > options_.max_seen) seen_.Erase(seen_.Oldest()->key);
  }
  stats_.queued++;
  if (front) {
    queue_.push_front(std::move(job));
  } else {
    queue_.push_back(std::move(job));
  }
}

void Prefetcher::Pump() {
  while (in_flight_ < options_.max_in_flight && !queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    Send(std::move(job));
  }
}

void Prefetcher::Send(Job job) {
  switch (job.kind) {
    case Kind::kAccess:
      if (!meta_.HasAccess(job.fh, CredKeyOf(job.cred), kAllAccessBits)) SendAccess(job);
      return;
    case Kind::kList:
      SendList(job);
      return;
    case Kind::kData:
      in_flight_++;
      if (read_path_->PrefetchFile(job.fh, job.size, job.version, *job.exp, job.cred,
                                   [this] { Finished(); })) {
        stats_.files++;
      } else {
        in_flight_--;
      }
      return;
  }
}

void Prefetcher::SendAccess(const Job& job) {
  ACCESS3args tmp{};
  tmp.object = FhView(job.fh);
  tmp.access = kAllAccessBits;
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_ACCESS3args), &tmp, &wire);
  auto box = std::make_shared<XdrBox>(reinterpret_cast<xdrproc_t>(xdr_ACCESS3args),
                                      sizeof(ACCESS3args));
  if (!box->Decode(wire)) return;
  if (Call(job, NFSPROC3_ACCESS, std::move(wire), box)) stats_.access++;
}

void Prefetcher::SendList(const Job& job) {
  READDIRPLUS3args tmp{};
  tmp.dir = FhView(job.fh);
  tmp.cookie = job.cookie;
  if (job.verf.size() == NFS3_COOKIEVERFSIZE) {
    std::memcpy(tmp.cookieverf, job.verf.data(), NFS3_COOKIEVERFSIZE);
  }
  tmp.dircount = kListingDircount;
  tmp.maxcount = kListingMaxcount;
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3args), &tmp, &wire);
  auto box = std::make_shared<XdrBox>(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3args),
                                      sizeof(READDIRPLUS3args));
  if (!box->Decode(wire)) return;
  if (Call(job, NFSPROC3_READDIRPLUS, std::move(wire), box)) stats_.lists++;
}

bool Prefetcher::Call(const Job& job, uint32_t proc, std::string wire,
                      std::shared_ptr<XdrBox> args) {
  const NfsProc* p = FindNfsProc(proc);
  Status s = upstream_.Call(
      kNfsProgram, kNfsVersion, proc, job.cred, wire,
      [this, p, job, args](StatusOr<RpcReply> r) {
        if (!Succeeded(r)) {
          stats_.errors++;
          Finished();
          return;
        }
        learn_(*p, args->get(), &*r, *job.exp, job.cred);
        if (p->proc == NFSPROC3_READDIRPLUS) {
          XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
          if (res.Decode(r->results()) && res->status == NFS3_OK) {
            const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
            const entryplus3* last = ok.reply.entries;
            while (last && last->nextentry) last = last->nextentry;
            if (!ok.reply.eof && last) {
              Job next = job;
              next.cookie = last->cookie;
              next.verf.assign(ok.cookieverf, NFS3_COOKIEVERFSIZE);
              Queue(std::move(next), /*front=*/true);
            }
            OnListing(job.fh, ok, *job.exp, job.cred, job.depth);
          } else {
            stats_.errors++;
          }
        }
        Finished();
      });
  if (!s.ok()) {
    NFSEDGE_LOG(kDebug) << "prefetch: " << s.ToString();
    return false;
  }
  in_flight_++;
  return true;
}

void Prefetcher::Finished() {
  in_flight_--;
  Pump();
}

}  // namespace nfsedge
