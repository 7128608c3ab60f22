// DirCache: encoded READDIR / READDIRPLUS reply pages, by (directory handle,
// procedure, cookie, cookie verifier, request size class).
//
// A page is the reply body the proxy sent a client for one request. It is
// stored with the directory's ChangeId and cookie verifier from that reply,
// and is served only while the directory's current ChangeId (from fresh
// attributes, AttrCache::Get) is the stored one; on a mismatch all the
// directory's pages are dropped.
//
// A page may also carry a maximum age. READDIRPLUS pages embed every entry's
// attributes, which change without the directory changing (a file written in
// place): such pages must not outlive the attribute lifetime, so the caller
// passes it (e.g. the export's acregmin). READDIR pages hold only names,
// fileids and cookies, all tied to the directory's ChangeId: kNoMaxAge.
//
// The size class is the caller's: a page is served only to requests of the
// class it was filled for, so the caller must choose classes in which a page
// fits every request (the exact dircount/maxcount is always safe).
//
// Bounded (DESIGN rule 8) by total bytes (page, key and bookkeeping), least
// recently used evicted; a page larger than the whole budget is not stored.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_DIR_CACHE_H_
#define NFSEDGE_CACHE_DIR_CACHE_H_

#include <rpc/xdr/nfs3.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/change_id.h"
#include "cache/clock.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct DirCacheOptions {
  size_t max_bytes = 64 << 20;
};

struct DirCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t stale = 0;  // found, but the directory changed or the page aged out
  uint64_t evictions = 0;
  uint64_t dirs_dropped = 0;
  uint64_t continued = 0;  // Continue() found the page (its Lookup() counted a miss)
};

using CookieVerf = std::array<char, NFS3_COOKIEVERFSIZE>;

// Returns the verifier in an rpcgen cookieverf3.
CookieVerf ToCookieVerf(const cookieverf3& v);

struct DirPageKey {
  std::string dir;    // directory handle
  bool plus = false;  // READDIRPLUS (else READDIR)
  uint64_t cookie = 0;
  CookieVerf verf{};  // the request's cookie verifier
  uint32_t size_class = 0;
};

struct DirPage {
  std::string bytes;    // the encoded reply
  ChangeId dir_change;  // the directory's when filled
  CookieVerf verf{};    // the reply's cookie verifier
  // The fileid of the page's ".." entry, iff it has one: the parent the
  // page names, which a move of the directory elsewhere changes without
  // changing the directory itself (InvalidateChildrenOf).
  std::optional<uint64_t> parent_fileid;
  // READDIRPLUS pages: the entries' cookies in order, and whether the page
  // ends the listing (Continue).
  std::vector<uint64_t> cookies;
  bool eof = false;
};

inline constexpr Duration kNoMaxAge = Duration::max();

class DirCache {
 public:
  DirCache(const Clock& clock, const DirCacheOptions& options);
  DirCache(const DirCache&) = delete;
  DirCache& operator=(const DirCache&) = delete;

  // Stores a page (replacing one with the same key), usable for at most
  // `max_age` (kNoMaxAge: as long as the directory is unchanged). A page
  // stamped older than the directory's other pages (an out-of-order reply)
  // is ignored; a newer one drops them.
  void Put(const DirPageKey& key, DirPage page, Duration max_age);

  // Returns the page for `key` iff it is stored, younger than its maximum
  // age, and `dir_now` is its directory ChangeId. The pointer is valid until
  // the next call that modifies the cache. On a ChangeId mismatch all pages
  // of the directory are dropped.
  const DirPage* Lookup(const DirPageKey& key, const ChangeId& dir_now);
  // Returns a page of `dir` with an entry of cookie `cookie` and reply
  // verifier `verf`, and the index of the entry after it (the client goes
  // on from there), iff one is stored and fresh as Lookup() requires; an
  // entry that ends a page is found only if the page ends the listing.
  // Counted in `continued` (a ChangeId mismatch drops the directory).
  std::pair<const DirPage*, size_t> Continue(std::string_view dir, uint64_t cookie,
                                             const CookieVerf& verf, const ChangeId& dir_now);
  // Like Lookup(), but neither counted nor changing the cache (a mismatch
  // drops nothing).
  const DirPage* Peek(const DirPageKey& key, const ChangeId& dir_now);
  // The encoded size of the page stored for `key`, fresh or not; 0 if none.
  size_t StoredBytes(const DirPageKey& key);

  // Drops every page of `dir`.
  void InvalidateDir(std::string_view dir);
  // Drops every page of each directory one of whose pages named
  // `parent_fileid` as "..": what a directory of that parent held, moved
  // away under a name the caller no longer knows, still lists.
  void InvalidateChildrenOf(uint64_t parent_fileid);
  // Drops every page of each directory with a page that holds a "..":
  // the same, when the parent's fileid is not known either.
  void InvalidateAllChildren();
  // Drops every page.
  void Clear();
  // Sets the byte bound (config reload): a lower one evicts the least
  // recently used pages down to it at once (counted as evictions).
  void SetMaxBytes(size_t max_bytes);

  size_t size() const { return lru_.size(); }
  size_t bytes() const { return lru_.charge(); }
  const DirCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    std::string dir;
    DirPage page;
    MonoTime expires;
  };
  struct Dir {
    ChangeId stamp;
    std::unordered_set<std::string> keys;
    std::optional<uint64_t> parent;  // a page's ".." (the latest page's that had one)
    // The page holding each entry cookie of its READDIRPLUS pages (Continue).
    std::unordered_map<uint64_t, std::string> cookie_page;
  };
  using DirMap = std::unordered_map<std::string, Dir>;
  static std::string Key(const DirPageKey& k);
  void EraseKey(std::string_view key);
  void DropDir(DirMap::iterator it);
  // Takes the directory out of children_.
  void ForgetParent(DirMap::iterator it);
  // Erases the directory's entry and its place in children_.
  void EraseDir(DirMap::iterator it);
  void EvictToLimit();

  const Clock& clock_;
  DirCacheOptions options_;
  LruMap<Entry> lru_;
  DirMap dirs_;  // by directory handle
  // Directory handles by the fileid their pages name as "..".
  std::unordered_map<uint64_t, std::unordered_set<std::string>> children_;
  DirCacheStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_DIR_CACHE_H_
