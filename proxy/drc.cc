#include "proxy/drc.h"

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/lru_map.h"

namespace nfsedge {

namespace {

// The key of a call: address, credential, program, version, procedure, XID,
// and a hash of the arguments' start (a WRITE's handle, offset and first
// bytes: enough to tell two calls of one XID apart without hashing a
// megabyte) and their size. An AUTH_SYS credential counts without its stamp
// (its first word), which a client may encode anew when it sends a call
// again.
std::string KeyOf(const IncomingCall& call) {
  const CallHeader& h = call.header();
  std::string key = call.peer().HostString();
  std::string_view cred = h.cred.body;
  if (h.cred.flavor == kAuthSys && cred.size() >= 4) cred.remove_prefix(4);
  const uint32_t cred_words[] = {h.cred.flavor, static_cast<uint32_t>(cred.size())};
  key.append(reinterpret_cast<const char*>(cred_words), sizeof(cred_words));
  key.append(cred);
  constexpr size_t kHashed = 1024;
  const uint64_t words[] = {h.prog, h.vers, h.proc, h.xid,
                            std::hash<std::string_view>{}(call.args().substr(0, kHashed)),
                            call.args().size()};
  key.append(reinterpret_cast<const char*>(words), sizeof(words));
  return key;
}

}  // namespace

struct DuplicateRequestCache::State {
  struct Entry {
    bool done = false;
    std::string reply;  // the whole reply message, with the call's XID
    std::vector<std::shared_ptr<IncomingCall>> waiting;  // retransmissions
  };
  explicit State(size_t max) : max_entries(max) {}

  void Finish(const std::string& key, std::string_view reply) {
    // Kept from now (most recent): a slow call, the one its client most
    // likely sends again, is not the first to go.
    Entry* e = entries.Find(key);
    if (e == nullptr || e->done) return;
    if (reply.empty()) {
      // Never answered: forget it; a later retransmission is a new call.
      entries.Erase(key);
      return;
    }
    e->done = true;
    e->reply.assign(reply);
    std::vector<std::shared_ptr<IncomingCall>> waiting = std::move(e->waiting);
    std::string kept = e->reply;
    ++finished;
    EvictToLimit();
    for (auto& w : waiting) w->Reply(kept);
  }

  void EvictToLimit() {
    // Only finished entries go; one still in progress moves to the front.
    size_t guard = entries.size();
    while (finished > max_entries && guard-- > 0) {
      auto* oldest = entries.Oldest();
      if (!oldest->value.done) {
        entries.Find(oldest->key);  // now the most recent
        continue;
      }
      entries.Erase(oldest->key);
      --finished;
      ++stats.evicted;
    }
  }

  const size_t max_entries;
  size_t finished = 0;
  LruMap<Entry> entries;
  DrcStats stats;
};

DuplicateRequestCache::DuplicateRequestCache(size_t max_entries)
    : state_(std::make_shared<State>(max_entries)) {}

DuplicateRequestCache::~DuplicateRequestCache() = default;

bool DuplicateRequestCache::Admit(const std::shared_ptr<IncomingCall>& call) {
  State& s = *state_;
  if (s.max_entries == 0) return true;
  std::string key = KeyOf(*call);
  if (State::Entry* e = s.entries.Find(key)) {
    if (e->done) {
      s.stats.replayed++;
      call->Reply(e->reply);
    } else {
      s.stats.joined++;
      e->waiting.push_back(call);
    }
    return false;
  }
  s.entries.Put(key, State::Entry{});
  s.stats.recorded++;
  std::weak_ptr<State> weak = state_;
  call->AddReplyHook([weak, key](std::string_view reply) {
    if (auto st = weak.lock()) st->Finish(key, reply);
  });
  return true;
}

DrcStats DuplicateRequestCache::stats() const {
  DrcStats st = state_->stats;
  st.entries = state_->entries.size();
  return st;
}

}  // namespace nfsedge
