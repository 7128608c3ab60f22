#include "proxy/prefetcher.h"

#include <algorithm>
#include <cstring>

#include "proxy/dir_listing.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// Directories remembered as listed in full (per credential and export), to
// see a walk begin.
constexpr size_t kMaxListed = 4096;
// A listing is asked again at most this often (an export whose lifetimes
// are zero never has a fresh one).
constexpr Duration kRelistAfter = std::chrono::seconds(1);

}  // namespace

Prefetcher::Prefetcher(const Clock& clock, MetadataCache& meta, ReadPath* read_path,
                       RpcCaller& upstream, LearnFn learn, const PrefetchOptions& options)
    : clock_(clock),
      meta_(meta),
      read_path_(read_path),
      upstream_(upstream),
      learn_(std::move(learn)),
      options_(options) {}

void Prefetcher::OnClientListing(std::string_view dir, const READDIRPLUS3resok& ok,
                                 const Export& exp, const OpaqueAuth& cred) {
  if (!options_.enabled) return;
  const MonoTime now = clock_.MonoNow();
  WalkDir at;
  const std::string who =
      std::string(CredKeyOf(cred).bytes()) + ":" + std::to_string(exp.id()) + ":";
  const size_t walker = std::hash<std::string>{}(who);
  const WalkDir* known = walk_dirs_.Find(dir);
  if (known && Active(known->walk) && known->walker == walker) {
    at = *known;
  } else if (ok.reply.eof) {
    // The last page: the client has read the directory in full.
    std::optional<std::string> parent = meta_.ParentOf(dir);
    const MonoTime* parent_listed = parent ? listed_.Peek(who + *parent) : nullptr;
    const bool below = parent_listed && now - *parent_listed <= options_.walk_idle;
    // A directory of this client's own walk, which stopped.
    const bool resumed = known != nullptr && known->walker == walker;
    listed_.Put(who + std::string(dir), now);
    while (listed_.size() > kMaxListed) listed_.Erase(listed_.Oldest()->key);
    if (below) {
      // A directory right below one listed just before: a walk, from the
      // parent, whose listing is asked again for the rest of its subtree.
      at = WalkDir{StartWalk(*parent), 1, walker};
      walk_dirs_.Put(*parent, WalkDir{at.walk, 0, walker});
      // Asked again even if listed before (a second walk of the tree): its
      // listing is what takes the new walk to the rest of its subtree.
      ListAgain(*parent, exp, cred, at.walk);
    } else if (resumed) {
      at = WalkDir{StartWalk(dir), 0, walker};
      // The client read the pages before this one while no walk was on:
      // the directory is listed again for the subdirectories in them.
      if (known->depth == 0) ListAgain(dir, exp, cred, at.walk);
    } else {
      return;  // one listing is not a walk (yet)
    }
  } else {
    return;
  }
  walks_[at.walk].last = now;
  walk_dirs_.Put(dir, at);
  while (walk_dirs_.size() > options_.max_seen) walk_dirs_.Erase(walk_dirs_.Oldest()->key);
  OnListing(dir, ok, exp, cred, at.depth, at.walk);
}

void Prefetcher::ListAgain(std::string_view dir, const Export& exp, const OpaqueAuth& cred,
                           uint64_t walk) {
  Job job;
  job.kind = Kind::kList;
  job.fh = std::string(dir);
  job.exp = &exp;
  job.cred = cred;
  job.walk = walk;
  Queue(std::move(job), /*front=*/false, /*again=*/true);
}

void Prefetcher::OnClientCall(std::string_view fh) {
  if (walks_.empty()) return;
  const WalkDir* d = walk_dirs_.Peek(fh);
  if (!d) {
    std::optional<std::string> parent = meta_.ParentOf(fh);
    if (parent) d = walk_dirs_.Peek(*parent);
  }
  if (d && Active(d->walk)) walks_[d->walk].last = clock_.MonoNow();
  // Work the upstream's full queue refused, with no call in flight to
  // resume it when it finishes: tried again at the walk's client calls.
  if (refused_ && in_flight_ == 0) Pump();
}

uint64_t Prefetcher::StartWalk(std::string_view root) {
  const MonoTime now = clock_.MonoNow();
  for (auto it = walks_.begin(); it != walks_.end();) {
    if (now - it->second.last > options_.walk_idle) {
      stats_.walks_stopped++;
      it = walks_.erase(it);
    } else {
      ++it;
    }
  }
  const uint64_t id = next_walk_++;
  walks_[id] = Walk{now, Rules()};
  stats_.walks++;
  NFSEDGE_LOG(kDebug) << "prefetch: walk " << id << " from a directory of " << root.size()
                      << "-byte handle";
  return id;
}

bool Prefetcher::Active(uint64_t walk) {
  if (walk == 0) return true;
  auto it = walks_.find(walk);
  if (it == walks_.end()) return false;
  if (it->second.rules == Rules() && clock_.MonoNow() - it->second.last <= options_.walk_idle) {
    return true;
  }
  stats_.walks_stopped++;
  walks_.erase(it);
  return false;
}

void Prefetcher::OnListing(std::string_view dir, const READDIRPLUS3resok& ok, const Export& exp,
                           const OpaqueAuth& cred, uint32_t depth, uint64_t walk) {
  if (!options_.enabled) return;
  std::optional<size_t> walker;  // the walk's directories are remembered
  if (walk != 0) {
    if (const WalkDir* d = walk_dirs_.Peek(dir)) walker = d->walker;
  }
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
    base.walk = walk;
    if (a.type == NF3DIR || a.type == NF3REG) Queue(base);
    if (a.type == NF3DIR && depth < options_.max_depth) {
      Job list = base;
      list.kind = Kind::kList;
      list.depth = depth + 1;
      if (walker) {
        walk_dirs_.Put(list.fh, WalkDir{walk, list.depth, *walker});
        while (walk_dirs_.size() > options_.max_seen) walk_dirs_.Erase(walk_dirs_.Oldest()->key);
      }
      Queue(std::move(list));
    } else if (a.type == NF3LNK && meta_.KeepsLinks() && LifetimesOf(exp).reg.max > Duration(0)) {
      // A symlink's target, for the walk's credential (the link cache
      // keeps it per credential; none to read when it keeps nothing, or
      // the export answers nothing from cache).
      Job link = base;
      link.kind = Kind::kLink;
      link.version = ChangeId::FromFattr(a);
      Queue(std::move(link));
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

std::string Prefetcher::SeenKey(const Job& job) {
  return std::to_string(static_cast<int>(job.kind)) + ":" +
         std::string(CredKeyOf(job.cred).bytes()) + ":" + job.fh;
}

void Prefetcher::Queue(Job job, bool front, bool again) {
  if (job.rules == 0) job.rules = Rules();
  if (queue_.size() >= options_.max_queue) {
    // Room first from the work of walks that stopped: looked for at most
    // once per kPurgeEvery (a walk stops walk_idle after its last call), not
    // at every job a full queue turns away (a listing of thousands of
    // entries would scan the whole queue for each, holding the loop).
    const MonoTime now = clock_.MonoNow();
    if (last_purge_ == MonoTime{} || now - last_purge_ >= kPurgeEvery) {
      last_purge_ = now;
      std::erase_if(queue_, [this](const Job& j) { return Drop(j); });
    }
  }
  if (queue_.size() >= options_.max_queue) {
    stats_.dropped++;  // not remembered: a later listing may queue it again
    if (job.kind == Kind::kList && job.cookie != 0) Unsee(job);  // nor its first page
    return;
  }
  if (!front) {
    std::string seen = SeenKey(job);
    const MonoTime now = clock_.MonoNow();
    if (const SeenAt* at = seen_.Find(seen)) {
      if (!again && !Relist(job, *at)) return;
      stats_.relists++;
    }
    seen_.Put(seen, SeenAt{now, job.walk});
    while (seen_.size() > options_.max_seen) seen_.Erase(seen_.Oldest()->key);
  }
  stats_.queued++;
  if (front) {
    queue_.push_front(std::move(job));
  } else {
    queue_.push_back(std::move(job));
  }
}

std::string Prefetcher::PageKey(std::string_view dir, uint64_t cookie, const OpaqueAuth& cred) {
  return std::string(CredKeyOf(cred).bytes()) + ":" + std::to_string(cookie) + ":" +
         std::string(dir);
}

bool Prefetcher::Relist(const Job& job, const SeenAt& seen) {
  // Once per walk: the walk's own listings, each met again as the client
  // lists the directory above it, would list every directory once per
  // level above it (a listing no longer fresh at once with no lifetimes).
  if (job.walk != 0 && seen.walk == job.walk) return false;
  return job.kind == Kind::kList && job.cookie == 0 &&
         clock_.MonoNow() - seen.at >= kRelistAfter &&
         !pages_in_flight_.contains(PageKey(job.fh, 0, job.cred)) && !meta_.ListingFresh(job.fh);
}

bool Prefetcher::AwaitListing(std::string_view dir, uint64_t cookie, const OpaqueAuth& cred,
                              const Export& exp, std::function<void()> then) {
  if (LifetimesOf(exp).dir.max <= Duration(0)) return false;
  auto it = pages_in_flight_.find(PageKey(dir, cookie, cred));
  if (it == pages_in_flight_.end()) return false;
  // It may wait in the scheduler behind bulk data: the client's own call
  // goes at once on the metadata lane instead.
  if (background_waiting_ && background_waiting_()) return false;
  it->second.push_back(std::move(then));
  stats_.awaited++;
  return true;
}

bool Prefetcher::Drop(const Job& job) {
  if (job.rules == Rules() && Active(job.walk)) return false;
  stats_.discarded++;
  Unsee(job);  // a listing's later page too: its first does not make it listed
  return true;
}

void Prefetcher::Unsee(const Job& job) {
  // Not another walk's entry: a later walk that met the object meanwhile
  // queued its own work for it.
  const std::string key = SeenKey(job);
  if (const SeenAt* at = seen_.Peek(key); at != nullptr && at->walk == job.walk) seen_.Erase(key);
}

void Prefetcher::Pump() {
  while (in_flight_ < options_.max_in_flight && !queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    if (Drop(job)) continue;
    if (!Send(job)) {
      // The upstream's queue is full (scheduler.max_queued): the job waits
      // at the head, and the rest behind it, for a call to finish, a
      // client call in the walk or Resume(), instead of each being refused
      // in turn and lost.
      queue_.push_front(std::move(job));
      stats_.deferred++;
      refused_ = true;
      return;
    }
    refused_ = false;
  }
}

bool Prefetcher::Send(const Job& job) {
  switch (job.kind) {
    case Kind::kAccess:
      return meta_.HasAccess(job.fh, CredKeyOf(job.cred), kAllAccessBits) || SendAccess(job);
    case Kind::kList:
      return SendList(job);
    case Kind::kData:
      return SendData(job);
    case Kind::kLink:
      return meta_.HasLink(job.fh, job.version, CredKeyOf(job.cred)) || SendLink(job);
  }
  return true;
}

bool Prefetcher::SendData(const Job& job) {
  // A file larger than one upstream read (a warm reads files up to
  // control.warm_file_bytes) is read whole, one read at a time, each from
  // the first block after the last fetch's first that is not cached yet:
  // a reply cut short (the upstream's rtmax below the read size) leaves no
  // hole, and a fetch that stored nothing (an error, a new version) ends it.
  auto next = std::make_shared<Job>(job);
  ReadPath::PrefetchPart part;
  in_flight_++;
  const bool sent = read_path_->PrefetchFile(
      job.fh, job.size, job.version, *job.exp, job.cred,
      [this, next] {
        if (next->offset < next->size && read_path_ &&
            read_path_->HasBlockAt(next->fh, next->offset - 1, next->version)) {
          Queue(std::move(*next), /*front=*/true);
        }
        Finished();
      },
      job.offset, &part, options_.data_through_own_caller ? &upstream_ : nullptr);
  if (!sent) {
    in_flight_--;
    return !part.refused;
  }
  if (job.offset == 0) stats_.files++;
  next->offset = part.first_end;  // the block after the first one fetched
  return true;
}

bool Prefetcher::SendAccess(const Job& job) {
  ACCESS3args tmp{};
  tmp.object = FhView(job.fh);
  tmp.access = kAllAccessBits;
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_ACCESS3args), &tmp, &wire);
  auto box =
      std::make_shared<XdrBox>(reinterpret_cast<xdrproc_t>(xdr_ACCESS3args), sizeof(ACCESS3args));
  if (!box->Decode(wire)) return true;
  if (!Call(job, NFSPROC3_ACCESS, std::move(wire), box)) return false;
  stats_.access++;
  return true;
}

bool Prefetcher::SendLink(const Job& job) {
  READLINK3args tmp{};
  tmp.symlink = FhView(job.fh);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READLINK3args), &tmp, &wire);
  auto box = std::make_shared<XdrBox>(reinterpret_cast<xdrproc_t>(xdr_READLINK3args),
                                      sizeof(READLINK3args));
  if (!box->Decode(wire)) return true;
  if (!Call(job, NFSPROC3_READLINK, std::move(wire), box)) return false;
  stats_.links++;
  return true;
}

bool Prefetcher::SendList(const Job& job) {
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
  if (!box->Decode(wire)) return true;
  // Counted in flight at what the page is expected to bring, not maxcount
  // (256 KiB: a walk's listings would fill the window many times over): the
  // page stored for it, else twice the walk's listings so far.
  CookieVerf verf{};
  std::copy(tmp.cookieverf, tmp.cookieverf + NFS3_COOKIEVERFSIZE, verf.begin());
  const uint64_t otherwise =
      list_bytes_avg_ == 0 ? kListingMaxcount
                           : std::min<uint64_t>(kListingMaxcount, 2 * list_bytes_avg_);
  const uint64_t expected = meta_.ListingReplyHint(job.fh, job.cookie, verf, otherwise);
  if (!Call(job, NFSPROC3_READDIRPLUS, std::move(wire), box, expected)) return false;
  stats_.lists++;
  return true;
}

bool Prefetcher::Call(const Job& job, uint32_t proc, std::string wire,
                      std::shared_ptr<XdrBox> args, uint64_t expected_reply) {
  const NfsProc* p = FindNfsProc(proc);
  const std::string page =
      proc == NFSPROC3_READDIRPLUS ? PageKey(job.fh, job.cookie, job.cred) : std::string();
  // Registered before the call: its reply may come at once.
  const bool registered = !page.empty() && pages_in_flight_.try_emplace(page).second;
  auto done = [this, p, job, args, page](StatusOr<RpcReply> r) {
    if (!Succeeded(r)) {
      stats_.errors++;
      // A later page that did not come (the first did): the listing is
      // not whole. (A first page that fails stays seen: asked again once
      // a second at most, Relist.)
      if (job.kind == Kind::kList && job.cookie != 0) Unsee(job);
      ReleasePage(page);
      Finished();
      return;
    }
    learn_(*p, args->get(), &*r, *job.exp, job.cred);
    if (p->proc == NFSPROC3_READDIRPLUS) {
      const uint64_t size = r->results().size();
      list_bytes_avg_ = list_bytes_avg_ == 0 ? size : (7 * list_bytes_avg_ + size) / 8;
      XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
      const bool decoded = res.Decode(r->results());
      const bool listed = decoded && res->status == NFS3_OK;
      if (!Active(job.walk)) {
        // The walk stopped: later pages are not asked, and the directory is
        // not taken for listed (a later walk would find its first page
        // fresh and never ask the rest).
        if (listed && !res->READDIRPLUS3res_u.resok.reply.eof) Unsee(job);
      } else if (listed) {
        const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
        const entryplus3* last = ok.reply.entries;
        while (last && last->nextentry) last = last->nextentry;
        // Not at the end, but no way on (or cookies going round): asking
        // again would bring the same pages for as long as the walk lasts.
        constexpr uint32_t kMaxPages = 4096;  // 1 GiB of listing at 256 KiB a page
        if (!ok.reply.eof && last &&
            (last->cookie == 0 || last->cookie == job.cookie || job.page + 1 >= kMaxPages)) {
          stats_.errors++;
          NFSEDGE_LOG(kDebug) << "prefetch: listing page " << job.page << " ends at cookie "
                              << last->cookie << " (began at " << job.cookie
                              << "): the listing stops there";
        } else if (!ok.reply.eof && last) {
          Job next = job;
          next.page = job.page + 1;
          next.cookie = last->cookie;
          next.verf.assign(ok.cookieverf, NFS3_COOKIEVERFSIZE);
          Queue(std::move(next), /*front=*/true);
        }
        if (job.rules == Rules()) OnListing(job.fh, ok, *job.exp, job.cred, job.depth, job.walk);
      } else {
        stats_.errors++;
        // A later page refused for now (JUKEBOX): the listing is not whole.
        // Another error is the directory's (ACCES, STALE): not asked again
        // at every listing of its parent.
        if (job.cookie != 0 && decoded && res->status == NFS3ERR_JUKEBOX) {
          Unsee(job);
        }
      }
    }
    ReleasePage(page);
    Finished();
  };
  Status s = expected_reply == 0
                 ? upstream_.Call(kNfsProgram, kNfsVersion, proc, job.cred, wire, std::move(done))
                 : upstream_.CallExpecting(kNfsProgram, kNfsVersion, proc, job.cred, wire,
                                           expected_reply, std::move(done));
  if (!s.ok()) {
    if (registered) pages_in_flight_.erase(page);
    NFSEDGE_LOG(kDebug) << "prefetch: " << s.ToString();
    return false;
  }
  in_flight_++;
  return true;
}

void Prefetcher::ReleasePage(const std::string& page) {
  if (page.empty()) return;
  auto it = pages_in_flight_.find(page);
  if (it == pages_in_flight_.end()) return;
  std::vector<std::function<void()>> waiting = std::move(it->second);
  pages_in_flight_.erase(it);
  for (auto& then : waiting) then();
}

void Prefetcher::Finished() {
  in_flight_--;
  Pump();
}

}  // namespace nfsedge
