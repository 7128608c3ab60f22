// NameCache: directory entries, (directory handle, name) -> child handle, or
// a negative entry for a name the upstream said does not exist
// (NFS3ERR_NOENT).
//
// Every directory's names are stamped with the directory's ChangeId under
// which they were read (from LOOKUP's dir_attributes, READDIRPLUS's
// dir_attributes, a mutation's wcc "after"). They are valid only while that
// is the directory's current ChangeId, which the caller passes in from fresh
// attributes (AttrCache::Get); on a mismatch all the directory's names are
// dropped. The name cache itself has no expiry: the attribute cache's lifetime
// bounds how long a directory's ChangeId is trusted.
//
// Mutations through the proxy update names precisely: OnCreate, OnRemove and
// OnRename take the directory's wcc data (DirChange). If "before" equals the
// stamp, nothing else changed the directory, so its other names stay valid
// and are restamped with "after"; otherwise they are dropped. The changed
// name itself is then recorded under "after".
//
// Child attributes are not stored here: the attribute cache, keyed by the
// child's handle, is the one place attributes are kept fresh and versioned;
// a LOOKUP answer takes them from there.
//
// "." and ".." are not cached (".." changes when a directory moves, without
// a change to the directory itself). Names longer than `max_name_bytes` are
// not cached (bounds memory per entry).
//
// Bounded (DESIGN rule 8): at most `max_entries` names, least recently used
// evicted.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_NAME_CACHE_H_
#define NFSEDGE_CACHE_NAME_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "cache/change_id.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct NameCacheOptions {
  size_t max_entries = 200000;
  size_t max_name_bytes = 255;
};

struct NameCacheStats {
  uint64_t positive_hits = 0;
  uint64_t negative_hits = 0;
  uint64_t misses = 0;
  uint64_t dirs_dropped = 0;  // directories whose names were dropped (changed)
  uint64_t evictions = 0;
};

struct NameHit {
  bool negative = false;
  std::string child;  // the child's handle; empty iff negative
};

class NameCache {
 public:
  explicit NameCache(const NameCacheOptions& options);
  NameCache(const NameCache&) = delete;
  NameCache& operator=(const NameCache&) = delete;

  // Records a LOOKUP (or READDIRPLUS entry) result read while `dir` had
  // ChangeId `dir_change`. A result older than the directory's stamp (an
  // out-of-order reply) is ignored; a newer one replaces the directory's
  // names.
  void PutPositive(std::string_view dir, std::string_view name, std::string_view child,
                   const ChangeId& dir_change);
  void PutNegative(std::string_view dir, std::string_view name, const ChangeId& dir_change);

  // Returns the entry for `name` in `dir` iff there is one and `dir_now` (the
  // directory's current ChangeId, from fresh attributes) is its stamp. On a
  // stamp mismatch the directory's names are dropped.
  std::optional<NameHit> Lookup(std::string_view dir, std::string_view name,
                                const ChangeId& dir_now);

  // A CREATE, MKDIR, SYMLINK, MKNOD or LINK through the proxy made `name` in
  // `dir` refer to `child`; `change` is the directory's wcc data.
  void OnCreate(std::string_view dir, std::string_view name, std::string_view child,
                const DirChange& change);
  // A REMOVE or RMDIR through the proxy: `name` becomes a negative entry.
  void OnRemove(std::string_view dir, std::string_view name, const DirChange& change);
  // A RENAME through the proxy: `from_name` becomes negative; `to_name` gets
  // the moved child if it was known, and is forgotten otherwise.
  void OnRename(std::string_view from_dir, std::string_view from_name, std::string_view to_dir,
                std::string_view to_name, const DirChange& from_change, const DirChange& to_change);

  // A mutation through the proxy that changed no name of `dir` (SETATTR on
  // the directory): its names stay valid under "after" iff "before" is their
  // stamp.
  void OnSetattr(std::string_view dir, const DirChange& change) { ApplyChange(dir, change); }

  // Returns the child handle recorded for `name` in `dir`, whatever the
  // directory's stamp (may be out of date); empty if none or negative. Does
  // not count as a use.
  std::string Peek(std::string_view dir, std::string_view name);
  // Drops every name of `dir`.
  void InvalidateDir(std::string_view dir);

  // Drops every name (nfsedge drop-cache).
  void Clear();
  // Sets the bound (config reload): a lower one evicts the least recently
  // used entries down to it at once (counted as evictions).
  void SetMaxEntries(size_t max_entries);
  size_t size() const { return lru_.size(); }
  const NameCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::string dir;    // to find the directory's record on eviction
    std::string child;  // empty = negative
  };
  struct Dir {
    ChangeId stamp;
    std::unordered_set<std::string> keys;  // keys of this directory's entries
  };

  static std::string Key(std::string_view dir, std::string_view name);
  bool Cacheable(std::string_view name) const;
  void Record(std::string_view dir, std::string_view name, std::string_view child,
              const ChangeId& dir_change);
  // Applies a mutation's wcc to the directory's stamp: restamps to "after"
  // iff "before" equals the stamp, otherwise drops the directory's names.
  void ApplyChange(std::string_view dir, const DirChange& change);
  void EraseKey(std::string_view key);
  void EraseName(std::string_view dir, std::string_view name);
  void DropDir(std::unordered_map<std::string, Dir>::iterator it);
  void EvictToLimit();

  NameCacheOptions options_;
  LruMap<Entry> lru_;
  std::unordered_map<std::string, Dir> dirs_;  // by directory handle
  NameCacheStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_NAME_CACHE_H_
