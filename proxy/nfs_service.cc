#include "proxy/nfs_service.h"

#include <algorithm>
#include <string_view>

#include "rpc/auth_sys.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

void ClampFsinfo(FSINFO3resok* ok, uint32_t max);

// `results` (a successful FSINFO's) with the transfer sizes clamped.
std::string ClampedFsinfo(const std::string& results, uint32_t max) {
  XdrValue<FSINFO3res> res(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res));
  if (!res.Decode(results) || res->status != NFS3_OK) return results;
  ClampFsinfo(&res->FSINFO3res_u.resok, max);
  std::string out;
  return XdrEncode(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res), &res.get(), &out) ? out : results;
}

void ClampFsinfo(FSINFO3resok* ok, uint32_t max) {
  for (uint32_t* v : {&ok->rtmax, &ok->rtpref, &ok->wtmax, &ok->wtpref, &ok->dtpref}) {
    *v = std::min(*v, max);
  }
}

// The bytes the reply to a call of `proc` with `args` may take beyond a few
// hundred: a READ's data, a READDIR's listing, as asked, up to the largest
// transfer the proxy offers.
size_t ReplyRoom(uint32_t proc, const void* args, uint32_t max_transfer) {
  uint32_t n = 0;
  switch (proc) {
    case NFSPROC3_READ:
      n = static_cast<const READ3args*>(args)->count;
      break;
    case NFSPROC3_READDIR:
      n = static_cast<const READDIR3args*>(args)->count;
      break;
    case NFSPROC3_READDIRPLUS:
      n = static_cast<const READDIRPLUS3args*>(args)->maxcount;
      break;
    default:
      return 0;
  }
  return std::min(n, max_transfer);
}

// Returns the handle of the ".." entry of a listing, or nullptr.
const nfs_fh3* DotDotHandle(const READDIRPLUS3res& res) {
  for (const entryplus3* e = res.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
    if (e->name != nullptr && std::string_view(e->name) == ".." &&
        e->name_handle.handle_follows) {
      return &e->name_handle.post_op_fh3_u.handle;
    }
  }
  return nullptr;
}


// Returns true iff running `p` twice with `args` can give a different result
// than once: the procedures of DESIGN rule 7, and WRITE (a retransmission
// run again after another client's write of the same bytes would undo it;
// the proxy may hold a write long enough for its client to retransmit it).
bool IsNonIdempotent(const NfsProc& p, const void* args) {
  switch (p.proc) {
    case NFSPROC3_WRITE:
    case NFSPROC3_CREATE:
    case NFSPROC3_MKDIR:
    case NFSPROC3_SYMLINK:
    case NFSPROC3_MKNOD:
    case NFSPROC3_REMOVE:
    case NFSPROC3_RMDIR:
    case NFSPROC3_RENAME:
    case NFSPROC3_LINK:
      return true;
    case NFSPROC3_SETATTR:
      return static_cast<const SETATTR3args*>(args)->guard.check;
    default:
      return false;
  }
}

}  // namespace

bool NfsService::IsCacheableCred(const OpaqueAuth& cred) {
  if (cred.flavor != kAuthSys) return false;
  std::optional<AuthSys> sys = DecodeAuthSys(cred.body);
  return sys && sys->gids.size() <= 16;
}

NfsService::NfsService(const ExportTable& exports, HandleRegistry& handles, RpcCaller& upstream,
                       NfsServiceOptions options, MetadataCache* cache, ReadPath* read_path)
    : exports_(exports),
      handles_(handles),
      upstream_(upstream),
      options_(options),
      cache_(cache),
      read_path_(cache ? read_path : nullptr),
      drc_(options.drc_entries) {
  if (cache_ == nullptr) return;
  cache_->SetLifetimeLimit([this](std::string_view fh) -> std::optional<ExportLifetimes> {
    std::optional<ExportSet> set = handles_.Peek(fh);
    if (!set) return std::nullopt;
    std::optional<ExportLifetimes> shortest;
    for (const Export& e : exports_.all()) {
      if (!set->Has(e.id())) continue;
      const ExportLifetimes l = LifetimesOf(e);
      if (!shortest) {
        shortest = l;
        continue;
      }
      shortest->reg.min = std::min(shortest->reg.min, l.reg.min);
      shortest->reg.max = std::min(shortest->reg.max, l.reg.max);
      shortest->dir.min = std::min(shortest->dir.min, l.dir.min);
      shortest->dir.max = std::min(shortest->dir.max, l.dir.max);
    }
    return shortest;
  });
}

void NfsService::Handle(std::shared_ptr<IncomingCall> call) {
  const NfsProc& p = *FindNfsProc(call->header().proc);
  NfsProcStats& st = stats_[p.proc];
  st.calls++;
  if (p.proc == NFSPROC3_NULL) {
    call->ReplySuccess("");
    return;
  }
  auto args = std::make_shared<XdrBox>(p.args_xdr, p.args_size);
  if (!args->Decode(call->args())) {
    NFSEDGE_LOG(kDebug) << "NFS3 " << p.name << " from " << call->peer().ToString()
                        << ": arguments do not decode";
    call->ReplyAccepted(kGarbageArgs);
    return;
  }
  // Held for the call until answered, so that the replies of the calls
  // read stay within server.max_held_call_bytes.
  call->HoldForReply(ReplyRoom(p.proc, args->get(), options_.max_transfer));
  const Export* exp = nullptr;
  nfsstat3 err = Admit(p, args->get(), *call, &exp);
  if (err != NFS3_OK) {
    st.local_errors++;
    NFSEDGE_LOG(kDebug) << "NFS3 " << p.name << " from " << call->peer().ToString()
                        << " refused: status " << err;
    call->ReplySuccess(EncodeNfsError(p, err));
    return;
  }
  // A retransmitted mutation gets the first call's reply (DESIGN rule 7).
  if (IsNonIdempotent(p, args->get()) && !drc_.Admit(call)) return;
  if (p.flags & kMutating) {
    call->AddReplyHook([n = mutations_answered_](std::string_view reply) {
      if (!reply.empty()) ++*n;
    });
  }
  if (prefetcher_ && prefetcher_->walks() > 0 && !(p.flags & kMutating)) {
    // A client call in a walked tree keeps the walk going.
    std::vector<const nfs_fh3*> fhs;
    p.arg_handles(args->get(), &fhs);
    if (!fhs.empty()) prefetcher_->OnClientCall(HandleBytes(*fhs.front()));
  }
  Serve(p, call, args, *exp, exp->MapCredential(call->header().cred));
}

bool NfsService::Readmit(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                         const Export& exp, OpaqueAuth* cred) {
  // The export stays (a reload keeps the exports, changing their rules in
  // place), and so does the handle's place in it: one the registry let go
  // of while the call waited is not refused now.
  const SockAddr& peer = call->peer();
  nfsstat3 err = !exp.AllowsClient(peer) ? NFS3ERR_ACCES
                 : !exp.AllowsPort(peer) ? NFS3ERR_PERM
                                         : ExportRules(p, *call, exp);
  if (err != NFS3_OK) {
    stats_[p.proc].local_errors++;
    NFSEDGE_LOG(kDebug) << "NFS3 " << p.name << " from " << peer.ToString()
                        << " refused after waiting: status " << err;
    call->ReplySuccess(EncodeNfsError(p, err));
    return false;
  }
  *cred = exp.MapCredential(call->header().cred);
  return true;
}

void NfsService::ServeAgain(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                            const std::shared_ptr<XdrBox>& args, const Export& exp,
                            uint64_t before) {
  OpaqueAuth cred;
  if (Readmit(p, call, exp, &cred)) Serve(p, call, args, exp, cred, before);
}

void NfsService::ForwardAgain(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                              const std::shared_ptr<XdrBox>& args, const Export& exp) {
  OpaqueAuth cred;
  if (Readmit(p, call, exp, &cred)) Forward(p, call, args, exp, cred);
}

void NfsService::Serve(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                       const std::shared_ptr<XdrBox>& args, const Export& export_ref,
                       const OpaqueAuth& cred, uint64_t before) {
  NfsProcStats& st = stats_[p.proc];
  const Export* exp = &export_ref;
  if (write_path_ && ServeWrites(p, call, args, *exp, cred, before)) return;
  ParkForOutage(p, call, args, *exp, cred);
  if (read_path_ && p.proc == NFSPROC3_READ && IsCacheableCred(cred)) {
    const auto* a = static_cast<const READ3args*>(args->get());
    // Without ACCESS evidence the read path forwards; the next READ finds it.
    SpeculateAccess(HandleBytes(a->file), *exp, cred);
    AskFsinfo(HandleBytes(a->file), *exp, cred);
    // The read path may wait (a revalidation, a fetch): after a reload
    // meanwhile, the READ meets its export's rules again (client networks,
    // squashing) before it is answered or forwarded.
    const uint64_t rules = exports_.updates();
    read_path_->Serve(
        *a, *exp, cred,
        [this, &p, call, args, exp, cred, rules, before](std::string results) {
          if (exports_.updates() != rules) {
            // Answered as it is if the new rules let it through with the
            // same credential; with another, served again for that one.
            OpaqueAuth now;
            if (!Readmit(p, call, *exp, &now)) return;
            if (now.flavor != cred.flavor || now.body != cred.body) {
              Serve(p, call, args, *exp, now, before);
              return;
            }
          }
          stats_[NFSPROC3_READ].cache_answers++;
          call->ReplySuccess(results);
        },
        [this, &p, call, args, exp, cred, rules] {
          if (exports_.updates() != rules) {
            ForwardAgain(p, call, args, *exp);
          } else {
            Forward(p, call, args, *exp, cred);
          }
        });
    return;
  }
  if (cache_ && (p.flags & kCacheable) && IsCacheableCred(cred)) {
    CredKey key = CredKeyOf(cred);
    if (std::optional<std::string> r = cache_->Answer(p, args->get(), *exp, key)) {
      // The transfer sizes a client is told fit the proxy's records, as
      // the upstream's own FSINFO reply is made to (PostProcess).
      if (p.proc == NFSPROC3_FSINFO) r = ClampedFsinfo(*r, options_.max_transfer);
      if (HoldForBufferedWrites(p, *r, before, [this, &p, call, args, exp](uint64_t at) {
            ServeAgain(p, call, args, *exp, at);
          })) {
        return;
      }
      st.cache_answers++;
      RegisterAnswered(p, *exp, *r);
      call->ReplySuccess(*r);
      // A listing from cache: the walk goes on below it.
      if (p.proc == NFSPROC3_READDIRPLUS) PrefetchBelow(args->get(), *r, *exp, cred);
      return;
    }
    if (p.proc == NFSPROC3_ACCESS) {
      // A speculative ACCESS for this object and credential is on its way:
      // its reply answers this call (it asked for every bit).
      std::string_view fh = HandleBytes(static_cast<ACCESS3args*>(args->get())->object);
      auto it = speculating_.find(std::string(fh) + std::string(key.bytes()));
      if (it != speculating_.end()) {
        it->second.push_back(Waiter{&p, call, args, exp});
        st.coalesced++;
        return;
      }
    }
  }
  if (cache_ && IsCacheableCred(cred)) {
    if (p.proc == NFSPROC3_LOOKUP) {
      SpeculateAccess(HandleBytes(static_cast<LOOKUP3args*>(args->get())->what.dir), *exp, cred);
    } else if (p.proc == NFSPROC3_READDIRPLUS) {
      const auto* a = static_cast<READDIRPLUS3args*>(args->get());
      // The prefetcher is fetching this very page: its reply answers this.
      if (prefetcher_ &&
          prefetcher_->AwaitListing(HandleBytes(a->dir), a->cookie, cred, *exp,
                                    [this, &p, call, args, exp, before] {
                                      ServeAgain(p, call, args, *exp, before);
                                    })) {
        st.coalesced++;
        return;
      }
      SpeculateAccess(HandleBytes(a->dir), *exp, cred);
    } else if (p.proc == NFSPROC3_READDIR) {
      SpeculateAccess(HandleBytes(static_cast<READDIR3args*>(args->get())->dir), *exp, cred);
      ForwardReaddirAsPlus(call, args, *exp, cred);
      return;
    }
  }
  Forward(p, call, args, *exp, cred, before);
}

void NfsService::ParkForOutage(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                               const std::shared_ptr<XdrBox>& args, const Export& exp,
                               const OpaqueAuth& cred) {
  if (!cache_ || !exp.config().serve_stale_on_outage || cache_->ServeStale(exp) ||
      !IsCacheableCred(cred)) {
    return;
  }
  if (p.proc != NFSPROC3_GETATTR && p.proc != NFSPROC3_ACCESS && p.proc != NFSPROC3_LOOKUP &&
      p.proc != NFSPROC3_READLINK && p.proc != NFSPROC3_READ) {
    return;
  }
  while (!parked_.empty() && parked_.front().call->replied()) parked_.pop_front();
  if (parked_.size() >= kMaxParked) {
    std::erase_if(parked_, [](const Parked& k) { return k.call->replied(); });
    if (parked_.size() >= kMaxParked) parked_.pop_front();  // it just waits
  }
  parked_.push_back(Parked{&p, call, args, &exp});
}

void NfsService::OnOutage(bool out) {
  if (!out) return;
  std::deque<Parked> parked;
  parked.swap(parked_);
  size_t waiting = 0, answered = 0;
  for (const Parked& k : parked) {
    if (k.call->replied()) continue;
    waiting++;
    OpaqueAuth cred;
    if (Readmit(*k.p, k.call, *k.exp, &cred)) ServeStaleOnly(*k.p, k.call, k.args, *k.exp, cred);
    if (k.call->replied()) answered++;
  }
  if (waiting > 0) {
    NFSEDGE_LOG(kWarn) << "upstream outage: " << answered << " of " << waiting
                       << " waiting GETATTR/ACCESS/LOOKUP/READLINK/READ calls answered from expired "
                          "cache entries (serve_stale_on_outage); the others wait";
  }
}

void NfsService::ServeStaleOnly(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                                const std::shared_ptr<XdrBox>& args, const Export& exp,
                                const OpaqueAuth& cred) {
  if (p.proc == NFSPROC3_READ) {
    const auto* a = static_cast<const READ3args*>(args->get());
    // Without attributes the read path would ask the upstream for them.
    if (!read_path_ || !cache_->ExpiredAttributes(HandleBytes(a->file))) return;
    read_path_->Serve(
        *a, exp, cred,
        [this, call](std::string results) {
          stats_[NFSPROC3_READ].cache_answers++;
          call->ReplySuccess(results);
        },
        [] {});  // the READ already on its way upstream answers otherwise
    return;
  }
  std::optional<std::string> r = cache_->Answer(p, args->get(), exp, CredKeyOf(cred));
  // A LOOKUP naming a file with buffered writes waits for the flush instead.
  if (!r || HoldForBufferedWrites(p, *r, UINT64_MAX, [](uint64_t) {})) return;
  stats_[p.proc].cache_answers++;
  RegisterAnswered(p, exp, *r);
  call->ReplySuccess(*r);
}

void NfsService::RegisterAnswered(const NfsProc& p, const Export& exp, std::string_view results) {
  // The handles it gives out are the answering export's, as an upstream
  // reply's would be (whichever export's call taught the cache them).
  if (!p.result_handles || results.size() < 4 || LoadBE32(results.data()) != NFS3_OK) return;
  XdrBox res(p.res_xdr, p.res_size);
  if (res.Decode(results)) RegisterHandles(p, exp, res.get());
}

void NfsService::StartFlight(Flight* f) const {
  f->epoch = *mutations_answered_;
  f->attr_seq = cache_ ? cache_->AttrChangeSeq() : 0;
}

bool NfsService::Joinable(const Flight& f, const NfsProc& p, const void* args) const {
  if (f.epoch != *mutations_answered_) return false;
  if (!cache_ || cache_->AttrChangeSeq() == f.attr_seq) return true;
  std::vector<const nfs_fh3*> handles;
  p.arg_handles(args, &handles);
  return std::none_of(handles.begin(), handles.end(), [&](const nfs_fh3* fh) {
    return cache_->AttrsChangedSince(HandleBytes(*fh), f.attr_seq);
  });
}

void NfsService::Forward(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                         const std::shared_ptr<XdrBox>& args, const Export& export_ref,
                         const OpaqueAuth& cred, uint64_t before) {
  NfsProcStats& st = stats_[p.proc];
  const Export* exp = &export_ref;
  std::string clamped;
  if (ClampTransfer(p, args->get())) args->Encode(&clamped);
  std::string_view forward = clamped.empty() ? call->args() : std::string_view(clamped);
  // Single flight: an identical read-only call already on its way upstream
  // (same procedure, arguments, credential and export) answers this one
  // too, unless a mutation was answered since it left: then this one goes
  // on its own.
  std::string flight;
  if (NfsProcSafeToRepeat(p.proc)) {
    std::string key = FlightKey(p.proc, exp->id(), cred, forward);
    auto [it, first] = joined_.try_emplace(key);
    if (first) {
      StartFlight(&it->second);
      flight = std::move(key);
    } else if (Joinable(it->second, p, args->get())) {
      it->second.calls.push_back(call);
      st.coalesced++;
      return;
    }
  }
  // A READ's data is kept only under the version known as it leaves (a
  // version first learned after, from another reply, may be one the
  // server took after reading older bytes for this one).
  std::optional<ChangeId> version;
  if (read_path_ && p.proc == NFSPROC3_READ) {
    version = read_path_->KnownVersion(HandleBytes(static_cast<const READ3args*>(args->get())->file));
  }
  auto done = [this, &p, exp, call, args, cred, flight, before, version](StatusOr<RpcReply> r) {
    OnReply(p, *exp, call, args, cred, flight, before, version, std::move(r));
  };
  Status s = p.proc == NFSPROC3_READDIRPLUS
                 ? upstream_.CallExpecting(
                       kNfsProgram, kNfsVersion, p.proc, cred, forward,
                       ExpectedListing(*static_cast<const READDIRPLUS3args*>(args->get())),
                       std::move(done))
                 : upstream_.Call(kNfsProgram, kNfsVersion, p.proc, cred, forward, std::move(done));
  if (!s.ok()) {
    if (!flight.empty()) joined_.erase(flight);
    st.upstream_errors++;
    NFSEDGE_LOG(kWarn) << "NFS3 " << p.name << ": " << s.ToString();
    call->ReplySuccess(EncodeNfsError(p, NFS3ERR_JUKEBOX));
  }
}

bool NfsService::ClampTransfer(const NfsProc& p, void* args) const {
  const uint32_t max = options_.max_transfer;
  auto clamp = [max](uint32_t* v) {
    if (*v <= max) return false;
    *v = max;
    return true;
  };
  switch (p.proc) {
    case NFSPROC3_READ:
      return clamp(&static_cast<READ3args*>(args)->count);
    case NFSPROC3_READDIR:
      return clamp(&static_cast<READDIR3args*>(args)->count);
    case NFSPROC3_READDIRPLUS: {
      auto* a = static_cast<READDIRPLUS3args*>(args);
      bool changed = clamp(&a->maxcount);
      return clamp(&a->dircount) || changed;
    }
    default:
      return false;
  }
}

void NfsService::OnReply(const NfsProc& p, const Export& exp,
                         const std::shared_ptr<IncomingCall>& call,
                         const std::shared_ptr<XdrBox>& args, const OpaqueAuth& cred,
                         const std::string& flight, uint64_t before,
                         const std::optional<ChangeId>& read_version, StatusOr<RpcReply> reply) {
  std::vector<std::shared_ptr<IncomingCall>> joined;
  if (!flight.empty()) {
    auto it = joined_.find(flight);
    if (it != joined_.end()) {
      joined = std::move(it->second.calls);
      joined_.erase(it);
    }
  }
  if (!reply.ok()) {
    stats_[p.proc].upstream_errors++;
    NFSEDGE_LOG(kWarn) << "NFS3 " << p.name << " for " << call->peer().ToString() << ": "
                       << reply.status().ToString() << "; answering NFS3ERR_JUKEBOX";
    if (cache_) cache_->ForgetUnanswered(p, args->get());  // it may have been carried out
    NoteDataChange(p, args->get());  // so may a write: its file's blocks are suspect
    std::string err = EncodeNfsError(p, NFS3ERR_JUKEBOX);
    call->ReplySuccess(err);
    for (const auto& j : joined) j->ReplySuccess(err);
    return;
  }
  RpcReply& r = *reply;
  if (RefusesTheProgram(r.header)) {
    // Its version range or RPC version is the upstream's, not what this
    // proxy serves: the client is told of a server fault instead.
    stats_[p.proc].upstream_errors++;
    NFSEDGE_LOG(kWarn) << "NFS3 " << p.name << ": the upstream refused the program ("
                       << DescribeRefusal(r.header) << "); answering NFS3ERR_SERVERFAULT";
    const std::string err = EncodeNfsError(p, NFS3ERR_SERVERFAULT);
    call->ReplySuccess(err);
    for (const auto& j : joined) j->ReplySuccess(err);
    return;
  }
  if (r.header.reply_stat == kMsgAccepted && r.header.accept_stat == kSuccess) {
    if (p.proc == NFSPROC3_CREATE) HideUnsentWrites(&r);
    LearnAndSpeculate(p, args->get(), &r, exp, cred, read_version);
    // A call served again after a hold is not held by later writes; calls
    // that joined it came later and may not be bounded by its stamp.
    if (HoldForBufferedWrites(p, r.results(), joined.empty() ? before : UINT64_MAX,
                              [this, &p, call, args, e = &exp, joined](uint64_t at) {
                                ServeAgain(p, call, args, *e, at);
                                for (const auto& j : joined) ServeAgain(p, j, args, *e, at);
                              })) {
      return;
    }
  }
  for (const auto& j : joined) {
    std::string copy = r.record;
    StoreBE32(copy.data(), j->xid());
    j->Reply(std::move(copy));
  }
  StoreBE32(r.record.data(), call->xid());
  call->Reply(std::move(r.record));
}

void NfsService::LearnAndSpeculate(const NfsProc& p, const void* args, RpcReply* reply,
                                   const Export& exp, const OpaqueAuth& cred,
                                   const std::optional<ChangeId>& read_version) {
  LearnReply(p, args, reply, exp, cred, read_version);
  if (!cache_ || !IsCacheableCred(cred)) return;
  SpeculateAfter(p, args, reply->results(), exp, cred);
  if (p.proc == NFSPROC3_READDIRPLUS) PrefetchBelow(args, reply->results(), exp, cred);
}

void NfsService::PrefetchBelow(const void* args, std::string_view results, const Export& exp,
                               const OpaqueAuth& cred) {
  if (!prefetcher_) return;
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  if (res.Decode(results) && res->status == NFS3_OK) {
    const auto* a = static_cast<const READDIRPLUS3args*>(args);
    prefetcher_->OnClientListing(HandleBytes(a->dir), res->READDIRPLUS3res_u.resok, exp, cred);
  }
}

void NfsService::AskFsinfo(std::string_view fh, const Export& exp, const OpaqueAuth& cred) {
  // Clients that mounted before a restart do not send FSINFO again: the
  // proxy asks on the first file read, lest the data cache fetch more than
  // the upstream reads at once (every fetch short, its blocks lost). Not
  // answered: asked again at a READ after kFsinfoRetry.
  const uint32_t id = exp.id();
  if (id >= kMaxExports || read_path_->fsinfo_known(id) || fsinfo_asked_[id] ||
      SteadyClock::now() < fsinfo_next_ask_[id]) {
    return;
  }
  std::string wire;
  XdrWriter(&wire).WriteOpaque(fh);
  fsinfo_asked_[id] = true;
  fsinfo_next_ask_[id] = SteadyClock::now() + kFsinfoRetry;
  Status s = upstream_.Call(kNfsProgram, kNfsVersion, NFSPROC3_FSINFO, cred, wire,
                            [this, id](StatusOr<RpcReply> r) {
                              fsinfo_asked_[id] = false;
                              if (!Succeeded(r)) return;
                              read_path_->LearnFsinfo(r->results(), id);
                              if (write_path_) write_path_->LearnFsinfo(r->results());
                            });
  if (!s.ok()) fsinfo_asked_[id] = false;
}

void NfsService::NoteDataChange(const NfsProc& p, const void* args) {
  if (!read_path_) return;
  if (p.proc == NFSPROC3_WRITE) {
    read_path_->NoteWrite(HandleBytes(static_cast<const WRITE3args*>(args)->file));
  } else if (p.proc == NFSPROC3_SETATTR) {
    read_path_->NoteWrite(HandleBytes(static_cast<const SETATTR3args*>(args)->object));
  }
}

void NfsService::LearnReply(const NfsProc& p, const void* args, RpcReply* reply,
                            const Export& exp, const OpaqueAuth& cred,
                            const std::optional<ChangeId>& read_version) {
  if (RefuseWayOut(p, args, reply, exp)) return;
  // ACCESS results and symlink targets are kept per credential: none for a
  // credential never answered from cache, whose key may be another's
  // (duplicate groups). What else the reply tells is learned all the same.
  if (cache_) {
    cache_->Learn(p, args, reply->results(), exp, CredKeyOf(cred), SentOf(*reply),
                  IsCacheableCred(cred));
  }
  if (read_path_ && p.proc == NFSPROC3_READ) {
    read_path_->LearnForwarded(*static_cast<const READ3args*>(args), reply->results(),
                               reply->transmissions, reply->sent_at, read_version);
  } else if (p.proc == NFSPROC3_WRITE || p.proc == NFSPROC3_SETATTR) {
    NoteDataChange(p, args);
  } else if (read_path_ && p.proc == NFSPROC3_FSINFO) {
    read_path_->LearnFsinfo(reply->results(), exp.id());
  }
  if (write_path_ && p.proc == NFSPROC3_FSINFO) write_path_->LearnFsinfo(reply->results());
  if (write_path_ && (p.flags & kMutating) != 0) {
    // A mutation forwarded (a SETATTR, a LINK, a WRITE not buffered): the
    // attributes of the write path's own last upstream call of the file
    // are out of date, whether or not the cache keeps the new ones.
    std::vector<const nfs_fh3*> handles;
    p.arg_handles(args, &handles);
    for (const nfs_fh3* fh : handles) write_path_->ForgetAttributes(HandleBytes(*fh));
  }
  PostProcess(p, exp, reply);
}

NfsService::~NfsService() {
  // (The write path, whose attribute source refers to the cache, not to
  // this, goes first: the daemon frees it before this.)
  if (cache_ != nullptr) {
    cache_->SetLifetimeLimit(nullptr);
    cache_->SetMutationObserver(nullptr);
    cache_->SetAttrForgetObserver(nullptr);
  }
}

std::string NfsService::FlightKey(uint32_t proc, uint32_t export_id, const OpaqueAuth& cred,
                                  std::string_view args) {
  std::string key;
  XdrWriter w(&key);
  w.WriteU32(proc);
  w.WriteU32(export_id);
  w.WriteU32(cred.flavor);
  w.WriteOpaque(cred.body);
  key.append(args);
  return key;
}

void NfsService::RegisterHandles(const NfsProc& p, const Export& exp, const void* results) {
  if (!p.result_handles) return;
  std::vector<const nfs_fh3*> fhs;
  p.result_handles(results, &fhs);
  // A listing's ".." may lie outside the export (the listing of its root):
  // never handed out as the export's.
  const nfs_fh3* dotdot = p.proc == NFSPROC3_READDIRPLUS
                              ? DotDotHandle(*static_cast<const READDIRPLUS3res*>(results))
                              : nullptr;
  for (const nfs_fh3* fh : fhs) {
    if (fh->data.data_len > 0 && fh != dotdot) handles_.Add(HandleBytes(*fh), exp.id());
  }
}

void NfsService::PostProcess(const NfsProc& p, const Export& exp, RpcReply* reply) {
  bool fsinfo = p.proc == NFSPROC3_FSINFO;
  bool ro_access = p.proc == NFSPROC3_ACCESS && exp.read_only();
  if (!p.result_handles && !fsinfo && !ro_access) return;
  std::string_view results = reply->results();
  if (results.size() < 4 || LoadBE32(results.data()) != NFS3_OK) return;
  XdrBox res(p.res_xdr, p.res_size);
  if (!res.Decode(results)) {
    // Not passed on: its handles would not be the export's, an FSINFO not
    // clamped, an ACCESS of a read-only export not masked.
    NFSEDGE_LOG(kWarn) << "NFS3 " << p.name
                       << ": upstream results do not decode; answered NFS3ERR_SERVERFAULT";
    reply->record.resize(reply->header.results_offset);
    reply->record += EncodeNfsError(p, NFS3ERR_SERVERFAULT);
    return;
  }
  RegisterHandles(p, exp, res.get());
  bool rewrite = false;
  if (fsinfo) {
    ClampFsinfo(&static_cast<FSINFO3res*>(res.get())->FSINFO3res_u.resok, options_.max_transfer);
    rewrite = true;
  }
  if (ro_access) {
    // As Linux's server does: a read-only export grants no write access.
    auto& access = static_cast<ACCESS3res*>(res.get())->ACCESS3res_u.resok.access;
    access = MaskAccess(exp, access);
    rewrite = true;
  }
  if (rewrite) {
    std::string record = reply->record.substr(0, reply->header.results_offset);
    if (res.Encode(&record)) reply->record = std::move(record);
  }
}

}  // namespace nfsedge
