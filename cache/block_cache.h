// BlockCache: the in-memory tier of file data, by (file handle, block index).
//
// A file is cut into blocks of a fixed size per cache (block_size, a power of
// two). Each block is stored with the upstream ChangeId it was read under and
// is used only while that is the freshest known one (DESIGN rule 5): Get()
// takes the caller's current ChangeId, and a block of another version is
// dropped, never served.
//
// A block holds block_size bytes, except the block that reaches the end of
// the file (eof), which may be shorter, even empty. Put() refuses any other
// shape (a short read without eof, more than block_size bytes): such data
// cannot be served from a cache.
//
// Read-ahead fills blocks marked `prefetched`; the first client hit clears
// the mark and counts readahead_used, a prefetched block that leaves the
// cache without a hit counts readahead_wasted.
//
// Bounded (DESIGN rule 8) by bytes: a block is charged its data size plus
// kBlockOverhead (key, list and index nodes, the Block itself), a file with
// blocks kFileOverhead (its entry in the per-file index), least
// recently used blocks are evicted. Evicted blocks still hold valid data, so
// they are handed to the eviction handler (the disk tier keeps them); blocks
// dropped because they are stale or their file changed are not.
//
// DropFile() is O(blocks of that file): a per-file set of block indexes is
// kept next to the LRU.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_BLOCK_CACHE_H_
#define NFSEDGE_CACHE_BLOCK_CACHE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cache/change_id.h"
#include "cache/lru_map.h"

namespace nfsedge {

struct Block {
  ChangeId version;         // the file's attributes the data was read under
  std::string data;         // block_size bytes, fewer only if eof
  bool eof = false;         // the block reaches the end of the file
  bool prefetched = false;  // filled by read-ahead, not yet read by a client
  // Kept only for the READs waiting on its fetch: its bytes are not proved
  // to be of `version` (ReadPath::OnFetched). Never written to disk, not
  // even when evicted.
  bool unconfirmed = false;
};

struct BlockCacheOptions {
  uint64_t max_bytes = 256 << 20;
  uint32_t block_size = 128 << 10;  // a power of two
};

struct BlockCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t stale = 0;             // Get() found the block under another version: dropped
  uint64_t inserts = 0;           // blocks stored by Put()
  uint64_t rejected = 0;          // Put() of a block of the wrong shape: not stored
  uint64_t evictions = 0;         // dropped for the byte bound (handed to the handler)
  uint64_t dropped = 0;           // dropped by DropFile() or DropOtherVersions()
  uint64_t readahead_used = 0;    // prefetched blocks hit by a client
  uint64_t readahead_wasted = 0;  // prefetched blocks gone without a hit
  uint64_t bytes = 0;             // current charge (data + overheads, see above)
  uint64_t blocks = 0;            // current number of blocks
};

// The fixed charge of one cached block on top of its data, in bytes.
inline constexpr uint64_t kBlockOverhead = 256;
// The fixed charge of a file with cached blocks: its entry in the per-file
// index (map node, handle, the set of its block indexes).
inline constexpr uint64_t kFileOverhead = 320;

// Returns the key of block `index` of `handle`: the handle's length (32 bits)
// and bytes, then the index (64 bits), all big-endian. One file's blocks are
// contiguous in the keys' byte order, in index order. The disk tier stores
// blocks under these keys (docs/cache-format.md).
std::string BlockKey(std::string_view handle, uint64_t index);

// Returns true iff `key` is a BlockKey(); sets `*handle` (a view into `key`)
// and `*index`.
bool ParseBlockKey(std::string_view key, std::string_view* handle, uint64_t* index);

// Receives a block evicted for the byte bound.
using BlockEvictionHandler =
    std::function<void(std::string_view handle, uint64_t index, Block&& block)>;

class BlockCache {
 public:
  // REQUIRES: options.block_size is a power of two.
  explicit BlockCache(const BlockCacheOptions& options);
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  uint32_t block_size() const { return options_.block_size; }

  // Returns the block iff it is present with `version`, and marks it used
  // (LRU). Counts a hit; the first hit of a prefetched block clears the mark
  // and counts readahead_used. A block present under another version is
  // dropped (stale). Every call counts one of hits, misses, stale. The
  // pointer is valid until the next call that modifies the cache.
  const Block* Get(std::string_view handle, uint64_t index, const ChangeId& version);

  // Returns true iff the block is present with `version` (and, with
  // `confirmed_only`, not Block::unconfirmed). Not a use: neither the LRU
  // order nor the stats change.
  bool Contains(std::string_view handle, uint64_t index, const ChangeId& version,
                bool confirmed_only = false) const;

  // Stores the block (replacing any) as most recently used, then evicts least
  // recently used blocks until bytes <= max_bytes, handing each to the
  // eviction handler if one is set (this may be the block just stored, if it
  // alone exceeds the bound). A block longer than block_size, or shorter
  // without eof, is not stored (rejected).
  void Put(std::string_view handle, uint64_t index, Block block);

  // Sets the receiver of evicted blocks. It is called from inside Put().
  // REQUIRES: the handler does not call back into this cache.
  void SetEvictionHandler(BlockEvictionHandler handler) { on_evict_ = std::move(handler); }

  // Drops every block of the file (it was removed, or changed behind the
  // proxy's back).
  void DropFile(std::string_view handle);
  // Drops every block of every file (nfsedge drop-cache).
  void DropAll();

  // Drops every block of the file whose version is not `version`.
  void DropOtherVersions(std::string_view handle, const ChangeId& version);
  // Drops every block of the file whose version is `version` and that is
  // Block::unconfirmed (confirmed blocks of that version stay).
  void DropUnconfirmed(std::string_view handle, const ChangeId& version);

  // Sets the byte bound (config reload): a lower one evicts the least
  // recently used blocks down to it at once, through the eviction handler
  // as Put() does.
  void SetMaxBytes(uint64_t max_bytes);
  uint64_t max_bytes() const { return options_.max_bytes; }
  // What the cache holds against max_bytes (stats().bytes).
  uint64_t Charge() const { return lru_.charge() + files_.size() * kFileOverhead; }

  const BlockCacheStats& stats() const { return stats_; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using FileIndex =
      std::unordered_map<std::string, std::unordered_set<uint64_t>, StringHash, std::equal_to<>>;

  // Removes the block under `key` (present) from the LRU and the file index.
  void Erase(std::string_view handle, uint64_t index, const std::string& key);
  // Drops every block of the file that `drop` selects.
  void DropIf(std::string_view handle, const std::function<bool(const Block&)>& drop);
  // Counts a prefetched block leaving without a hit.
  void CountLeaving(const Block& b);
  void UpdateGauges();
  void EvictToLimit();

  BlockCacheOptions options_;
  LruMap<Block> lru_;  // by BlockKey(), charged data size + kBlockOverhead
  FileIndex files_;    // handle -> indexes of its cached blocks
  BlockEvictionHandler on_evict_;
  BlockCacheStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_BLOCK_CACHE_H_
