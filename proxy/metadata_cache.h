// MetadataCache: answers GETATTR, ACCESS, LOOKUP, READLINK, FSINFO and
// PATHCONF from the attribute, ACCESS, name and link caches (cache/) and
// what file systems said of themselves when they prove the answer fresh,
// and
// learns from every upstream reply (post-op attributes, wcc data, names,
// ACCESS results, READDIRPLUS entries).
//
// Freshness: an answer is given only from entries within the export's
// lifetimes (acregmin/acregmax, acdirmin/acdirmax; 0 = always ask). Every
// mutation through the proxy updates the entries it touches from its reply's
// wcc data, so clients of the proxy see their own and each other's changes
// at once; a wcc "before" that is not what the cache held drops what
// depended on the object.
//
// Confinement (DESIGN rule 6): a LOOKUP is answered to a credential only if
// the ACCESS cache proves that the upstream lets that credential search the
// directory; ACCESS answers are per credential, and so are READLINK's (a
// target only to a credential the upstream gave it to). GETATTR, FSINFO and
// PATHCONF need no evidence: the upstream answers them to anyone who holds
// the handle (FSINFO and PATHCONF never from expired entries).
//
// Upstream outage (proxy/outage.h): on an export with serve_stale_on_outage,
// while the upstream is out, GETATTR, ACCESS, LOOKUP and READLINK that the fresh
// entries cannot answer are answered from entries past their lifetime
// (AttrCache::GetExpired, AccessCache with allow_expired), by the same rules
// otherwise: ACCESS evidence for the credential, names tied to the
// directory's attributes, nothing from ambiguous entries or from what a
// mutation through the proxy invalidated. Each such answer is counted
// (stale_answers()); READ does the same in ReadPath.
//
// Thread-safety: single-threaded, on the event loop.
#ifndef NFSEDGE_PROXY_METADATA_CACHE_H_
#define NFSEDGE_PROXY_METADATA_CACHE_H_

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cache/access_cache.h"
#include "cache/attr_cache.h"
#include "cache/change_marks.h"
#include "cache/clock.h"
#include "cache/cred_key.h"
#include "cache/dir_cache.h"
#include "cache/lifetime.h"
#include "cache/link_cache.h"
#include "cache/lru_map.h"
#include "cache/name_cache.h"
#include "proxy/config.h"
#include "proxy/exports.h"
#include "proxy/nfs_procs.h"
#include "proxy/outage.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

// When the upstream call whose reply is learned left the proxy
// (RpcReply::sent_at; the epoch: not known) and how many times it was sent
// (0: not known).
struct SentCall {
  std::chrono::steady_clock::time_point at{};
  uint32_t transmissions = 0;
};
// The SentCall of an upstream reply.
inline SentCall SentOf(const RpcReply& r) { return SentCall{r.sent_at, r.transmissions}; }

class MetadataCache {
 public:
  MetadataCache(const Clock& clock, const CacheConfig& config);

  // Returns the results (NFSv3 result union, XDR) answering `p` with decoded
  // `args` for `cred` on `exp` iff the caches prove them fresh and allowed
  // (or, during an outage, allowed and past their lifetime: ServeStale).
  std::optional<std::string> Answer(const NfsProc& p, const void* args, const Export& exp,
                                    const CredKey& cred);

  // The detector that says whether the upstream is out; null = never.
  void SetOutage(const OutageDetector* outage) { outage_ = outage; }
  // Returns, for each handle of `children` that was last seen as a name in
  // a directory (LOOKUP, READDIRPLUS, CREATE, RENAME, LINK replies), that
  // directory's handle and the name, the most recently seen if several.
  // One pass over the remembered names (bounded by cache.max_name_entries):
  // for `nfsedge status`, not for the path of a call.
  std::unordered_map<std::string, std::pair<std::string, std::string>> ParentsOf(
      const std::unordered_set<std::string>& children) const;
  // Sets the bounds of the attribute, ACCESS, name and directory caches
  // from `config` (config reload); a lower bound evicts down to it at once.
  void SetLimits(const CacheConfig& config);
  // The directory `child` was last seen in (a LOOKUP or listing), if
  // remembered: a hint for bulk revalidation, not proof it is still there.
  std::optional<std::string> ParentOf(std::string_view child);
  // Returns true iff answers on `exp` may now come from expired entries:
  // the upstream is out and the export has serve_stale_on_outage.
  bool ServeStale(const Export& exp) const;
  // The attributes of `fh`, fresh or past their lifetime (for ServeStale).
  std::optional<fattr3> ExpiredAttributes(std::string_view fh) { return attrs_.GetExpired(fh); }
  // The latest attributes of `fh` the upstream gave, fresh or not (see
  // AttrCache::Latest).
  std::optional<fattr3> LatestAttributes(std::string_view fh) { return attrs_.Latest(fh); }
  // The newest ctime known of `fh` (AttrCache::NewestCtime).
  std::optional<NfsTime> NewestCtime(std::string_view fh) { return attrs_.NewestCtime(fh); }
  // Whether `a`, from a reply about `fh` just learned, stands: the latest
  // attributes the cache holds for `fh` have its change attributes,
  // owner, group and mode (the cache did not refuse it as overtaken by what
  // it learned since the call left), or the cache keeps no attributes at all
  // (max_attr_entries = 0), which then orders nothing.
  bool AttributesStand(std::string_view fh, const fattr3& a);
  // A count of attributes learned that were new for their object, and
  // whether `fh`'s were so learned after the count was `seq` (a reply to a
  // call sent before may show an older state than one already answered).
  uint64_t AttrChangeSeq() const { return attrs_.change_seq(); }
  bool AttrsChangedSince(std::string_view fh, uint64_t seq) { return attrs_.ChangedSince(fh, seq); }
  // Counts an answer of procedure `proc` given from expired entries.
  void NoteStaleAnswer(uint32_t proc) { stale_answers_[proc]++; }
  // Answers given from expired entries during outages, by procedure.
  uint64_t stale_answers(uint32_t proc) const { return stale_answers_[proc]; }

  // Learns from the upstream's `results` (XDR) to `p` with `args`, sent for
  // `cred`. Results that do not decode are ignored. A READDIR or READDIRPLUS
  // refused for its cookie or verifier (NFS3ERR_BAD_COOKIE, NFS3ERR_NOT_SYNC)
  // drops the directory's listing pages.
  // A LOOKUP, READDIR or READDIRPLUS reply to a call that left before a
  // change of its directory through the proxy was learned (a CREATE,
  // REMOVE, RENAME, LINK, ... answered since), or that was sent more than
  // once after one, teaches nothing: the server may have answered it before
  // the change, and within one server clock tick the directory's
  // attributes would not tell (counter names_overtaken). Likewise the
  // attributes of an object in a reply to a call that left before a
  // mutation of it whose reply left them out (counter attrs_overtaken).
  // Without `per_credential`, no ACCESS result or symlink target is kept
  // for `cred` (one never answered from cache: more than 16 groups, whose
  // key may be another's).
  void Learn(const NfsProc& p, const void* args, std::string_view results, const Export& exp,
             const CredKey& cred, SentCall sent = {}, bool per_credential = true);
  // Replies of LOOKUP and listings not learned: overtaken by a change of
  // their directory through the proxy.
  uint64_t names_overtaken() const { return names_overtaken_; }
  // Attributes in replies not learned: their call left before a mutation
  // through the proxy whose reply did not return the object's attributes
  // (or was itself such a reply).
  uint64_t attrs_overtaken() const { return attrs_overtaken_; }
  // Handles of calls the upstream answered NFS3ERR_STALE, forgotten.
  uint64_t stale_handles() const { return stale_handles_; }
  // ACCESS entries dropped because the upstream answered a call on their
  // object NFS3ERR_ACCES or NFS3ERR_PERM for their credential.
  uint64_t refused_access() const { return refused_access_; }

  // Returns true iff the caches prove that `cred` may search directory
  // `dir` (fresh attributes and an ACCESS result granting LOOKUP).
  bool HasSearchEvidence(std::string_view dir, const CredKey& cred);
  // Returns true iff a fresh ACCESS result exists for (`fh`, `cred`) that
  // asked for every bit of `mask`.
  bool HasAccess(std::string_view fh, const CredKey& cred, uint32_t mask);
  // Returns true iff the link cache holds `fh`'s target for `cred` at
  // `version` (counts no lookup).
  bool HasLink(std::string_view fh, const ChangeId& version, const CredKey& cred) const {
    return links_.Has(fh, version, cred);
  }
  // Whether the link cache keeps anything (cache.max_link_bytes > 0).
  bool KeepsLinks() const { return links_.max_bytes() > 0; }
  // Whether the first page of `dir`'s listing could be answered from the
  // cache now as far as the cache's contents go: the directory's
  // attributes, the page, and every entry's attributes are fresh (the
  // credential's ACCESS is checked when answering). Counts nothing, uses
  // nothing (defined in dir_listing.cc).
  bool ListingFresh(std::string_view dir);
  // The bytes a READDIRPLUS of `dir` at `cookie` (cookie verifier `verf`)
  // is expected to bring, for the upstream scheduler's count of bytes in
  // flight: the page last stored for it, fresh or not, and a quarter more
  // (the directory may have grown); `otherwise` if none is stored.
  uint64_t ListingReplyHint(std::string_view dir, uint64_t cookie, const CookieVerf& verf,
                            uint64_t otherwise) {
    // (A page at cookie 0 is kept without a verifier: see dir_listing.cc.)
    const size_t stored = dirs_.StoredBytes(
        DirPageKey{std::string(dir), true, cookie, cookie == 0 ? CookieVerf{} : verf, 0});
    return stored == 0 ? otherwise : stored + stored / 4;
  }

  // Returns the attributes of `fh` iff fresh (marks them used).
  std::optional<fattr3> FreshAttributes(std::string_view fh) { return attrs_.Get(fh); }
  // The same, for an answer through `exp`: not older than the lifetime
  // `exp`'s min and max would have given it either (as for GETATTR; an
  // export nested in another, or a reload, may allow less than the entry
  // was learned under).
  std::optional<fattr3> FreshAttributes(std::string_view fh, const Export& exp) {
    return Attrs(fh, false, exp);
  }
  // The same, also from an entry whose size and times are ambiguous (two
  // replies in one server clock tick): its type, owner and mode are sure.
  // Through `exp`: not older than its lifetime there either (as above).
  std::optional<fattr3> FreshPermissions(std::string_view fh, const Export& exp);
  // Returns the handle `d` last named, from RememberChild or the name cache
  // (possibly out of date); empty if unknown.
  std::string KnownChild(const diropargs3& d);
  // Returns true iff a fresh ACCESS result proves that the upstream grants
  // every bit of `bits` to `cred` on `fh`, whose fresh attributes are `attr`.
  // With `allow_expired` (ServeStale), an expired ACCESS result counts.
  bool Allows(std::string_view fh, const CredKey& cred, uint32_t bits, const fattr3& attr,
              bool allow_expired = false) {
    return access_.Allows(fh, cred, bits, attr, allow_expired);
  }

  // Handles of attributes used since their fill that expire within
  // `window` (AttrCache::RefreshCandidates).
  std::vector<std::string> RefreshCandidates(Duration window, size_t max) {
    return attrs_.RefreshCandidates(window, max);
  }
  void ReturnRefreshCandidates(const std::vector<std::string>& handles) {
    attrs_.ReturnRefreshCandidates(handles);
  }

  // Forgets what is cached about `fh`: its attributes (so its data and
  // names are revalidated) and, for a directory, its names.
  void Forget(std::string_view fh) {
    attrs_.Invalidate(fh);
    names_.InvalidateDir(fh);
    dirs_.InvalidateDir(fh);
    links_.Invalidate(fh);
    ForgetFsStatic(fh);
  }
  // Forget(), and replies to calls sent before do not bring back what was
  // forgotten (the server said the handle is stale; an administrator asked
  // for the head office's state).
  void ForgetNow(std::string_view fh) {
    NoteDirChange(fh);
    Forget(fh);
    ForgetMutated(fh);
  }
  // ForgetNow(), and every credential's ACCESS result for `fh` (an
  // administrator's drop-cache: the server's answer may have changed while
  // the object's attributes did not). ACCESS replies sent before are not
  // learned either (their attributes are overtaken: ForgetMutated). Walks
  // the ACCESS cache.
  void ForgetWithAccess(std::string_view fh) {
    ForgetNow(fh);
    access_.InvalidateHandle(fh);
  }
  // A call of `p` (with decoded `args`) that changes the file system and
  // whose reply never came (a timeout, a connection lost): the upstream may
  // have carried it out. Forgets what it may have changed (every object it
  // names, and the children it names in directories), and counts its
  // directories as changed, so that no reply sent before it teaches their
  // old state.
  void ForgetUnanswered(const NfsProc& p, const void* args);
  // Forgets everything (nfsedge drop-cache); replies to calls sent before
  // teach nothing (Learn).
  void Clear() {
    attrs_.Clear();
    access_.Clear();
    names_.Clear();
    dirs_.Clear();
    links_.Clear();
    while (!fs_static_.empty()) fs_static_.Erase(fs_static_.Oldest()->key);
    cleared_ = ChangeMarks::Mark{1, std::chrono::steady_clock::now()};
  }

  // The shortest lifetimes among the exports a handle belongs to (nested
  // exports, or two of one upstream file system: the handle registry knows),
  // nullopt if unknown. What is learned of a handle through one export then
  // lives no longer than another of its exports allows: a client of the one
  // that always revalidates is not answered from what the other learned.
  using LifetimeLimit = std::function<std::optional<ExportLifetimes>(std::string_view fh)>;
  void SetLifetimeLimit(LifetimeLimit limit) { limit_ = std::move(limit); }
  // Told of each object a mutation changed in a way no reply showed (its
  // attributes were forgotten): another holder of them (the write path's
  // replies) forgets them too.
  using MutationObserver = std::function<void(std::string_view fh)>;
  void SetMutationObserver(MutationObserver observer) { mutated_ = std::move(observer); }
  // Told of each object whose attributes the cache let go, with the newest
  // ctime it knew (AttrCache::SetForgetObserver).
  void SetAttrForgetObserver(AttrCache::ForgetObserver observer) {
    attrs_.SetForgetObserver(std::move(observer));
  }

  const AttrCache& attrs() const { return attrs_; }
  const AccessCache& access() const { return access_; }
  // A reload lowered some export's attribute lifetimes to `max` at the
  // shortest: ACCESS results (whose expiry is set when learned) expire
  // within it. (Attributes and listings are judged by their age against the
  // answering export's lifetimes as they are.)
  void ShortenAccessLifetimes(Duration max) { access_.ClampExpiry(max); }
  const NameCache& names() const { return names_; }
  const DirCache& dirs() const { return dirs_; }
  const LinkCache& links() const { return links_; }

 private:
  // Answer() for GETATTR, ACCESS, LOOKUP, READLINK, FSINFO and PATHCONF
  // from fresh entries, or from expired ones too if `stale`.
  std::optional<std::string> AnswerAttrs(const NfsProc& p, const void* args, const Export& exp,
                                         const CredKey& cred, bool stale);
  // Fresh attributes of `fh` (or expired ones too if `stale`), no older than
  // `exp`'s lifetimes allow now: an entry filled under longer ones (before a
  // reload lowered them) is not fresh past them.
  std::optional<fattr3> Attrs(std::string_view fh, bool stale, const Export& exp);
  // Whether `fh`'s entry (attributes `attr`) is older than the lifetime
  // `exp`'s lifetimes would have given it when it was learned.
  bool OutlivedFor(std::string_view fh, const fattr3& attr, const Export& exp);
  std::optional<std::string> AnswerLookup(const LOOKUP3args& a, const Export& exp,
                                          const CredKey& cred, bool stale);
  std::optional<std::string> AnswerReadlink(const READLINK3args& a, const Export& exp,
                                            const CredKey& cred, bool stale);
  // FSINFO or PATHCONF (`proc`) of `object` from what the upstream said of
  // it, no older than the object's attribute lifetime, with its fresh
  // attributes; never if `stale` (defined in metadata_static.cc, as
  // AnswerReadlink).
  std::optional<std::string> AnswerFsStatic(uint32_t proc, const nfs_fh3& object,
                                            const Export& exp, bool stale);
  // Keeps (or, for an error, forgets) what the FSINFO or PATHCONF reply
  // `res` said of `object`.
  void LearnFsStatic(uint32_t proc, const nfs_fh3& object, const void* res);
  // Forgets what FSINFO and PATHCONF said of `fh`.
  void ForgetFsStatic(std::string_view fh);
  // Answers READDIRPLUS (`plus`) or READDIR `args` from a listing page
  // (defined in dir_listing.cc).
  std::optional<std::string> AnswerListing(bool plus, const void* args, const Export& exp,
                                           const CredKey& cred);
  // Stores the upstream's READDIRPLUS `results` (decoded: `r`) to `a`.
  void LearnListing(const READDIRPLUS3args& a, const READDIRPLUS3res& r,
                    std::string_view results);
  void LearnDecoded(const NfsProc& p, const void* args, const void* res, const Export& exp,
                    const CredKey& cred, bool per_credential);
  void LearnCreate(const diropargs3& where, const post_op_fh3* obj, const post_op_attr* obj_attr,
                   const wcc_data& w, const ExportLifetimes& l);
  // `rmdir`: an RMDIR (a directory whose object the proxy does not know
  // has its listing dropped through ForgetChildrenOf).
  void LearnRemove(const diropargs3& what, bool ok, const wcc_data& w, const ExportLifetimes& l,
                   bool rmdir = false);
  // Remembers that `name` in `dir` was `child`, whatever happens to the
  // directory's name cache entries, so that a REMOVE, RMDIR or RENAME
  // through the proxy can forget the child's attributes.
  void RememberChild(std::string_view dir, std::string_view name, std::string_view child);
  // Forgets the attributes (and names, for a directory) of the object `d`
  // last named, if known.
  // `dir_wcc`, if given, is the REMOVE's: the removed name's object (other
  // links may keep it) then refuses attributes older than the directory's
  // new ctime, which the object shares (a reply sent before the REMOVE and
  // arriving after it must not bring back the old link count).
  void ForgetChild(const diropargs3& d, const wcc_data* dir_wcc = nullptr);
  // A RENAME into another directory of an object the proxy does not know:
  // if it was a directory, its listing's ".." names the source directory
  // no more, so the listing pages of every directory whose ".." is the
  // source (`from_wcc`'s fileid or the cached one; every listing with a
  // ".." when neither is known) go.
  void ForgetMovedAway(const RENAME3args& a, const wcc_data* from_wcc);
  // The listing pages of every directory whose ".." is `dir` (`wcc`'s
  // fileid or the cached one; every listing with a ".." when neither is
  // known) go, and listings in flight naming it as ".." are not kept: a
  // child directory the proxy does not know was moved away or removed.
  void ForgetChildrenOf(const nfs_fh3& dir, const wcc_data* wcc);
  static std::string FileIdKey(uint64_t fileid);
  // Whether the listing being learned (learning_), whose ".." is
  // `parent_fileid`, may predate a ForgetMovedAway of that parent.
  bool ParentMovedFrom(uint64_t parent_fileid) const;
  static std::string ChildKey(std::string_view dir, std::string_view name);
  // The lifetime of what is learned of `fh` (of `type`) through an export
  // with lifetimes `l`, within limit_.
  Lifetime LifetimeOf(std::string_view fh, const ExportLifetimes& l, ftype3 type) const;
  void PostOp(const nfs_fh3& fh, const post_op_attr& a, const ExportLifetimes& l);
  // The same for the object a successful mutation changed: attributes it
  // leaves out, or that are not learned (AttrsOvertaken), forget the old.
  void MutatedPostOp(const nfs_fh3& fh, const post_op_attr& a, const ExportLifetimes& l);
  // Applies wcc data to the attribute cache. Returns true iff it shows that
  // only this operation changed the object (or nothing did), so what depends
  // on the object stays valid.
  bool ApplyWccKeepsDependents(std::string_view fh, const wcc_data& w, const ExportLifetimes& l);
  // Applies a directory's or file's wcc data; drops its names when it changed
  // behind the proxy's back.
  void Wcc(const nfs_fh3& fh, const wcc_data& w, const ExportLifetimes& l);
  // Marks `dir` changed through the proxy now (its names, its listing, or,
  // for a moved directory, its "..").
  void NoteDirChange(std::string_view dir) { dir_changes_.Note(dir); }
  // Whether a reply about `dir` to a call `sent` may predate a change of
  // `dir` marked by NoteDirChange.
  bool OvertakenByChange(std::string_view dir, const SentCall& sent) const;
  // Drops the attributes of `fh` after a mutation whose reply did not say
  // what they became, and marks the moment: a reply to a call that left
  // before it may carry the attributes from before the mutation (the
  // server answered it first), with nothing to order them by.
  void ForgetMutated(std::string_view fh);
  // Whether the reply being learned (learning_) may predate a mutation of
  // `fh` marked by ForgetMutated: its attributes of `fh` are not learned.
  bool AttrsOvertaken(std::string_view fh);
  // The same, without counting.
  bool MayPredateForget(std::string_view fh) const;
  // True iff the ACCESS reply being learned (`learning_`) for (fh, cred)
  // left before the upstream refused that credential a call on fh (or
  // before the marks' floor, once 4096 pairs were refused), or was sent
  // more than once after a refusal or a floor (access_changes_).
  bool AccessOvertaken(std::string_view fh, const CredKey& cred);
  static std::string AccessMarkKey(std::string_view fh, const CredKey& cred);

  const Clock& clock_;
  AttrCache attrs_;
  AccessCache access_;
  NameCache names_;
  DirCache dirs_;
  LinkCache links_;
  // What FSINFO and PATHCONF said of a handle (the reply without its
  // attributes), by procedure and handle: a file system's own properties,
  // answered to any credential (as the upstream does), while the handle's
  // attributes are fresh and for no longer than their lifetime.
  struct FsStatic {
    MonoTime learned;
    FSINFO3resok fsinfo{};
    PATHCONF3resok pathconf{};
  };
  static constexpr size_t kMaxFsStatic = 4096;
  LruMap<FsStatic> fs_static_;
  // File systems (fsid) whose PATHCONF said case_insensitive: a name there
  // is found under other spellings than the one cached ("foo" after a
  // CREATE of "Foo"), so LOOKUP is never answered from the name cache.
  // Never forgotten; at most kMaxFsStatic.
  std::unordered_set<uint64_t> case_insensitive_fsids_;
  size_t max_children_;
  LruMap<std::string> last_child_;  // ChildKey(dir, name) -> child handle
  LruMap<std::string> parent_of_;   // child handle -> the directory it was last seen in
  const OutageDetector* outage_ = nullptr;
  std::array<uint64_t, kNfsProcCount> stale_answers_{};
  // Directory -> when it last changed through the proxy (bounded).
  ChangeMarks dir_changes_{4096};
  // Object -> when a mutation through the proxy last left its attributes
  // unknown (ForgetMutated; bounded).
  ChangeMarks attr_changes_{4096};
  // Refusals (NFS3ERR_ACCES, NFS3ERR_PERM) by (handle, credential).
  ChangeMarks access_changes_{4096};
  // Directories (by fileid) an object the proxy did not know was moved out
  // of (ForgetMovedAway): a listing sent before whose ".." is one of them
  // is not kept. `moved_from_any_`: the same for every listing with a "..",
  // when the source's fileid was not known.
  ChangeMarks moved_from_{4096};
  ChangeMarks::Mark moved_from_any_;
  // When everything was last forgotten (Clear).
  ChangeMarks::Mark cleared_;
  // The call whose reply Learn() is learning from.
  SentCall learning_{};
  // When the call of the reply being learned left, for ordering replies of
  // one ctime (AttrCache::Put); the epoch: not known, or sent more than once.
  AttrCache::SentTime LearningSent() const;
  uint64_t names_overtaken_ = 0;
  uint64_t attrs_overtaken_ = 0;
  uint64_t stale_handles_ = 0;
  uint64_t refused_access_ = 0;
  LifetimeLimit limit_;
  MutationObserver mutated_;
};

// Returns the export's lifetimes from its config.
ExportLifetimes LifetimesOf(const Export& exp);
// Returns the cache key of a credential as sent upstream.
CredKey CredKeyOf(const OpaqueAuth& cred);
// Returns `granted` without write bits on a read-only export.
uint32_t MaskAccess(const Export& exp, uint32_t granted);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_METADATA_CACHE_H_
