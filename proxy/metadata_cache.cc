#include "proxy/metadata_cache.h"

#include <cstring>

#include "cache/cache_key.h"
#include "proxy/metadata_encode.h"
#include "rpc/auth_sys.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

std::string_view Bytes(const nfs_fh3& fh) {
  return std::string_view(fh.data.data_val, fh.data.data_len);
}

using metadata_encode::Encode;
using metadata_encode::SetPostOp;

// Returns true iff `status`, answering a READDIR or READDIRPLUS, says that
// the upstream no longer honours the cookie or cookie verifier it was asked
// with (RFC 1813: NFS3ERR_BAD_COOKIE; NFS3ERR_NOT_SYNC from servers that
// report a verifier mismatch so).
bool RejectsCookie(nfsstat3 status) {
  return status == NFS3ERR_BAD_COOKIE || status == NFS3ERR_NOT_SYNC;
}

bool IsDotName(const char* name) {
  return name == nullptr || std::string_view(name) == "." || std::string_view(name) == "..";
}

// Decodes the status and post-op attributes at the head of READ results
// without copying the data.
bool DecodeReadHead(std::string_view results, nfsstat3* status, post_op_attr* attr) {
  XDR xdrs;
  xdrmem_create(&xdrs, const_cast<char*>(results.data()), static_cast<u_int>(results.size()),
                XDR_DECODE);
  bool ok = xdr_nfsstat3(&xdrs, status) && xdr_post_op_attr(&xdrs, attr);
  xdr_destroy(&xdrs);
  return ok;
}

}  // namespace

ExportLifetimes LifetimesOf(const Export& exp) {
  const ExportConfig& c = exp.config();
  using std::chrono::seconds;
  ExportLifetimes l;
  l.reg = Lifetime{seconds(c.acregmin), seconds(c.acregmax)};
  l.dir = Lifetime{seconds(c.acdirmin), seconds(c.acdirmax)};
  return l;
}

CredKey CredKeyOf(const OpaqueAuth& cred) {
  if (cred.flavor == kAuthSys) {
    if (std::optional<AuthSys> sys = DecodeAuthSys(cred.body)) return CredKey::FromAuthSys(*sys);
  }
  return CredKey::AuthNone();
}

uint32_t MaskAccess(const Export& exp, uint32_t granted) {
  if (!exp.read_only()) return granted;
  return granted & ~(ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE);
}

MetadataCache::MetadataCache(const Clock& clock, const CacheConfig& config)
    : clock_(clock),
      attrs_(clock, AttrCacheOptions{config.max_attr_entries}),
      access_(clock, AccessCacheOptions{config.max_access_entries}),
      names_(NameCacheOptions{config.max_name_entries, 255}),
      dirs_(clock, DirCacheOptions{config.max_dir_bytes}),
      links_(config.max_link_bytes),
      max_children_(config.max_name_entries) {
  // An evicted floor goes on as a change mark: a reply older than it, still
  // on its way, is not learned as fresh once the entry is gone.
  attrs_.SetFloorEvictObserver([this](std::string_view fh) { attr_changes_.Note(fh); });
}

std::unordered_map<std::string, std::pair<std::string, std::string>> MetadataCache::ParentsOf(
    const std::unordered_set<std::string>& children) const {
  std::unordered_map<std::string, std::pair<std::string, std::string>> out;
  last_child_.ForEach([&](std::string_view key, const std::string& child) {
    if (!children.count(child) || out.count(child)) return;
    std::string_view dir, name;
    if (ReadPrefixed(&key, &dir) && ReadPrefixed(&key, &name)) {
      out.emplace(child, std::make_pair(std::string(dir), std::string(name)));
    }
  });
  return out;
}

void MetadataCache::SetLimits(const CacheConfig& config) {
  attrs_.SetMaxEntries(config.max_attr_entries);
  access_.SetMaxEntries(config.max_access_entries);
  names_.SetMaxEntries(config.max_name_entries);
  dirs_.SetMaxBytes(config.max_dir_bytes);
  links_.SetMaxBytes(config.max_link_bytes);
  max_children_ = config.max_name_entries;
  while (last_child_.size() > max_children_) last_child_.Erase(last_child_.Oldest()->key);
  while (parent_of_.size() > max_children_) parent_of_.Erase(parent_of_.Oldest()->key);
}

bool MetadataCache::ServeStale(const Export& exp) const {
  return exp.config().serve_stale_on_outage && outage_ != nullptr && outage_->out();
}

std::optional<std::string> MetadataCache::Answer(const NfsProc& p, const void* args,
                                                 const Export& exp, const CredKey& cred) {
  if (p.proc == NFSPROC3_READDIR || p.proc == NFSPROC3_READDIRPLUS) {
    return AnswerListing(p.proc == NFSPROC3_READDIRPLUS, args, exp, cred);
  }
  std::optional<std::string> r = AnswerAttrs(p, args, exp, cred, false);
  if (!r && ServeStale(exp)) {
    r = AnswerAttrs(p, args, exp, cred, true);
    if (r) NoteStaleAnswer(p.proc);
  }
  return r;
}

std::optional<std::string> MetadataCache::AnswerAttrs(const NfsProc& p, const void* args,
                                                      const Export& exp, const CredKey& cred,
                                                      bool stale) {
  switch (p.proc) {
    case NFSPROC3_GETATTR: {
      const auto* a = static_cast<const GETATTR3args*>(args);
      std::optional<fattr3> attr = Attrs(Bytes(a->object), stale, exp);
      if (!attr) return std::nullopt;
      GETATTR3res res{};
      res.status = NFS3_OK;
      res.GETATTR3res_u.resok.obj_attributes = *attr;
      return Encode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res), res);
    }
    case NFSPROC3_ACCESS: {
      const auto* a = static_cast<const ACCESS3args*>(args);
      std::optional<fattr3> attr = Attrs(Bytes(a->object), stale, exp);
      if (!attr) return std::nullopt;
      std::optional<uint32_t> granted =
          access_.Lookup(Bytes(a->object), cred, a->access, *attr, stale);
      if (!granted) return std::nullopt;
      ACCESS3res res{};
      res.status = NFS3_OK;
      SetPostOp(&res.ACCESS3res_u.resok.obj_attributes, *attr);
      res.ACCESS3res_u.resok.access = MaskAccess(exp, *granted);
      return Encode(reinterpret_cast<xdrproc_t>(xdr_ACCESS3res), res);
    }
    case NFSPROC3_LOOKUP:
      return AnswerLookup(*static_cast<const LOOKUP3args*>(args), exp, cred, stale);
    case NFSPROC3_READLINK:
      return AnswerReadlink(*static_cast<const READLINK3args*>(args), exp, cred, stale);
    case NFSPROC3_FSINFO:
      return AnswerFsStatic(p.proc, static_cast<const FSINFO3args*>(args)->fsroot, exp, stale);
    case NFSPROC3_PATHCONF:
      return AnswerFsStatic(p.proc, static_cast<const PATHCONF3args*>(args)->object, exp, stale);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> MetadataCache::AnswerLookup(const LOOKUP3args& a, const Export& exp,
                                                       const CredKey& cred, bool stale) {
  if (IsDotName(a.what.name)) return std::nullopt;
  std::string_view dir = Bytes(a.what.dir);
  std::optional<fattr3> dir_attr = Attrs(dir, stale, exp);
  if (!dir_attr || case_insensitive_fsids_.contains(dir_attr->fsid)) return std::nullopt;
  // DESIGN rule 6: only with evidence that this credential may search dir.
  if (!access_.Allows(dir, cred, ACCESS3_LOOKUP, *dir_attr, stale)) {
    return std::nullopt;
  }
  std::optional<NameHit> hit = names_.Lookup(dir, a.what.name, ChangeId::FromFattr(*dir_attr));
  if (!hit) return std::nullopt;
  LOOKUP3res res{};
  if (hit->negative) {
    res.status = NFS3ERR_NOENT;
    SetPostOp(&res.LOOKUP3res_u.resfail.dir_attributes, *dir_attr);
    return Encode(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res);
  }
  std::optional<fattr3> child_attr = Attrs(hit->child, stale, exp);
  if (!child_attr) return std::nullopt;
  res.status = NFS3_OK;
  res.LOOKUP3res_u.resok.object.data.data_val = hit->child.data();
  res.LOOKUP3res_u.resok.object.data.data_len = static_cast<u_int>(hit->child.size());
  SetPostOp(&res.LOOKUP3res_u.resok.obj_attributes, *child_attr);
  SetPostOp(&res.LOOKUP3res_u.resok.dir_attributes, *dir_attr);
  (void)exp;
  return Encode(reinterpret_cast<xdrproc_t>(xdr_LOOKUP3res), res);
}

bool MetadataCache::HasSearchEvidence(std::string_view dir, const CredKey& cred) {
  std::optional<fattr3> a = attrs_.Get(dir);
  return a && access_.Allows(dir, cred, ACCESS3_LOOKUP, *a);
}

bool MetadataCache::HasAccess(std::string_view fh, const CredKey& cred, uint32_t mask) {
  std::optional<fattr3> a = attrs_.Get(fh);
  return a && access_.Lookup(fh, cred, mask, *a).has_value();
}

AttrCache::SentTime MetadataCache::LearningSent() const {
  // A reply to a call sent more than once may answer an earlier copy.
  return learning_.transmissions > 1 ? AttrCache::SentTime{} : learning_.at;
}

void MetadataCache::PostOp(const nfs_fh3& fh, const post_op_attr& a, const ExportLifetimes& l) {
  if (!a.attributes_follow || fh.data.data_len == 0 || AttrsOvertaken(Bytes(fh))) return;
  attrs_.ApplyPostOp(Bytes(fh), a, LifetimeOf(Bytes(fh), l, a.post_op_attr_u.attributes.type),
                     LearningSent());
}

void MetadataCache::MutatedPostOp(const nfs_fh3& fh, const post_op_attr& a,
                                  const ExportLifetimes& l) {
  if (fh.data.data_len == 0) return;
  if (!a.attributes_follow || AttrsOvertaken(Bytes(fh))) {
    // What the object became is not known (or not from this reply): what
    // was cached of it predates the change.
    ForgetMutated(Bytes(fh));
    return;
  }
  attrs_.ApplyPostOp(Bytes(fh), a, LifetimeOf(Bytes(fh), l, a.post_op_attr_u.attributes.type),
                     LearningSent());
}

bool MetadataCache::ApplyWccKeepsDependents(std::string_view fh, const wcc_data& w,
                                            const ExportLifetimes& l) {
  if (!w.after.attributes_follow || AttrsOvertaken(fh)) {
    // What the object became is not known (or not from this reply).
    const bool own = attrs_.ApplyWcc(fh, wcc_data{w.before, {}}, Lifetime{}) ==
                     WccResult::kOwnChange;
    ForgetMutated(fh);
    return own && w.after.attributes_follow == FALSE;
  }
  std::optional<ChangeId> prev = attrs_.CachedChangeId(fh);
  ftype3 type = w.after.post_op_attr_u.attributes.type;
  WccResult r = attrs_.ApplyWcc(fh, w, LifetimeOf(fh, l, type), LearningSent());
  if (r == WccResult::kOwnChange) return true;
  // No "before" (common on failures): unchanged iff "after" is what we had.
  return r == WccResult::kUnknown && prev && w.after.attributes_follow &&
         ChangeId::FromFattr(w.after.post_op_attr_u.attributes) == *prev;
}

void MetadataCache::Wcc(const nfs_fh3& fh, const wcc_data& w, const ExportLifetimes& l) {
  if (!ApplyWccKeepsDependents(Bytes(fh), w, l)) names_.InvalidateDir(Bytes(fh));
  dirs_.InvalidateDir(Bytes(fh));  // its listing changed, even by this operation
}

namespace {

// Whether a reply to a call `sent` may predate the change `mark` noted: the
// call left before it, or was sent more than once (the reply may answer a
// copy from before it). No mark: no.
bool SentBefore(const SentCall& sent, const ChangeMarks::Mark& mark) {
  if (mark.seq == 0) return false;
  if (sent.transmissions > 1) return true;
  return sent.at != std::chrono::steady_clock::time_point{} && sent.at <= mark.at;
}

}  // namespace

bool MetadataCache::OvertakenByChange(std::string_view dir, const SentCall& sent) const {
  return SentBefore(sent, dir_changes_.Last(dir));
}

void MetadataCache::ForgetMutated(std::string_view fh) {
  attrs_.Invalidate(fh);
  attr_changes_.Note(fh);
  if (mutated_) mutated_(fh);
}

bool MetadataCache::MayPredateForget(std::string_view fh) const {
  return SentBefore(learning_, attr_changes_.Last(fh));
}

bool MetadataCache::AttrsOvertaken(std::string_view fh) {
  const bool overtaken = MayPredateForget(fh);
  if (overtaken) attrs_overtaken_++;
  return overtaken;
}

std::string MetadataCache::AccessMarkKey(std::string_view fh, const CredKey& cred) {
  // The handle's length first (handles are opaque, at most 64 bytes), so
  // that no two pairs make one key.
  std::string key(1, static_cast<char>(fh.size()));
  key.append(fh);
  key.append(cred.bytes());
  return key;
}

bool MetadataCache::AccessOvertaken(std::string_view fh, const CredKey& cred) {
  return SentBefore(learning_, access_changes_.Last(AccessMarkKey(fh, cred)));
}

void MetadataCache::Learn(const NfsProc& p, const void* args, std::string_view results,
                          const Export& exp, const CredKey& cred, SentCall sent,
                          bool per_credential) {
  if (p.proc == NFSPROC3_NULL) return;
  learning_ = sent;
  struct Done {
    SentCall* learning;
    ~Done() { *learning = SentCall{}; }
  } done{&learning_};
  // Every NFSv3 result begins with its status.
  const uint32_t status = results.size() >= 4 ? LoadBE32(results.data()) : uint32_t{NFS3_OK};
  if (status == NFS3ERR_STALE) {
    // The server no longer knows a handle of the call (of a call with two,
    // the reply does not say which): what is cached of them goes, and
    // replies sent before do not bring it back. Else LOOKUP (from the name
    // cache), GETATTR and READ (from blocks) answered from cache would keep
    // handing out a file the server said is gone, for its lifetime.
    std::vector<const nfs_fh3*> handles;
    p.arg_handles(args, &handles);
    for (const nfs_fh3* fh : handles) {
      stale_handles_++;
      ForgetNow(Bytes(*fh));
    }
    return;  // nothing else to learn
  }
  if (status == NFS3ERR_ACCES || status == NFS3ERR_PERM) {
    // The server refused this credential on an object of the call (of a
    // call with two, the reply does not say which): what the ACCESS cache
    // holds for them and this credential may be older than the refusal
    // (an ACL changed at the head office leaves mode, owner and group as
    // they were), and must not answer a LOOKUP, READDIR or READ the server
    // would refuse. A mark of (handle, credential) keeps ACCESS replies
    // sent before the refusal came (granting what was refused) from
    // bringing it back; nothing else is held back by it. (AUTH_NONE's
    // results are never kept: no mark, so that the refresher's listings
    // of directories the anonymous user may not read churn no marks.)
    std::vector<const nfs_fh3*> handles;
    p.arg_handles(args, &handles);
    for (const nfs_fh3* fh : handles) {
      if (access_.Invalidate(Bytes(*fh), cred)) refused_access_++;
      links_.ForgetCred(Bytes(*fh), cred);
      if (!(cred == CredKey::AuthNone())) access_changes_.Note(AccessMarkKey(Bytes(*fh), cred));
    }
  }
  // A reading call sent before a drop-cache answers of the state dropped:
  // kept, it would outlive the drop (an ACCESS result for as long as its
  // object's ctime stays). What it forgets (above) still goes.
  if ((p.flags & (kMutating | kDataWrite)) == 0 && SentBefore(sent, cleared_)) return;
  std::string_view named;  // the directory whose names or listing the reply tells
  if (p.proc == NFSPROC3_LOOKUP) named = Bytes(static_cast<const LOOKUP3args*>(args)->what.dir);
  if (p.proc == NFSPROC3_READDIR) named = Bytes(static_cast<const READDIR3args*>(args)->dir);
  if (p.proc == NFSPROC3_READDIRPLUS) {
    named = Bytes(static_cast<const READDIRPLUS3args*>(args)->dir);
  }
  if (!named.empty() && OvertakenByChange(named, sent)) {
    names_overtaken_++;
    return;
  }
  if (p.proc == NFSPROC3_READ) {
    // Only the attributes: decoding the whole result would copy the data.
    nfsstat3 status;
    XdrValue<post_op_attr> attr(reinterpret_cast<xdrproc_t>(xdr_post_op_attr));
    if (DecodeReadHead(results, &status, &attr.get())) {
      PostOp(static_cast<const READ3args*>(args)->file, attr.get(), LifetimesOf(exp));
    }
    return;
  }
  XdrBox res(p.res_xdr, p.res_size);
  if (!res.Decode(results)) return;
  LearnDecoded(p, args, res.get(), exp, cred, per_credential);
  if (p.proc == NFSPROC3_READDIRPLUS && LifetimesOf(exp).dir.max > Duration(0)) {
    LearnListing(*static_cast<const READDIRPLUS3args*>(args),
                 *static_cast<const READDIRPLUS3res*>(res.get()), results);
  }
}

void MetadataCache::LearnDecoded(const NfsProc& p, const void* args, const void* res,
                                 const Export& exp, const CredKey& cred, bool per_credential) {
  const ExportLifetimes l = LifetimesOf(exp);
  nfsstat3 status;
  std::memcpy(&status, res, sizeof(status));
  const bool ok = status == NFS3_OK;
  switch (p.proc) {
    case NFSPROC3_GETATTR: {
      if (!ok) return;
      const fattr3& a = static_cast<const GETATTR3res*>(res)->GETATTR3res_u.resok.obj_attributes;
      const std::string_view fh = Bytes(static_cast<const GETATTR3args*>(args)->object);
      if (!AttrsOvertaken(fh)) attrs_.Put(fh, a, LifetimeOf(fh, l, a.type), LearningSent());
      return;
    }
    case NFSPROC3_SETATTR: {
      const auto* r = static_cast<const SETATTR3res*>(res);
      const wcc_data& w = ok ? r->SETATTR3res_u.resok.obj_wcc : r->SETATTR3res_u.resfail.obj_wcc;
      std::string_view fh = Bytes(static_cast<const SETATTR3args*>(args)->object);
      if (ApplyWccKeepsDependents(fh, w, l)) {
        names_.OnSetattr(fh, DirChange::FromWcc(w));
      } else {
        names_.InvalidateDir(fh);
      }
      return;
    }
    case NFSPROC3_LOOKUP: {
      const auto* a = static_cast<const LOOKUP3args*>(args);
      const auto* r = static_cast<const LOOKUP3res*>(res);
      const post_op_attr& dir_attr =
          ok ? r->LOOKUP3res_u.resok.dir_attributes : r->LOOKUP3res_u.resfail.dir_attributes;
      PostOp(a->what.dir, dir_attr, l);
      if (IsDotName(a->what.name) || !dir_attr.attributes_follow) return;
      ChangeId dir_change = ChangeId::FromFattr(dir_attr.post_op_attr_u.attributes);
      if (ok) {
        const LOOKUP3resok& o = r->LOOKUP3res_u.resok;
        PostOp(o.object, o.obj_attributes, l);
        names_.PutPositive(Bytes(a->what.dir), a->what.name, Bytes(o.object), dir_change);
        RememberChild(Bytes(a->what.dir), a->what.name, Bytes(o.object));
      } else if (status == NFS3ERR_NOENT) {
        names_.PutNegative(Bytes(a->what.dir), a->what.name, dir_change);
      }
      return;
    }
    case NFSPROC3_ACCESS: {
      const auto* a = static_cast<const ACCESS3args*>(args);
      const auto* r = static_cast<const ACCESS3res*>(res);
      const post_op_attr& attr =
          ok ? r->ACCESS3res_u.resok.obj_attributes : r->ACCESS3res_u.resfail.obj_attributes;
      PostOp(a->object, attr, l);
      if (per_credential && ok && attr.attributes_follow && !AttrsOvertaken(Bytes(a->object)) &&
          !AccessOvertaken(Bytes(a->object), cred)) {
        const fattr3& f = attr.post_op_attr_u.attributes;
        // A reply of an older state than the attributes show (an ACL changed
        // at the server since; this credential's entry evicted or never
        // made): not an answer for the object as it is.
        const std::optional<NfsTime> newest = attrs_.NewestCtime(Bytes(a->object));
        if (newest && NfsTime::From(f.ctime) < *newest) return;
        access_.Put(Bytes(a->object), cred, a->access, r->ACCESS3res_u.resok.access, f,
                    LifetimeOf(Bytes(a->object), l, f.type));
      }
      return;
    }
    case NFSPROC3_READLINK: {
      const auto* r = static_cast<const READLINK3res*>(res);
      const nfs_fh3& link = static_cast<const READLINK3args*>(args)->symlink;
      const post_op_attr& attr =
          ok ? r->READLINK3res_u.resok.symlink_attributes
             : r->READLINK3res_u.resfail.symlink_attributes;
      const bool overtaken = attr.attributes_follow && AttrsOvertaken(Bytes(link));
      if (!overtaken) PostOp(link, attr, l);
      if (!ok) {
        // Refusals and stale handles are handled in Learn; another error
        // (the handle no longer a link's, an I/O error) leaves nothing to
        // answer from.
        if (status != NFS3ERR_ACCES && status != NFS3ERR_PERM && status != NFS3ERR_JUKEBOX) {
          links_.Invalidate(Bytes(link));
        }
        return;
      }
      // The target, stamped with the attributes it came with (none: not
      // kept), for this credential, unless a refusal of it came since the
      // call left.
      if (per_credential && attr.attributes_follow &&
          attr.post_op_attr_u.attributes.type == NF3LNK &&
          r->READLINK3res_u.resok.data != nullptr && !overtaken &&
          !AccessOvertaken(Bytes(link), cred)) {
        links_.Put(Bytes(link), ChangeId::FromFattr(attr.post_op_attr_u.attributes),
                   r->READLINK3res_u.resok.data, cred);
      }
      return;
    }
    case NFSPROC3_WRITE: {
      const auto* r = static_cast<const WRITE3res*>(res);
      Wcc(static_cast<const WRITE3args*>(args)->file,
          ok ? r->WRITE3res_u.resok.file_wcc : r->WRITE3res_u.resfail.file_wcc, l);
      return;
    }
#define NFSEDGE_ARM(T, r, field) (ok ? (r)->T##_u.resok.field : (r)->T##_u.resfail.field)
#define NFSEDGE_CREATED(PROC, R, A)                                                    \
  case PROC: {                                                                         \
    const auto* r = static_cast<const R*>(res);                                        \
    LearnCreate(static_cast<const A*>(args)->where, ok ? &r->R##_u.resok.obj : nullptr, \
                ok ? &r->R##_u.resok.obj_attributes : nullptr,                          \
                NFSEDGE_ARM(R, r, dir_wcc), l);                                         \
    return;                                                                             \
  }
    NFSEDGE_CREATED(NFSPROC3_CREATE, CREATE3res, CREATE3args)
    NFSEDGE_CREATED(NFSPROC3_MKDIR, MKDIR3res, MKDIR3args)
    NFSEDGE_CREATED(NFSPROC3_SYMLINK, SYMLINK3res, SYMLINK3args)
    NFSEDGE_CREATED(NFSPROC3_MKNOD, MKNOD3res, MKNOD3args)
#undef NFSEDGE_CREATED
    case NFSPROC3_REMOVE: {
      const auto* r = static_cast<const REMOVE3res*>(res);
      LearnRemove(static_cast<const REMOVE3args*>(args)->object, ok,
                  NFSEDGE_ARM(REMOVE3res, r, dir_wcc), l);
      return;
    }
    case NFSPROC3_RMDIR: {
      const auto* r = static_cast<const RMDIR3res*>(res);
      LearnRemove(static_cast<const RMDIR3args*>(args)->object, ok,
                  NFSEDGE_ARM(RMDIR3res, r, dir_wcc), l, /*rmdir=*/true);
      return;
    }
    case NFSPROC3_RENAME: {
      const auto* a = static_cast<const RENAME3args*>(args);
      const auto* r = static_cast<const RENAME3res*>(res);
      const wcc_data& fw =
          ok ? r->RENAME3res_u.resok.fromdir_wcc : r->RENAME3res_u.resfail.fromdir_wcc;
      const wcc_data& tw = ok ? r->RENAME3res_u.resok.todir_wcc : r->RENAME3res_u.resfail.todir_wcc;
      NoteDirChange(Bytes(a->from.dir));
      NoteDirChange(Bytes(a->to.dir));
      // The moved object's ctime changed, and the replaced one's link count.
      std::string moved;
      std::string replaced;
      if (ok) {
        moved = KnownChild(a->from);
        replaced = KnownChild(a->to);
        if (moved.empty()) ForgetMovedAway(*a, &fw);
        // (Not every server changes the moved object's ctime: no floor.)
        ForgetChild(a->from);
        // The replaced one lost a link: attributes from before the rename
        // (a reply overtaken by it) must not come back.
        ForgetChild(a->to, replaced != moved ? &tw : nullptr);
      }
      Wcc(a->from.dir, fw, l);
      // Within one directory both wcc data are the same change: applied
      // twice, the second's "before" would not match and drop its names.
      if (Bytes(a->from.dir) != Bytes(a->to.dir)) Wcc(a->to.dir, tw, l);
      if (ok) {
        names_.OnRename(Bytes(a->from.dir), a->from.name, Bytes(a->to.dir), a->to.name,
                        DirChange::FromWcc(fw), DirChange::FromWcc(tw));
        if (!moved.empty()) RememberChild(Bytes(a->to.dir), a->to.name, moved);
        // Onto another link of the same file: nothing changed (POSIX), and
        // the source name must still lead a later REMOVE to the file.
        if (!moved.empty() && moved == replaced) {
          RememberChild(Bytes(a->from.dir), a->from.name, moved);
        }
      }
      return;
    }
    case NFSPROC3_LINK: {
      const auto* a = static_cast<const LINK3args*>(args);
      const auto* r = static_cast<const LINK3res*>(res);
      const post_op_attr& fa =
          ok ? r->LINK3res_u.resok.file_attributes : r->LINK3res_u.resfail.file_attributes;
      // A new link changed the file's link count and ctime: without its
      // attributes in the reply, the ones cached are out of date.
      if (ok) {
        MutatedPostOp(a->file, fa, l);
      } else {
        PostOp(a->file, fa, l);
      }
      const wcc_data& w = ok ? r->LINK3res_u.resok.linkdir_wcc : r->LINK3res_u.resfail.linkdir_wcc;
      NoteDirChange(Bytes(a->link.dir));
      Wcc(a->link.dir, w, l);
      if (ok) {
        names_.OnCreate(Bytes(a->link.dir), a->link.name, Bytes(a->file), DirChange::FromWcc(w));
        RememberChild(Bytes(a->link.dir), a->link.name, Bytes(a->file));
      }
      return;
    }
    case NFSPROC3_READDIR: {
      const auto* a = static_cast<const READDIR3args*>(args);
      const auto* r = static_cast<const READDIR3res*>(res);
      PostOp(a->dir,
             ok ? r->READDIR3res_u.resok.dir_attributes : r->READDIR3res_u.resfail.dir_attributes,
             l);
      // The directory's pages may hold cookies the upstream no longer
      // honours, whether or not its attributes show a change: they go. Its
      // names stay (tied to its attributes, not to cookies).
      if (RejectsCookie(status)) dirs_.InvalidateDir(Bytes(a->dir));
      return;
    }
    case NFSPROC3_READDIRPLUS: {
      const auto* a = static_cast<const READDIRPLUS3args*>(args);
      const auto* r = static_cast<const READDIRPLUS3res*>(res);
      const post_op_attr& dir_attr = ok ? r->READDIRPLUS3res_u.resok.dir_attributes
                                        : r->READDIRPLUS3res_u.resfail.dir_attributes;
      PostOp(a->dir, dir_attr, l);
      if (RejectsCookie(status)) dirs_.InvalidateDir(Bytes(a->dir));  // as for READDIR
      if (!ok || !dir_attr.attributes_follow) return;
      ChangeId dir_change = ChangeId::FromFattr(dir_attr.post_op_attr_u.attributes);
      for (const entryplus3* e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
        if (!e->name_handle.handle_follows || IsDotName(e->name)) continue;
        const nfs_fh3& child = e->name_handle.post_op_fh3_u.handle;
        PostOp(child, e->name_attributes, l);
        names_.PutPositive(Bytes(a->dir), e->name, Bytes(child), dir_change);
        RememberChild(Bytes(a->dir), e->name, Bytes(child));
      }
      return;
    }
    case NFSPROC3_FSSTAT: {
      const auto* r = static_cast<const FSSTAT3res*>(res);
      PostOp(static_cast<const FSSTAT3args*>(args)->fsroot,
             NFSEDGE_ARM(FSSTAT3res, r, obj_attributes), l);
      return;
    }
    case NFSPROC3_FSINFO: {
      const auto* r = static_cast<const FSINFO3res*>(res);
      PostOp(static_cast<const FSINFO3args*>(args)->fsroot,
             NFSEDGE_ARM(FSINFO3res, r, obj_attributes), l);
      LearnFsStatic(p.proc, static_cast<const FSINFO3args*>(args)->fsroot, res);
      return;
    }
    case NFSPROC3_PATHCONF: {
      const auto* r = static_cast<const PATHCONF3res*>(res);
      PostOp(static_cast<const PATHCONF3args*>(args)->object,
             NFSEDGE_ARM(PATHCONF3res, r, obj_attributes), l);
      LearnFsStatic(p.proc, static_cast<const PATHCONF3args*>(args)->object, res);
      return;
    }
    case NFSPROC3_COMMIT: {
      const auto* r = static_cast<const COMMIT3res*>(res);
      Wcc(static_cast<const COMMIT3args*>(args)->file,
          ok ? r->COMMIT3res_u.resok.file_wcc : r->COMMIT3res_u.resfail.file_wcc, l);
      return;
    }
    default:
      return;
  }
#undef NFSEDGE_ARM
}

void MetadataCache::LearnCreate(const diropargs3& where, const post_op_fh3* obj,
                                const post_op_attr* obj_attr, const wcc_data& w,
                                const ExportLifetimes& l) {
  // The file the name led to before (an UNCHECKED CREATE that sets the size
  // truncates it).
  const std::string before = obj ? KnownChild(where) : std::string();
  NoteDirChange(Bytes(where.dir));
  Wcc(where.dir, w, l);
  if (!obj) return;  // failed: the wcc data said all there is to say
  // Nothing says what became of it (or not from this reply): what is known
  // of it goes.
  // (The new object's own, below.)
  if (!before.empty() &&
      (!obj->handle_follows ||
       (!obj_attr->attributes_follow && Bytes(obj->post_op_fh3_u.handle) != before))) {
    ForgetMutated(before);
  }
  if (obj->handle_follows) {
    const nfs_fh3& child = obj->post_op_fh3_u.handle;
    MutatedPostOp(child, *obj_attr, l);
    names_.OnCreate(Bytes(where.dir), where.name, Bytes(child), DirChange::FromWcc(w));
    RememberChild(Bytes(where.dir), where.name, Bytes(child));
  } else {
    names_.InvalidateDir(Bytes(where.dir));  // a new name with an unknown handle
  }
}

std::string MetadataCache::ChildKey(std::string_view dir, std::string_view name) {
  std::string key;
  AppendPrefixed(&key, dir);
  AppendPrefixed(&key, name);
  return key;
}

void MetadataCache::RememberChild(std::string_view dir, std::string_view name,
                                  std::string_view child) {
  if (max_children_ == 0) return;
  last_child_.Put(ChildKey(dir, name), std::string(child));
  while (last_child_.size() > max_children_) last_child_.Erase(last_child_.Oldest()->key);
  parent_of_.Put(child, std::string(dir));
  while (parent_of_.size() > max_children_) parent_of_.Erase(parent_of_.Oldest()->key);
}

std::optional<std::string> MetadataCache::ParentOf(std::string_view child) {
  if (std::string* d = parent_of_.Peek(child)) return *d;
  return std::nullopt;
}

std::string MetadataCache::KnownChild(const diropargs3& d) {
  if (std::string* c = last_child_.Peek(ChildKey(Bytes(d.dir), d.name))) return *c;
  return names_.Peek(Bytes(d.dir), d.name ? d.name : "");
}

void MetadataCache::ForgetChild(const diropargs3& d, const wcc_data* dir_wcc) {
  const std::string child = KnownChild(d);
  last_child_.Erase(ChildKey(Bytes(d.dir), d.name));
  if (child.empty()) return;
  NoteDirChange(child);  // a moved directory's ".." changed
  if (dir_wcc != nullptr && dir_wcc->after.attributes_follow) {
    attrs_.InvalidateBefore(child, NfsTime::From(dir_wcc->after.post_op_attr_u.attributes.ctime));
    attr_changes_.Note(child);  // kept if the floor's entry is evicted
    if (mutated_) mutated_(child);
  } else {
    ForgetMutated(child);
  }
  // If it was a directory, its names and listing went too (a listing's ".."
  // names the parent it had).
  names_.InvalidateDir(child);
  dirs_.InvalidateDir(child);
}

void MetadataCache::ForgetMovedAway(const RENAME3args& a, const wcc_data* from_wcc) {
  if (Bytes(a.from.dir) == Bytes(a.to.dir)) return;  // ".." stays
  ForgetChildrenOf(a.from.dir, from_wcc);
}

void MetadataCache::ForgetChildrenOf(const nfs_fh3& dir, const wcc_data* wcc) {
  std::optional<uint64_t> fileid;
  if (wcc != nullptr && wcc->after.attributes_follow) {
    fileid = wcc->after.post_op_attr_u.attributes.fileid;
  } else {
    fileid = attrs_.FileId(Bytes(dir));
  }
  // Listings in flight (sent before now) that name the source as ".." are
  // not kept either when they come back.
  if (fileid) {
    dirs_.InvalidateChildrenOf(*fileid);
    moved_from_.Note(FileIdKey(*fileid));
  } else {
    dirs_.InvalidateAllChildren();
    moved_from_any_ = moved_from_.Note(std::string_view());
  }
}

std::string MetadataCache::FileIdKey(uint64_t fileid) {
  std::string key;
  AppendU64(&key, fileid);
  return key;
}

bool MetadataCache::ParentMovedFrom(uint64_t parent_fileid) const {
  return SentBefore(learning_, moved_from_any_) ||
         SentBefore(learning_, moved_from_.Last(FileIdKey(parent_fileid)));
}

bool MetadataCache::AttributesStand(std::string_view fh, const fattr3& a) {
  if (!attrs_.keeps_entries()) return true;
  std::optional<fattr3> kept = attrs_.Latest(fh);
  return kept && ChangeId::FromFattr(*kept) == ChangeId::FromFattr(a) &&
         PermId::FromFattr(*kept) == PermId::FromFattr(a);
}

void MetadataCache::ForgetUnanswered(const NfsProc& p, const void* args) {
  if ((p.flags & kMutating) == 0) return;
  // The children first, while the directories' names still tell them.
  switch (p.proc) {
    case NFSPROC3_REMOVE:
      ForgetChild(static_cast<const REMOVE3args*>(args)->object);
      break;
    case NFSPROC3_RMDIR: {
      const diropargs3& d = static_cast<const RMDIR3args*>(args)->object;
      if (KnownChild(d).empty()) ForgetChildrenOf(d.dir, nullptr);
      ForgetChild(d);
      break;
    }
    case NFSPROC3_RENAME: {
      const auto* a = static_cast<const RENAME3args*>(args);
      if (KnownChild(a->from).empty()) ForgetMovedAway(*a, nullptr);
      ForgetChild(a->from);
      ForgetChild(a->to);
      break;
    }
    case NFSPROC3_CREATE: {
      // A new name; or, for an UNCHECKED CREATE over the file the name led
      // to, that file truncated. (Its directory's names go below.)
      const std::string before = KnownChild(static_cast<const CREATE3args*>(args)->where);
      if (!before.empty()) ForgetMutated(before);
      break;
    }
    default:
      break;  // a new name (MKDIR, SYMLINK, MKNOD fail on one in use)
  }
  std::vector<const nfs_fh3*> handles;
  p.arg_handles(args, &handles);
  for (const nfs_fh3* fh : handles) {
    NoteDirChange(Bytes(*fh));
    Forget(Bytes(*fh));
    ForgetMutated(Bytes(*fh));  // and replies sent before do not bring it back
  }
}

void MetadataCache::LearnRemove(const diropargs3& what, bool ok, const wcc_data& w,
                                const ExportLifetimes& l, bool rmdir) {
  NoteDirChange(Bytes(what.dir));
  if (ok && rmdir && KnownChild(what).empty()) ForgetChildrenOf(what.dir, &w);
  if (ok) ForgetChild(what, &w);  // gone, or its link count changed
  Wcc(what.dir, w, l);
  if (ok) names_.OnRemove(Bytes(what.dir), what.name, DirChange::FromWcc(w));
}

}  // namespace nfsedge
