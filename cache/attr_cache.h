// AttrCache: the freshest known attributes (fattr3) of upstream objects, by
// file handle.
//
// Filled from every upstream reply that carries attributes: GETATTR, LOOKUP,
// READDIRPLUS entries, post-op attributes and wcc data of every procedure
// (DESIGN rule 5). An entry is fresh for a lifetime computed when it is filled
// (lifetime.h: a tenth of the time since the object last changed, clamped to
// the export's min/max; min = max = 0 is never fresh). Get() answers only
// from fresh entries; a stale entry is kept, so that revalidation can compare
// ChangeIds: the caches derived from an object (names, pages, data) are
// stamped with its ChangeId and stay usable as long as a new GETATTR brings
// the same one.
//
// Out-of-order replies: attributes whose ctime is older than a fresh entry's
// are ignored (a GETATTR answered before a SETATTR must not undo it).
// Attributes with the same ctime as an entry but another size, mtime or
// link count cannot be ordered (a server's timestamps are coarser than its
// changes: two WRITEs in one clock tick, answered out of order), unless the
// reply's call left after the entry was learned (the server ran it later):
// the entry becomes ambiguous, and Get() does not answer from it until
// newer attributes come, or ones whose call left after it became so (in
// practice: the GETATTR that the miss makes the proxy send). If the owner,
// group or mode differ too, the entry is stale (conflicted) until then. A
// late reply equal to the stored one settles nothing: it may be a second
// copy of the older state.
//
// wcc data tells apart the proxy's own changes from changes made elsewhere:
// if the "before" attributes equal the cached ChangeId, nothing else touched
// the object between what the proxy knew and this operation.
//
// Refresh-ahead: an entry that was used (a fresh Get) since it was filled and
// expires within a window is a refresh candidate; the proxy revalidates those
// in the background so that clients rarely wait.
//
// Bounded (DESIGN rule 8): at most `max_entries`, least recently used evicted.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_ATTR_CACHE_H_
#define NFSEDGE_CACHE_ATTR_CACHE_H_

#include <rpc/xdr/nfs3.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/change_id.h"
#include "cache/clock.h"
#include "cache/lifetime.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct AttrCacheOptions {
  size_t max_entries = 100000;
};

struct AttrCacheStats {
  uint64_t hits = 0;       // Get() answered from a fresh entry
  uint64_t misses = 0;     // Get() found no entry
  uint64_t expired = 0;    // Get() found a stale entry
  uint64_t refreshes = 0;  // handles handed out by RefreshCandidates()
  uint64_t evictions = 0;  // entries dropped for the bound
  uint64_t invalidations = 0;
  uint64_t ignored_older = 0;  // replies older than the fresh entry, not applied
  uint64_t overtaken = 0;  // replies older than an expired entry: kept, not served
  uint64_t ambiguous = 0;      // replies that could not be ordered against the entry
  uint64_t expired_served = 0;  // GetExpired() answered from an entry past its lifetime
};

// What a wcc_data says about who changed the object.
enum class WccResult {
  kOwnChange,         // before == cached ChangeId: only this operation changed it
  kChangedElsewhere,  // before != cached ChangeId: changed behind the proxy's back
  kUnknown,           // no cached entry or no before attributes: cannot tell
};

// What a post-op attribute did to the entry.
enum class PostOpResult {
  kNoAttributes,  // attributes_follow was false: nothing learnt
  kInserted,      // there was no entry
  kUnchanged,     // same ChangeId as the entry (data derived from it stays valid)
  kChanged,       // different ChangeId
  kIgnored,       // older than the fresh entry (out-of-order reply)
};

class AttrCache {
 public:
  AttrCache(const Clock& clock, const AttrCacheOptions& options);
  AttrCache(const AttrCache&) = delete;
  AttrCache& operator=(const AttrCache&) = delete;

  // When the call whose reply carries the attributes left the proxy, for
  // a reply that answers that sending (the epoch: not known).
  using SentTime = std::chrono::steady_clock::time_point;

  // Stores `attr` for `handle`, fresh for a lifetime computed from `l`,
  // from a reply to a call `sent`. Returns what happened to the entry.
  PostOpResult Put(std::string_view handle, const fattr3& attr, const Lifetime& l,
                   SentTime sent = {});

  // Returns the attributes of `handle` iff a fresh entry exists (and is not
  // ambiguous, unless `allow_ambiguous`: only its type, owner, group and
  // mode are then certain), and marks the entry used (for LRU and
  // refresh-ahead).
  std::optional<fattr3> Get(std::string_view handle, bool allow_ambiguous = false);

  // For an upstream outage (serve_stale_on_outage): returns the attributes
  // of `handle` whether or not its entry is still fresh, iff there is an
  // entry that is not ambiguous and was not made stale on purpose (by
  // InvalidateBefore, by a reply with the same ctime and other owner,
  // group or mode, or by one older than the expired entry it replaced). An entry a mutation through the proxy invalidated is
  // gone and not answered. Marks the entry used for the LRU only.
  std::optional<fattr3> GetExpired(std::string_view handle);
  // Like Get() (without `allow_ambiguous`), but neither counted nor marked
  // used: for background work deciding whether to refresh an entry.
  std::optional<fattr3> PeekFresh(std::string_view handle);
  // The latest attributes the upstream gave for `handle`, fresh or not,
  // iff known and not ambiguous; not counted as a use.
  std::optional<fattr3> Latest(std::string_view handle);
  // The fileid of `handle` from any entry with attributes, fresh, stale,
  // ambiguous or conflicted (a handle's fileid never changes).
  std::optional<uint64_t> FileId(std::string_view handle);
  // A count of attributes learned that were new for their handle (no
  // entry, or another ChangeId; a floor set), and whether `handle`'s entry
  // was so learned after the count was `seq` (without an entry: whether an
  // entry so learned was forgotten since).
  uint64_t change_seq() const { return change_seq_; }
  bool ChangedSince(std::string_view handle, uint64_t seq);
  // Whether entries are kept at all (max_entries > 0).
  bool keeps_entries() const { return options_.max_entries > 0; }
  // How long ago the entry's attributes were learned (its lifetime was
  // computed then, under the lifetimes in force then); nullopt without one.
  std::optional<Duration> Age(std::string_view handle);

  // The newest ctime the entry for `handle` knows (its attributes', or a
  // floor's), whatever its state; nullopt without one. Not a use.
  std::optional<NfsTime> NewestCtime(std::string_view handle);

  // Returns the ChangeId of the entry for `handle`, fresh or stale, iff there
  // is one. Does not count as a use.
  std::optional<ChangeId> CachedChangeId(std::string_view handle);

  // Applies a post_op_attr from any reply. Absent attributes change nothing.
  PostOpResult ApplyPostOp(std::string_view handle, const post_op_attr& p, const Lifetime& l,
                           SentTime sent = {});

  // Applies the wcc_data of a mutation of `handle`: stores "after" if present,
  // otherwise drops the entry (the object changed to something unknown).
  // Returns whether the change was the proxy's own (see WccResult); on
  // anything but kOwnChange the caller invalidates what depends on the object.
  WccResult ApplyWcc(std::string_view handle, const wcc_data& w, const Lifetime& l,
                     SentTime sent = {});

  // Drops the entry for `handle`, if any.
  void Invalidate(std::string_view handle);
  // Drops what is known of `handle` and refuses, until attributes with a
  // ctime of at least `ctime` come, any older ones: a reply the upstream
  // sent before a change that touched the object without returning its
  // attributes (REMOVE of another link: only the directory's wcc data comes
  // back, and the object's ctime is the directory's) cannot bring back what
  // the change made stale.
  void InvalidateBefore(std::string_view handle, NfsTime ctime);

  // Returns up to `max` handles whose entries were used since they were last
  // filled, are still fresh, and expire within `window` from now, soonest
  // first. Each is handed out once per fill: a later Put() (the refresh's
  // reply) re-arms it.
  std::vector<std::string> RefreshCandidates(Duration window, size_t max);
  // Hands back candidates RefreshCandidates() gave that were not refreshed
  // (no room for their call): handed out again while still fresh.
  void ReturnRefreshCandidates(const std::vector<std::string>& handles);

  // Told of each object whose attributes the cache lets go (evicted,
  // dropped, or not kept at all: max_entries = 0), with the newest ctime it
  // knew of it: another holder of older attributes of the object (the
  // write path's replies) then knows they are not the newest.
  using ForgetObserver = std::function<void(std::string_view handle, NfsTime newest_ctime)>;
  void SetForgetObserver(ForgetObserver observer) { forgotten_ = std::move(observer); }
  // Told of each entry evicted while it still keeps older replies out (a
  // floor: InvalidateBefore's, or an overtaken reply's, or permissions
  // unordered against a reply): its owner then keeps them out another way.
  using FloorObserver = std::function<void(std::string_view handle)>;
  void SetFloorEvictObserver(FloorObserver observer) { floor_evicted_ = std::move(observer); }

  // Drops every entry (nfsedge drop-cache).
  void Clear();
  // Sets the bound (config reload): a lower one evicts the least recently
  // used entries down to it at once (counted as evictions).
  void SetMaxEntries(size_t max_entries);
  size_t size() const { return lru_.size(); }
  const AttrCacheStats& stats() const { return stats_; }

 private:
  using RefreshIndex = std::multimap<MonoTime, std::string>;
  struct Entry {
    fattr3 attr;
    ChangeId change;
    MonoTime expires;
    MonoTime filled;               // when these attributes were learned
    SentTime learned{};            // the same, on the clock of SentTime
    bool refresh_pending = false;  // handed out by RefreshCandidates()
    bool indexed = false;          // in refresh_index_ (used since fill)
    bool floor_only = false;       // InvalidateBefore(): no attributes, a ctime floor
    bool ambiguous = false;        // size or mtime unordered against another reply
    bool conflicted = false;       // expired at once: a floor, or unordered_perms
    bool unordered_perms = false;  // owner, group or mode unordered against a reply
    // Set by a reply older than the entry it replaced (overtaken): until
    // floor_until, attributes older than `floor` are not served.
    ChangeId floor;
    MonoTime floor_until{};
    RefreshIndex::iterator refresh_it;
    uint64_t changed_seq = 0;  // change_seq_ when its ChangeId was learned
  };

  // How long an overtaken reply's floor holds at least (a lifetime max of 0
  // would end it at once).
  static constexpr Duration kMinOvertakenFloor = std::chrono::seconds(60);

  bool Fresh(const Entry& e) const {
    return !e.floor_only && clock_.MonoNow() < e.expires;
  }
  // The newest ctime `e` knows: its attributes' or its floor's.
  static NfsTime NewestOf(const Entry& e) { return std::max(e.change.ctime, e.floor.ctime); }
  void Unindex(Entry* e);
  // Tells forgotten_ of `e`, which goes.
  void Forgetting(std::string_view handle, const Entry& e) const;
  void Erase(std::string_view handle);
  void EvictToLimit();

  const Clock& clock_;
  AttrCacheOptions options_;
  LruMap<Entry> lru_;
  RefreshIndex refresh_index_;  // entries used since their fill, by expiry
  AttrCacheStats stats_;
  uint64_t change_seq_ = 0;
  uint64_t forgot_seq_ = 0;  // the largest changed_seq of an entry erased or evicted
  ForgetObserver forgotten_;
  FloorObserver floor_evicted_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_ATTR_CACHE_H_
