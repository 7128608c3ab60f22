// NfsService: client writes and the ACCESS evidence they need: the hand-off
// to the write path, and speculative ACCESS (see nfs_service.h).
#include <string>
#include <string_view>

#include "proxy/nfs_service.h"
#include "rpc/auth_sys.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// Returns true iff `attr` shows a regular file owned by `cred`'s uid with the
// owner's write bit: what a CREATE's reply shows its creator, who may then
// write the file (the server lets an owner write by the mode's owner bits;
// a squashed creator is not the owner).
bool OwnerMayWrite(const fattr3& attr, const OpaqueAuth& cred) {
  if (attr.type != NF3REG || (attr.mode & 0200) == 0 || cred.flavor != kAuthSys) return false;
  std::optional<AuthSys> sys = DecodeAuthSys(cred.body);
  return sys && sys->uid == attr.uid;
}

// Returns true iff the CREATE `a` answered `ok` made the file, rather than
// returning one that existed (whose owner says nothing of the caller: a
// squashing server answers root with root's own file). GUARDED and
// EXCLUSIVE fail on a file that exists (EXCLUSIVE but for the caller's own
// retransmission); an UNCHECKED one shows it by an empty file in a
// directory that changed.
bool MadeByThisCreate(const CREATE3args& a, const CREATE3resok& ok) {
  if (a.how.mode != UNCHECKED) return true;
  const wcc_data& w = ok.dir_wcc;
  if (!w.before.attributes_follow || !w.after.attributes_follow) return false;
  const wcc_attr& before = w.before.pre_op_attr_u.attributes;
  const fattr3& after = w.after.post_op_attr_u.attributes;
  const bool changed = !(ChangeId::FromWcc(before) == ChangeId::FromFattr(after));
  return changed && ok.obj_attributes.post_op_attr_u.attributes.size == 0;
}

}  // namespace

void NfsService::SpeculateAccess(std::string_view fh, const Export& exp, const OpaqueAuth& cred,
                                 bool for_writes) {
  if (speculating_.size() >= options_.max_speculative) return;
  CredKey key = CredKeyOf(cred);
  if (cache_->HasAccess(fh, key, kAllAccessBits)) return;
  std::string id = std::string(fh) + std::string(key.bytes());
  const bool new_call = speculating_.try_emplace(id).second;
  if (for_writes) writes_may_wait_.insert(id);
  if (!new_call) return;  // the one in flight answers
  std::string handle(fh);
  ACCESS3args a{};
  a.object = FhView(handle);
  a.access = kAllAccessBits;
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_ACCESS3args), &a, &wire);
  const Export* e = &exp;
  Status s = upstream_.Call(
      kNfsProgram, kNfsVersion, NFSPROC3_ACCESS, cred, wire,
      [this, id, handle, e, key](StatusOr<RpcReply> r) mutable {
        std::vector<Waiter> waiters;
        if (auto it = speculating_.find(id); it != speculating_.end()) {
          waiters = std::move(it->second);
          speculating_.erase(it);
        }
        writes_may_wait_.erase(id);
        created_by_.erase(id);
        if (Succeeded(r)) {
          ACCESS3args a{};
          a.object = FhView(handle);
          a.access = kAllAccessBits;
          cache_->Learn(*FindNfsProc(NFSPROC3_ACCESS), &a, r->results(), *e, key, SentOf(*r));
        }
        // Answered from what was just learned, or sent on as usual.
        for (Waiter& w : waiters) ServeAgain(*w.proc, w.call, w.args, *w.exp);
      });
  if (!s.ok()) {
    speculating_.erase(id);  // nobody waits yet: the call was never queued
    writes_may_wait_.erase(id);
    return;
  }
  stats_[NFSPROC3_ACCESS].speculative++;
}

bool NfsService::EvidenceMatters(const Export& exp, const WRITE3args& a) {
  const ExportConfig& c = exp.config();
  return c.write_back || (a.stable == UNSTABLE && c.write_behind);
}

bool NfsService::WaitForAccess(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                               const std::shared_ptr<XdrBox>& args, const Export& exp,
                               const OpaqueAuth& cred, const WRITE3args& a) {
  // Only where the evidence changes how the write is answered.
  if (!EvidenceMatters(exp, a)) return false;
  // Only for a speculation a CREATE started, on its way: a write served
  // again after its reply finds none (a speculation started since is not
  // one), so no write waits twice.
  const std::string id = std::string(HandleBytes(a.file)) + std::string(CredKeyOf(cred).bytes());
  auto it = speculating_.find(id);
  if (it == speculating_.end() || !writes_may_wait_.contains(id)) return false;
  it->second.push_back(Waiter{&p, call, args, &exp});
  stats_[p.proc].coalesced++;
  return true;
}

void NfsService::SpeculateAfter(const NfsProc& p, const void* args, std::string_view results,
                                const Export& exp, const OpaqueAuth& cred) {
  if (results.size() < 4 || LoadBE32(results.data()) != NFS3_OK) return;
  if (p.proc == NFSPROC3_LOOKUP) {
    // The client opens what it looked up next: ACCESS on the object.
    XdrValue<LOOKUP3res> res(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res));
    if (res.Decode(results)) SpeculateAccess(HandleBytes(res->LOOKUP3res_u.resok.object), exp, cred);
  } else if (p.proc == NFSPROC3_CREATE && write_path_ &&
             (exp.config().write_behind || exp.config().write_back)) {
    // The creator writes the new file next: with the evidence that it may,
    // its first writes are buffered (and wait for the evidence, at most a
    // round trip, rather than going upstream one by one as stable writes).
    XdrValue<CREATE3res> res(reinterpret_cast<xdrproc_t>(xdr_CREATE3res));
    if (!res.Decode(results) || !res->CREATE3res_u.resok.obj.handle_follows) return;
    const CREATE3resok& ok = res->CREATE3res_u.resok;
    const std::string_view fh = HandleBytes(ok.obj.post_op_fh3_u.handle);
    SpeculateAccess(fh, exp, cred, /*for_writes=*/true);
    // A creator the reply shows as the owner, with the owner's write bit,
    // writes at once: its writes need not wait for the ACCESS, whose
    // answer then stands in for this.
    const std::string id = std::string(fh) + std::string(CredKeyOf(cred).bytes());
    if (writes_may_wait_.contains(id) && ok.obj_attributes.attributes_follow &&
        MadeByThisCreate(*static_cast<const CREATE3args*>(args), ok) &&
        OwnerMayWrite(ok.obj_attributes.post_op_attr_u.attributes, cred)) {
      created_by_.insert(id);
    }
  } else if (p.proc == NFSPROC3_READDIRPLUS) {
    XdrBox box(p.res_xdr, p.res_size);
    if (!box.Decode(results)) return;
    const auto* res = static_cast<const READDIRPLUS3res*>(box.get());
    for (const entryplus3* e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
      if (!e->name_handle.handle_follows) continue;
      std::string_view name(e->name ? e->name : "");
      if (name == "." || name == "..") continue;
      SpeculateAccess(HandleBytes(e->name_handle.post_op_fh3_u.handle), exp, cred);
    }
  }
}

void NfsService::SetWritePath(WritePath* write_path) {
  write_path_ = write_path;
  if (cache_ == nullptr) return;
  if (write_path_ == nullptr) {
    cache_->SetMutationObserver(nullptr);
    cache_->SetAttrForgetObserver(nullptr);
    return;
  }
  write_path_->SetAttributeSource(WritePath::AttributeSource{
      [cache = cache_](std::string_view fh) { return cache->LatestAttributes(fh); },
      [cache = cache_](std::string_view fh) { return cache->NewestCtime(fh); }});
  cache_->SetMutationObserver([writes = write_path_](std::string_view fh) {
    writes->ForgetAttributes(fh);
  });
  cache_->SetAttrForgetObserver([writes = write_path_](std::string_view fh, NfsTime ctime) {
    writes->ForgetAttributesBefore(fh, ctime);
  });
}

bool NfsService::ServeWrites(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                             const std::shared_ptr<XdrBox>& args, const Export& exp,
                             const OpaqueAuth& cred, uint64_t before) {
  // A call held for buffered writes is served again once those are
  // upstream; writes that came after it do not hold it again (a writer that
  // keeps appending must not hold a reader for as long as it writes). Held
  // or not, it is admitted again first: a reload meanwhile (a read-only
  // export, root squash) applies to it.
  const uint64_t at = std::min(before, write_path_->last_stamp());
  const Export* e = &exp;
  auto again = [this, &p, call, args, e, at] { ServeAgain(p, call, args, *e, at); };
  auto reply = [call](std::string results) { call->ReplySuccess(results); };
  auto forward = [this, &p, call, args, e] { ForwardAgain(p, call, args, *e); };
  switch (p.proc) {
    case NFSPROC3_WRITE: {
      const auto* a = static_cast<const WRITE3args*>(args->get());
      std::string_view fh = HandleBytes(a->file);
      // Write-behind only with evidence that the upstream lets this
      // credential write the file; else the write is answered once stable.
      bool may_buffer = false;
      if (cache_ && IsCacheableCred(cred)) {
        std::optional<fattr3> attr = cache_->FreshPermissions(fh, exp);
        const CredKey key = CredKeyOf(cred);
        may_buffer = attr && attr->type == NF3REG &&
                     (cache_->Allows(fh, key, ACCESS3_MODIFY, *attr) ||
                      (created_by_.contains(std::string(fh) + std::string(key.bytes())) &&
                       OwnerMayWrite(*attr, cred)));
        if (!may_buffer && WaitForAccess(p, call, args, exp, cred, *a)) return true;
        // A stable write the evidence would not change (no edge journal)
        // starts no ACCESS: the upstream judges it as it is.
        if (!may_buffer && EvidenceMatters(exp, *a)) SpeculateAccess(fh, exp, cred);
      }
      write_path_->Write(*a, exp, cred, may_buffer, reply, forward,
                         [this, &p, call, e](OpaqueAuth* now) { return Readmit(p, call, *e, now); });
      return true;
    }
    case NFSPROC3_CREATE: {
      // An UNCHECKED CREATE that sets the size truncates a file of that
      // name that exists: its buffered writes go upstream first, as for a
      // SETATTR, lest they land after the truncation; for a name the cache
      // does not know, the journal's replay after a restart. (Any other
      // CREATE answering such a file answers no attributes: HideUnsentWrites.)
      const auto* a = static_cast<const CREATE3args*>(args->get());
      if (!cache_ || a->how.mode != UNCHECKED ||
          !a->how.createhow3_u.obj_attributes.size.set_it) {
        return HoldNamed(p, args, again, before);
      }
      const std::string child = cache_->KnownChild(a->where);
      if (child.empty()) return write_path_->HoldRecovered(again);
      return write_path_->Hold(child, /*stable=*/true, again, before);
    }
    case NFSPROC3_COMMIT: {
      // It may wait (for the file's data to be stable upstream): after a
      // reload meanwhile it meets the rules now in force before it is
      // answered (a client the export no longer admits, a read-only export).
      auto answer = [this, &p, call, e, rules = exports_.updates()](std::string results) {
        OpaqueAuth now;
        if (exports_.updates() == rules || Readmit(p, call, *e, &now)) {
          call->ReplySuccess(results);
        }
      };
      write_path_->Commit(*static_cast<const COMMIT3args*>(args->get()), exp, cred, answer,
                          forward);
      return true;
    }
    case NFSPROC3_SETATTR: {
      // It waits until the data is stable upstream: a size change or a
      // time set must not be undone by data sent after it.
      const auto* a = static_cast<const SETATTR3args*>(args->get());
      return write_path_->Hold(HandleBytes(a->object), /*stable=*/true, again, before);
    }
    default:
      return HoldNamed(p, args, again, before);
  }
}

bool NfsService::HoldNamed(const NfsProc& p, const std::shared_ptr<XdrBox>& args,
                           const std::function<void()>& again, uint64_t before) {
  // A call naming a file the proxy holds writes of shows that file: READ
  // its data, and every reply its attributes (GETATTR's, ACCESS's, FSINFO's
  // and PATHCONF's post-op ones, LINK's of the file, FSSTAT's, or a
  // directory operation's on it refused NOTDIR, with its wcc data): it
  // waits for them to be upstream (DESIGN rule 4). For any other handle,
  // nothing to wait for.
  if (!p.arg_handles) return false;
  std::vector<const nfs_fh3*> fhs;
  p.arg_handles(args->get(), &fhs);
  for (const nfs_fh3* fh : fhs) {
    if (write_path_->Hold(HandleBytes(*fh), /*stable=*/false, again, before)) return true;
  }
  return false;
}

void NfsService::HideUnsentWrites(RpcReply* reply) {
  // A CREATE that found the name taken (UNCHECKED) answers the file there:
  // if the proxy holds writes of it the upstream does not have yet, its
  // attributes would not show them (DESIGN rule 4). They are left out
  // (post-op attributes are optional); the CREATE is not sent again to
  // learn them, as it is not idempotent.
  if (!write_path_) return;
  XdrValue<CREATE3res> res(reinterpret_cast<xdrproc_t>(xdr_CREATE3res));
  if (!res.Decode(reply->results()) || res->status != NFS3_OK) return;
  CREATE3resok& ok = res->CREATE3res_u.resok;
  if (!ok.obj.handle_follows || !ok.obj_attributes.attributes_follow ||
      !write_path_->Unsent(HandleBytes(ok.obj.post_op_fh3_u.handle))) {
    return;
  }
  ok.obj_attributes.attributes_follow = FALSE;
  std::string results;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_CREATE3res), &res.get(), &results);
  reply->record.resize(reply->header.results_offset);
  reply->record += results;
}

bool NfsService::HoldForBufferedWrites(const NfsProc& p, std::string_view results,
                                       uint64_t before,
                                       const std::function<void(uint64_t)>& retry) {
  // LOOKUP and READDIRPLUS carry the attributes of other files than their
  // arguments'; those of a file whose writes are still in the proxy's
  // buffer would not show them (DESIGN rule 4).
  if (!write_path_ || (p.proc != NFSPROC3_LOOKUP && p.proc != NFSPROC3_READDIRPLUS)) {
    return false;
  }
  // result_handles reads the results of a success only.
  if (results.size() < 4 || LoadBE32(results.data()) != NFS3_OK) return false;
  XdrBox box(p.res_xdr, p.res_size);
  if (!box.Decode(results)) return false;
  std::vector<const nfs_fh3*> fhs;
  p.result_handles(box.get(), &fhs);
  // Held on the first such file; the retry checks the others again, for
  // the writes up to the same stamp.
  const uint64_t at = std::min(before, write_path_->last_stamp());
  for (const nfs_fh3* fh : fhs) {
    if (write_path_->Hold(HandleBytes(*fh), false, [retry, at] { retry(at); }, before)) {
      return true;
    }
  }
  return false;
}
}  // namespace nfsedge
