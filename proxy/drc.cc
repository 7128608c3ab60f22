#include "proxy/drc.h"

#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "cache/lru_map.h"
#include "proxy/nfs_procs.h"

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
  std::string key = call.peer().HostKey();
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

// WRITEs are kept apart from the other calls (namespace changes, SETATTR):
// a client streaming writes would otherwise push out, within seconds, the
// REMOVE another client sends again after reconnecting.
bool IsWrite(const IncomingCall& call) {
  return call.header().prog == kNfsProgram && call.header().proc == NFSPROC3_WRITE;
}

}  // namespace

struct DuplicateRequestCache::State {
  struct Entry {
    bool done = false;
    std::string reply;  // the whole reply message, with the call's XID
    std::vector<std::shared_ptr<IncomingCall>> waiting;  // retransmissions
  };
  // The calls of one kind, at most max_entries of them finished.
  struct Kind {
    LruMap<Entry> entries;
    size_t finished = 0;
  };
  explicit State(size_t max) : max_entries(max) {}

  void Finish(bool write, const std::string& key, std::string_view reply) {
    Kind& k = write ? writes : others;
    LruMap<Entry>& entries = k.entries;
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
    ++k.finished;
    EvictToLimit(k);
    for (auto& w : waiting) w->Reply(kept);
  }

  void EvictToLimit(Kind& k) {
    // Only finished entries go; one still in progress moves to the front.
    size_t guard = k.entries.size();
    while (k.finished > max_entries && guard-- > 0) {
      auto* oldest = k.entries.Oldest();
      if (!oldest->value.done) {
        k.entries.Find(oldest->key);  // now the most recent
        continue;
      }
      k.entries.Erase(oldest->key);
      --k.finished;
      ++stats.evicted;
    }
  }

  const size_t max_entries;
  Kind writes, others;
  DrcStats stats;
};

DuplicateRequestCache::DuplicateRequestCache(size_t max_entries)
    : state_(std::make_shared<State>(max_entries)) {}

DuplicateRequestCache::~DuplicateRequestCache() = default;

bool DuplicateRequestCache::Admit(const std::shared_ptr<IncomingCall>& call) {
  State& s = *state_;
  if (s.max_entries == 0) return true;
  std::string key = KeyOf(*call);
  const bool write = IsWrite(*call);
  LruMap<State::Entry>& entries = (write ? s.writes : s.others).entries;
  if (State::Entry* e = entries.Find(key)) {
    if (e->done) {
      s.stats.replayed++;
      call->Reply(e->reply);
    } else {
      s.stats.joined++;
      e->waiting.push_back(call);
    }
    return false;
  }
  entries.Put(key, State::Entry{});
  s.stats.recorded++;
  std::weak_ptr<State> weak = state_;
  call->AddReplyHook([weak, write, key](std::string_view reply) {
    if (auto st = weak.lock()) st->Finish(write, key, reply);
  });
  return true;
}

DrcStats DuplicateRequestCache::stats() const {
  DrcStats st = state_->stats;
  st.entries = state_->writes.entries.size() + state_->others.entries.size();
  return st;
}

}  // namespace nfsedge
