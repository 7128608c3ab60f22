#include "cache/attr_cache.h"

#include <algorithm>
#include <utility>

namespace nfsedge {

AttrCache::AttrCache(const Clock& clock, const AttrCacheOptions& options)
    : clock_(clock), options_(options) {}

void AttrCache::Unindex(Entry* e) {
  if (e->indexed) {
    refresh_index_.erase(e->refresh_it);
    e->indexed = false;
  }
}

void AttrCache::Forgetting(std::string_view handle, const Entry& e) const {
  if (forgotten_) forgotten_(handle, NewestOf(e));
}

void AttrCache::Erase(std::string_view handle) {
  Entry* e = lru_.Peek(handle);
  if (e == nullptr) return;
  Unindex(e);
  Forgetting(handle, *e);
  forgot_seq_ = std::max(forgot_seq_, e->changed_seq);
  lru_.Erase(handle);
}

void AttrCache::EvictToLimit() {
  while (lru_.size() > options_.max_entries) {
    auto* oldest = lru_.Oldest();
    Unindex(&oldest->value);
    Forgetting(oldest->key, oldest->value);
    const Entry& e = oldest->value;
    if (floor_evicted_ && (e.floor_only || e.conflicted || clock_.MonoNow() < e.floor_until)) {
      floor_evicted_(oldest->key);
    }
    forgot_seq_ = std::max(forgot_seq_, oldest->value.changed_seq);
    lru_.Erase(oldest->key);
    stats_.evictions++;
  }
}

void AttrCache::SetMaxEntries(size_t max_entries) {
  options_.max_entries = max_entries;
  EvictToLimit();
}

PostOpResult AttrCache::Put(std::string_view handle, const fattr3& attr, const Lifetime& l,
                            SentTime sent) {
  ChangeId change = ChangeId::FromFattr(attr);
  PostOpResult result = PostOpResult::kInserted;
  bool ambiguous = false, stale = false, unordered_perms = false;
  uint64_t changed_seq = 0;
  ChangeId floor;
  MonoTime floor_until{};
  if (Entry* e = lru_.Peek(handle)) {
    if ((Fresh(*e) || e->floor_only) && change.OlderThan(e->change)) {
      stats_.ignored_older++;
      return PostOpResult::kIgnored;
    }
    result = change == e->change ? PostOpResult::kUnchanged : PostOpResult::kChanged;
    changed_seq = e->changed_seq;
    // Older than an entry past its lifetime, or than the newest attributes
    // an earlier such reply found: a reply overtaken by a newer one (a
    // READ's, a listing's, late on the WAN). Kept but not served, in no
    // mode, while that floor holds: for the lifetime's max, after which a
    // server whose clock stepped back is believed.
    const MonoTime now = clock_.MonoNow();
    const bool floor_holds = now < e->floor_until;
    const ChangeId& newest = floor_holds && e->change.OlderThan(e->floor) ? e->floor : e->change;
    if (change.OlderThan(newest)) {
      stats_.overtaken++;
      stale = true;
      floor = newest;
      floor_until = floor_holds ? e->floor_until : now + std::max(l.max, kMinOvertakenFloor);
    }
    // The same ctime, from a call that may have left before the entry was
    // learned: other attributes cannot be ordered against it, and equal
    // ones settle nothing (the entry itself may be the late one).
    const bool sent_after = sent != SentTime{} && e->learned < sent;
    if (!e->floor_only && !sent_after && !(e->change.ctime < change.ctime) &&
        !(change.ctime < e->change.ctime)) {
      if (e->unordered_perms || PermId::FromFattr(attr) != PermId::FromFattr(e->attr)) {
        stale = unordered_perms = true;
      } else if (e->ambiguous || change != e->change || attr.nlink != e->attr.nlink) {
        ambiguous = true;
      }
      if (stale || ambiguous) stats_.ambiguous++;
    }
    Unindex(e);
  }
  if (options_.max_entries == 0) {
    if (forgotten_) forgotten_(handle, change.ctime);
    return result;
  }
  Duration life = ComputeLifetime(l, clock_.WallNow(), change.LastChange());
  Entry e;
  e.attr = attr;
  e.change = change;
  e.ambiguous = ambiguous;
  e.conflicted = stale;
  e.unordered_perms = unordered_perms;
  e.floor = floor;
  e.floor_until = floor_until;
  e.expires = stale ? clock_.MonoNow() : clock_.MonoNow() + life;
  e.filled = clock_.MonoNow();
  e.learned = std::chrono::steady_clock::now();
  e.changed_seq = result == PostOpResult::kUnchanged ? changed_seq : ++change_seq_;
  lru_.Put(handle, std::move(e));
  EvictToLimit();
  return result;
}

bool AttrCache::ChangedSince(std::string_view handle, uint64_t seq) {
  const Entry* e = lru_.Peek(handle);
  // Without an entry: one learned after `seq` may have been forgotten.
  return e != nullptr ? e->changed_seq > seq : forgot_seq_ > seq;
}

std::optional<fattr3> AttrCache::Get(std::string_view handle, bool allow_ambiguous) {
  Entry* e = lru_.Peek(handle);
  if (e == nullptr || (e->ambiguous && !allow_ambiguous)) {
    stats_.misses++;
    return std::nullopt;
  }
  if (!Fresh(*e)) {
    stats_.expired++;
    return std::nullopt;
  }
  lru_.Find(handle);  // now the most recently used
  stats_.hits++;
  if (!e->indexed && !e->refresh_pending) {
    e->refresh_it = refresh_index_.emplace(e->expires, std::string(handle));
    e->indexed = true;
  }
  return e->attr;
}

std::optional<fattr3> AttrCache::PeekFresh(std::string_view handle) {
  const Entry* e = lru_.Peek(handle);
  if (e == nullptr || e->ambiguous || !Fresh(*e)) return std::nullopt;
  return e->attr;
}

std::optional<fattr3> AttrCache::GetExpired(std::string_view handle) {
  Entry* e = lru_.Peek(handle);
  if (e == nullptr || e->floor_only || e->ambiguous || e->conflicted) return std::nullopt;
  if (!Fresh(*e)) stats_.expired_served++;
  lru_.Find(handle);
  return e->attr;
}

std::optional<fattr3> AttrCache::Latest(std::string_view handle) {
  const Entry* e = lru_.Peek(handle);
  if (e == nullptr || e->floor_only || e->ambiguous || e->conflicted) return std::nullopt;
  return e->attr;
}

std::optional<uint64_t> AttrCache::FileId(std::string_view handle) {
  const Entry* e = lru_.Peek(handle);
  if (e == nullptr || e->floor_only) return std::nullopt;
  return e->attr.fileid;
}

std::optional<Duration> AttrCache::Age(std::string_view handle) {
  const Entry* e = lru_.Peek(handle);
  if (e == nullptr) return std::nullopt;
  return clock_.MonoNow() - e->filled;
}

std::optional<NfsTime> AttrCache::NewestCtime(std::string_view handle) {
  const Entry* e = lru_.Peek(handle);
  if (e == nullptr) return std::nullopt;
  return NewestOf(*e);
}

std::optional<ChangeId> AttrCache::CachedChangeId(std::string_view handle) {
  Entry* e = lru_.Peek(handle);
  if (e == nullptr || e->floor_only) return std::nullopt;
  return e->change;
}

PostOpResult AttrCache::ApplyPostOp(std::string_view handle, const post_op_attr& p,
                                    const Lifetime& l, SentTime sent) {
  if (!p.attributes_follow) return PostOpResult::kNoAttributes;
  return Put(handle, p.post_op_attr_u.attributes, l, sent);
}

WccResult AttrCache::ApplyWcc(std::string_view handle, const wcc_data& w, const Lifetime& l,
                              SentTime sent) {
  WccResult result = WccResult::kUnknown;
  if (w.before.attributes_follow) {
    if (Entry* e = lru_.Peek(handle)) {
      ChangeId before = ChangeId::FromWcc(w.before.pre_op_attr_u.attributes);
      result = before == e->change ? WccResult::kOwnChange : WccResult::kChangedElsewhere;
    }
  }
  if (w.after.attributes_follow) {
    Put(handle, w.after.post_op_attr_u.attributes, l, sent);
  } else {
    Invalidate(handle);
  }
  return result;
}

void AttrCache::Clear() {
  while (auto* oldest = lru_.Oldest()) {
    const std::string key = oldest->key;
    Erase(key);
  }
}

void AttrCache::Invalidate(std::string_view handle) {
  if (lru_.Peek(handle) == nullptr) return;
  Erase(handle);
  stats_.invalidations++;
}

void AttrCache::InvalidateBefore(std::string_view handle, NfsTime ctime) {
  Entry e;
  if (Entry* old = lru_.Peek(handle)) {
    Unindex(old);
    e.change = old->change;
    stats_.invalidations++;
  }
  e.floor_only = true;
  e.change.ctime = std::max(e.change.ctime, ctime);
  e.expires = clock_.MonoNow();
  e.changed_seq = ++change_seq_;  // newer than any reply already on its way
  if (options_.max_entries == 0) {
    if (forgotten_) forgotten_(handle, e.change.ctime);
    return;
  }
  lru_.Put(handle, std::move(e));
  EvictToLimit();
}

std::vector<std::string> AttrCache::RefreshCandidates(Duration window, size_t max) {
  std::vector<std::string> out;
  const MonoTime now = clock_.MonoNow();
  // Used entries that expired before anyone refreshed them leave the index;
  // the next Get() misses and fetches them in the foreground.
  while (!refresh_index_.empty() && refresh_index_.begin()->first <= now) {
    auto it = refresh_index_.begin();
    if (Entry* e = lru_.Peek(it->second)) e->indexed = false;
    refresh_index_.erase(it);
  }
  while (!refresh_index_.empty() && out.size() < max &&
         refresh_index_.begin()->first <= now + window) {
    auto it = refresh_index_.begin();
    if (Entry* e = lru_.Peek(it->second)) {
      e->indexed = false;
      e->refresh_pending = true;
    }
    out.push_back(std::move(it->second));
    refresh_index_.erase(it);
  }
  stats_.refreshes += out.size();
  return out;
}

void AttrCache::ReturnRefreshCandidates(const std::vector<std::string>& handles) {
  for (const std::string& h : handles) {
    Entry* e = lru_.Peek(h);
    if (e == nullptr || !e->refresh_pending) continue;  // gone, or filled since
    e->refresh_pending = false;
    if (!Fresh(*e) || e->indexed) continue;
    e->refresh_it = refresh_index_.emplace(e->expires, h);
    e->indexed = true;
    stats_.refreshes--;
  }
}

}  // namespace nfsedge
