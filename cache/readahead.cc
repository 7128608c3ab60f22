#include "cache/readahead.h"

#include <algorithm>
#include <limits>

namespace nfsedge {

namespace {

constexpr uint64_t kMaxOffset = std::numeric_limits<uint64_t>::max();

// Offsets come from the network: never wrap.
uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return b > kMaxOffset - a ? kMaxOffset : a + b; }

ReadaheadOptions Sanitize(ReadaheadOptions o) {
  o.max_cursors_per_file = std::max<size_t>(o.max_cursors_per_file, 1);
  o.max_cursors = std::max<size_t>(o.max_cursors, 1);
  o.min_sequential = std::max<uint32_t>(o.min_sequential, 1);
  o.max_count = std::max<uint32_t>(o.max_count, 1);
  return o;
}

}  // namespace

ReadaheadTable::ReadaheadTable(const Clock& clock, const ReadaheadOptions& options)
    : options_(Sanitize(options)) {}

ReadaheadTable::CursorList::iterator ReadaheadTable::Match(const File& f, uint64_t offset,
                                                           uint64_t end) {
  auto best = lru_.end();
  uint64_t best_distance = 0;
  for (auto c : f.cursors) {
    // A late read is as far behind as its end; an in-order one is at 0.
    const uint64_t d = offset > c->next ? offset - c->next : end > c->next ? 0 : c->next - end;
    // The window covers the client's reads in flight at its read size
    // (kWindowReads of them, kWideWindowReads for a stream well under way),
    // whatever match_window says.
    const uint64_t reads = c->count >= kWideAfter ? kWideWindowReads : kWindowReads;
    const uint64_t window = std::max(
        options_.match_window, c->read_size > kMaxOffset / reads ? kMaxOffset : c->read_size * reads);
    if (d > window) continue;
    if (best == lru_.end() || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

void ReadaheadTable::Touch(File* f, CursorList::iterator c) {
  lru_.splice(lru_.begin(), lru_, c);
  auto it = std::find(f->cursors.begin(), f->cursors.end(), c);
  std::rotate(f->cursors.begin(), it, it + 1);
}

void ReadaheadTable::EraseCursor(CursorList::iterator c) {
  File* f = c->file;
  f->cursors.erase(std::find(f->cursors.begin(), f->cursors.end(), c));
  lru_.erase(c);
  if (f->cursors.empty()) files_.erase(files_.find(f->handle));
}

ReadaheadTable::CursorList::iterator ReadaheadTable::NewCursor(File* f, uint64_t next,
                                                               uint64_t read_size) {
  auto reuse = lru_.end();
  if (f->cursors.size() >= options_.max_cursors_per_file) {
    reuse = f->cursors.back();
    stats_.cursor_replacements++;
  } else if (lru_.size() >= options_.max_cursors) {
    stats_.cursor_evictions++;
    auto oldest = std::prev(lru_.end());
    if (oldest->file == f) {
      reuse = oldest;  // erasing it could erase `f` itself
    } else {
      EraseCursor(oldest);
    }
  }
  stats_.new_cursors++;
  Cursor fresh{f, next, read_size, 1};
  if (reuse != lru_.end()) {
    *reuse = fresh;
    Touch(f, reuse);
    return reuse;
  }
  lru_.push_front(fresh);
  f->cursors.insert(f->cursors.begin(), lru_.begin());
  return lru_.begin();
}

ReadaheadAdvice ReadaheadTable::Advise(const Cursor& c, uint64_t limit) {
  if (c.count < options_.min_sequential || limit == 0) return {};
  // depth = read_size x 2^(count - 1), at most limit, without overflow.
  unsigned shift = std::min<uint32_t>(c.count - 1, 63);
  uint64_t depth = c.read_size > (limit >> shift) ? limit : c.read_size << shift;
  depth = std::min(depth, kMaxOffset - c.next);
  if (depth == 0) return {};
  stats_.advised++;
  stats_.advised_bytes += depth;
  return ReadaheadAdvice{c.next, depth};
}

ReadaheadAdvice ReadaheadTable::OnRead(std::string_view handle, uint64_t offset, uint32_t count,
                                       uint64_t limit) {
  stats_.reads++;
  if (count == 0) return {};
  const uint64_t end = SaturatingAdd(offset, count);

  auto fit = files_.find(handle);
  if (fit == files_.end()) {
    fit = files_.emplace(std::string(handle), File{}).first;
    fit->second.handle = fit->first;
  }
  File* f = &fit->second;

  if (auto c = Match(*f, offset, end); c != lru_.end()) {
    stats_.matched++;
    Touch(f, c);
    const bool sequential = c->count >= options_.min_sequential;
    const bool in_order = offset <= c->next && c->next < end;
    const bool ahead = offset > c->next;
    if (in_order || (ahead && sequential)) {
      c->count = std::min(c->count + 1, options_.max_count);
    }
    if (in_order || ahead) c->next = end;  // else behind: a late read
    c->read_size = (3 * c->read_size + count + 2) / 4;
    return Advise(*c, limit);
  }

  // No cursor matches. SlowDown iff exactly one cursor is sequential.
  auto stream = lru_.end();
  size_t sequential = 0;
  for (auto c : f->cursors) {
    if (c->count >= options_.min_sequential) {
      sequential++;
      stream = c;
    }
  }
  if (sequential != 1) return Advise(*NewCursor(f, end, count), limit);

  stats_.slowdowns++;
  const uint64_t old_next = stream->next;
  const uint64_t old_read_size = stream->read_size;
  stream->next = end;
  stream->count = std::max<uint32_t>(stream->count / 2, 1);
  stream->read_size = (3 * stream->read_size + count + 2) / 4;
  Touch(f, stream);
  // The stream is the most recently used cursor, so with room for two
  // cursors it cannot be the one NewCursor() takes.
  if (options_.max_cursors >= 2 && options_.max_cursors_per_file >= 2) {
    NewCursor(f, old_next, old_read_size);
    Touch(f, stream);
  }
  return Advise(*stream, limit);
}

void ReadaheadTable::DropFile(std::string_view handle) {
  auto it = files_.find(handle);
  if (it == files_.end()) return;
  for (auto c : it->second.cursors) lru_.erase(c);
  files_.erase(it);
}

}  // namespace nfsedge
