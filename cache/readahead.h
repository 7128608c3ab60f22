// ReadaheadTable: decides what to read ahead of the clients' sequential
// streams, from the READs the proxy sees.
//
// A per-file "last offset" guess fails in two common cases: reads arrive
// slightly reordered (a client keeps several in flight), and one file is read
// by several interleaved streams (a stride reader cuts the file into N parts
// and reads block j of every part before block j+1). So, as in Ellard and
// Seltzer, "NFS Tricks and Benchmarking Traps" (USENIX 2003), each file has
// several cursors, one per stream, and a cursor's sequentiality count decays
// gently (SlowDown) instead of restarting at every irregular read.
//
// A cursor holds the next expected offset (the end of the furthest read it
// matched), a sequentiality count in [1, max_count] and the typical read size
// (a moving average, weight 1/4). A read of [offset, end) is classified
// against a cursor whose next offset is `next`:
//  - in order:  offset <= next < end      count + 1, next = end
//  - ahead:     next < offset, |offset - next| <= match_window
//               (it overtook earlier reads)  count + 1 if the cursor is
//               sequential already (count >= min_sequential), else unchanged;
//               next = end
//  - behind:    end <= next, next - end <= match_window
//               (a late or repeated read)  count and next unchanged
// The window is at least kWindowReads x the cursor's read size: a client
// with 1 MiB reads in flight reorders them over more than 1 MiB; for a
// stream with a count of kWideAfter or more, kWideWindowReads x (a Linux
// client keeps up to 15 reads of a file in flight). Not wider for young
// cursors: the parts of a stride reader a few reads apart would share one,
// and random reads would keep a stream's read-ahead going.
// The read belongs to the matching cursor whose next offset is closest. Reads
// that are not in order never start a stream, so random reads landing near a
// young cursor do not earn read-ahead: only exact continuations do.
//
// A read that matches no cursor (exact rule, "SlowDown"):
//  - if exactly one cursor of the file is sequential, the read is taken as
//    that stream jumping: the cursor moves to the read (next = end) and its
//    count is halved (at least 1) instead of restarting. A cursor with count
//    1 is also left at the old position, so that late reads of the old
//    position, or a second reader there, keep a cursor of their own and the
//    two do not keep stealing the sequential one from each other. Repeated
//    jumps halve again: a stream that turned random loses read-ahead after
//    log2(count) reads; one that resumed sequential reading keeps it.
//  - otherwise a new cursor starts there with count 1, replacing the file's
//    least recently used cursor when the file has max_cursors_per_file.
// Either way, a cursor needed while the pool holds max_cursors is taken from
// the pool's least recently used cursor, of whichever file.
//
// Advice: for a cursor with count >= min_sequential, read ahead from its next
// offset read_size x 2^(count - 1) bytes (the depth doubles with each
// sequential read, like a slow start), at most `limit`. The caller fetches
// only what is neither cached nor in flight, so repeated advice is cheap.
//
// Sizing: the pool is shared by all files and is the only bound on memory
// (about 100 bytes per cursor plus the handle per file). It must hold a
// cursor for every stream that is active at once, i.e. at least (files read
// concurrently) x (streams per file, 1 for plain sequential readers, N for an
// N-stride reader): a pool smaller than the working set evicts cursors before
// their counts build up and no stream ever gets read-ahead (the paper's
// finding about the FreeBSD server's small table). The default 8192 covers a
// thousand files each read by eight streams in about 1 MB. match_window must
// cover the client's reordering: its reads in flight times rsize.
//
// Thread-safety: not synchronized; used from the proxy's event loop thread.
#ifndef NFSEDGE_CACHE_READAHEAD_H_
#define NFSEDGE_CACHE_READAHEAD_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/clock.h"

namespace nfsedge {

// Reads in flight a cursor's match window covers at least (see above).
inline constexpr uint64_t kWindowReads = 4;
inline constexpr uint64_t kWideWindowReads = 16;
inline constexpr uint32_t kWideAfter = 8;

struct ReadaheadOptions {
  size_t max_cursors_per_file = 8;  // LRU within a file; at least 1
  size_t max_cursors = 8192;        // shared by all files, LRU; at least 1
  uint64_t match_window = 1 << 20;  // match distance from a cursor's next offset, either side
  uint32_t min_sequential = 2;      // count needed before any read-ahead; at least 1
  uint32_t max_count = 64;          // cap of the sequentiality count
};

// A range of the file to have cached ahead of a stream. length 0 = none.
struct ReadaheadAdvice {
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct ReadaheadStats {
  uint64_t reads = 0;                // OnRead() calls
  uint64_t matched = 0;              // reads that matched a cursor
  uint64_t new_cursors = 0;          // cursors started at count 1
  uint64_t slowdowns = 0;            // jumps of a sequential stream (count halved)
  uint64_t cursor_replacements = 0;  // a file's own LRU cursor re-used
  uint64_t cursor_evictions = 0;     // pool LRU cursors taken from a file
  uint64_t advised = 0;              // reads that got advice
  uint64_t advised_bytes = 0;        // sum of the advice lengths
};

class ReadaheadTable {
 public:
  // Options below their documented minimum are raised to it. Advice does
  // not depend on time: `clock` is taken like the other caches take it, and
  // is not read.
  ReadaheadTable(const Clock& clock, const ReadaheadOptions& options);
  ReadaheadTable(const ReadaheadTable&) = delete;
  ReadaheadTable& operator=(const ReadaheadTable&) = delete;

  // Records a client read of [offset, offset + count) of the file `handle`
  // and returns what to read ahead of the stream it belongs to, at most
  // `limit` bytes (the upstream path's bandwidth-delay product, or a
  // configured cap). Returns no advice (length 0) for a read of 0 bytes.
  ReadaheadAdvice OnRead(std::string_view handle, uint64_t offset, uint32_t count, uint64_t limit);

  // Forgets the cursors of `handle` (the file was removed or replaced).
  void DropFile(std::string_view handle);

  size_t cursors() const { return lru_.size(); }
  size_t files() const { return files_.size(); }
  const ReadaheadStats& stats() const { return stats_; }

 private:
  struct File;
  struct Cursor {
    File* file;
    uint64_t next;       // end of the furthest read matched
    uint64_t read_size;  // moving average of the read sizes
    uint32_t count;      // sequentiality, [1, max_count]
  };
  using CursorList = std::list<Cursor>;  // front = most recently used
  struct File {
    std::string_view handle;                    // the key in files_
    std::vector<CursorList::iterator> cursors;  // front = most recently used
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  using FileMap = std::unordered_map<std::string, File, Hash, std::equal_to<>>;

  // Returns the file's cursor for a read at `offset`, or end() iff none
  // matches.
  CursorList::iterator Match(const File& f, uint64_t offset, uint64_t end);
  // Marks `c` (a cursor of `f`) most recently used, in `f` and in the pool.
  void Touch(File* f, CursorList::iterator c);
  // Returns a cursor of `f` at count 1, most recently used: a new one, or the
  // file's LRU one when `f` is full, or one taken from the pool's LRU.
  CursorList::iterator NewCursor(File* f, uint64_t next, uint64_t read_size);
  // Removes `c` from its file, and the file if that was its last cursor.
  void EraseCursor(CursorList::iterator c);
  ReadaheadAdvice Advise(const Cursor& c, uint64_t limit);

  const ReadaheadOptions options_;
  CursorList lru_;
  FileMap files_;
  ReadaheadStats stats_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_READAHEAD_H_
