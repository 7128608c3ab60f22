// MetadataCache's answers that need no name or listing: symlink targets
// (READLINK, from the link cache) and what a file system says of itself
// (FSINFO, PATHCONF); and how long attributes are fresh for an export.
#include "proxy/metadata_cache.h"

#include <cstring>
#include <optional>

#include "proxy/metadata_encode.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

using metadata_encode::Encode;
using metadata_encode::SetPostOp;

// The key of what `proc` (FSINFO, PATHCONF) said of `fh`.
std::string FsKey(uint32_t proc, std::string_view fh) {
  std::string key(1, static_cast<char>(proc));
  key.append(fh);
  return key;
}

}  // namespace

Lifetime MetadataCache::LifetimeOf(std::string_view fh, const ExportLifetimes& l,
                                   ftype3 type) const {
  Lifetime life = l.For(type);
  if (!limit_) return life;
  if (std::optional<ExportLifetimes> shortest = limit_(fh)) {
    const Lifetime& s = shortest->For(type);
    life.min = std::min(life.min, s.min);
    life.max = std::min(life.max, s.max);
  }
  return life;
}

bool MetadataCache::OutlivedFor(std::string_view fh, const fattr3& attr, const Export& exp) {
  // The entry's lifetime was computed when it was learned, under the
  // lifetimes of the exports the handle belonged to then. `exp`'s own (a
  // nested export's, or the new ones after a reload) may be shorter, its
  // min as well as its max: the lifetime it would have given then.
  std::optional<Duration> age = attrs_.Age(fh);
  if (!age) return false;
  const Lifetime l = LifetimeOf(fh, LifetimesOf(exp), attr.type);
  return *age >= ComputeLifetime(l, clock_.WallNow() - *age,
                                 ChangeId::FromFattr(attr).LastChange());
}

std::optional<fattr3> MetadataCache::Attrs(std::string_view fh, bool stale, const Export& exp) {
  if (stale) return attrs_.GetExpired(fh);
  std::optional<fattr3> attr = attrs_.Get(fh);
  if (!attr || OutlivedFor(fh, *attr, exp)) return std::nullopt;
  return attr;
}

std::optional<fattr3> MetadataCache::FreshPermissions(std::string_view fh, const Export& exp) {
  std::optional<fattr3> attr = attrs_.Get(fh, /*allow_ambiguous=*/true);
  if (!attr || OutlivedFor(fh, *attr, exp)) return std::nullopt;
  return attr;
}

std::optional<std::string> MetadataCache::AnswerReadlink(const READLINK3args& a,
                                                         const Export& exp, const CredKey& cred,
                                                         bool stale) {
  std::string_view fh = HandleBytes(a.symlink);
  std::optional<fattr3> attr = Attrs(fh, stale, exp);
  if (!attr || attr->type != NF3LNK) return std::nullopt;
  // DESIGN rule 6: only a target the upstream gave this credential, at the
  // link's current stamp.
  std::optional<std::string> target = links_.Get(fh, ChangeId::FromFattr(*attr), cred);
  if (!target) return std::nullopt;
  READLINK3res res{};
  res.status = NFS3_OK;
  SetPostOp(&res.READLINK3res_u.resok.symlink_attributes, *attr);
  res.READLINK3res_u.resok.data = target->data();
  return Encode(reinterpret_cast<xdrproc_t>(xdr_READLINK3res), res);
}

std::optional<std::string> MetadataCache::AnswerFsStatic(uint32_t proc, const nfs_fh3& object,
                                                         const Export& exp, bool stale) {
  // (Not from expired entries during an outage: a mount, which asks for
  // them, needs the upstream's MNT anyway.)
  if (stale) return std::nullopt;
  std::string_view fh = HandleBytes(object);
  std::optional<fattr3> attr = Attrs(fh, false, exp);
  if (!attr) return std::nullopt;
  FsStatic* known = fs_static_.Find(FsKey(proc, fh));
  if (known == nullptr) return std::nullopt;
  // No older than the object's attributes may be: a server whose file
  // system was replaced (another volume mounted there) answers anew.
  const Duration age = clock_.MonoNow() - known->learned;
  if (age >= LifetimeOf(fh, LifetimesOf(exp), attr->type).max) return std::nullopt;
  if (proc == NFSPROC3_FSINFO) {
    FSINFO3res res{};
    res.status = NFS3_OK;
    res.FSINFO3res_u.resok = known->fsinfo;
    SetPostOp(&res.FSINFO3res_u.resok.obj_attributes, *attr);
    return Encode(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res), res);
  }
  PATHCONF3res res{};
  res.status = NFS3_OK;
  res.PATHCONF3res_u.resok = known->pathconf;
  SetPostOp(&res.PATHCONF3res_u.resok.obj_attributes, *attr);
  return Encode(reinterpret_cast<xdrproc_t>(xdr_PATHCONF3res), res);
}

void MetadataCache::ForgetFsStatic(std::string_view fh) {
  fs_static_.Erase(FsKey(NFSPROC3_FSINFO, fh));
  fs_static_.Erase(FsKey(NFSPROC3_PATHCONF, fh));
}

void MetadataCache::LearnFsStatic(uint32_t proc, const nfs_fh3& object, const void* res) {
  std::string_view fh = HandleBytes(object);
  if (fh.empty()) return;
  const std::string key = FsKey(proc, fh);
  nfsstat3 status;
  std::memcpy(&status, res, sizeof(status));
  if (status != NFS3_OK) {
    if (status != NFS3ERR_JUKEBOX) fs_static_.Erase(key);
    return;
  }
  // Not from a reply to a call sent before the handle was forgotten (a
  // STALE, a drop-cache): it may predate that. (The attributes' own check,
  // uncounted: PostOp counted it.)
  if (MayPredateForget(fh)) return;
  FsStatic s;
  s.learned = clock_.MonoNow();
  if (proc == NFSPROC3_FSINFO) {
    s.fsinfo = static_cast<const FSINFO3res*>(res)->FSINFO3res_u.resok;
    s.fsinfo.obj_attributes = post_op_attr{};
  } else {
    s.pathconf = static_cast<const PATHCONF3res*>(res)->PATHCONF3res_u.resok;
    if (s.pathconf.case_insensitive) {
      std::optional<fattr3> a;
      if (s.pathconf.obj_attributes.attributes_follow) {
        a = s.pathconf.obj_attributes.post_op_attr_u.attributes;
      } else {
        a = attrs_.Get(fh);
      }
      if (a && case_insensitive_fsids_.size() < kMaxFsStatic &&
          case_insensitive_fsids_.insert(a->fsid).second) {
        NFSEDGE_LOG(kInfo) << "metadata cache: the upstream's file system " << a->fsid
                           << " ignores case in names (PATHCONF): LOOKUPs in it go upstream";
      }
    }
    s.pathconf.obj_attributes = post_op_attr{};
  }
  fs_static_.Put(key, s);
  while (fs_static_.size() > kMaxFsStatic) fs_static_.Erase(fs_static_.Oldest()->key);
}

}  // namespace nfsedge
