#include "proxy/read_path.h"

#include <algorithm>
#include <unordered_set>

#include "proxy/nfs_procs.h"
#include "rpc/log.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// A READ that cannot be served after this many attempts that brought it no
// block is forwarded as is (a file changing under every fetch, a block
// overtaken by writes again and again). A wake-up by a block that came (the
// disk tier reads a READ's blocks one after the other) is not such an
// attempt; all wake-ups together are bounded by twice the READ's blocks
// more (blocks evicted again before the READ had them all).
constexpr int kMaxAttempts = 5;

// When a fetch left for the upstream, for the path's RTT sample: the
// transport's stamp of the call's last byte (RpcReply::sent_at) when it has
// one, so that time spent waiting in the proxy's own scheduler queue is not
// taken for the path's round trip; else when the fetch was made (`made`).
// A stamp outside [made, now] cannot be of this clock and is not used.
MonoTime PathSent(MonoTime made, const RpcReply& reply, MonoTime now) {
  const MonoTime left = std::chrono::time_point_cast<Duration>(reply.sent_at);
  return left >= made && left <= now ? left : made;
}

}  // namespace

struct ReadPath::Op {
  std::string fh;
  uint64_t offset = 0;
  uint32_t count = 0;
  const Export* exp = nullptr;
  OpaqueAuth cred;
  CredKey key = CredKey::AuthNone();
  ReplyFn reply;
  ForwardFn forward;
  int attempts = 0;       // Attempt() calls
  int fruitless = 0;      // of them, wake-ups that brought no block
  int max_attempts = 0;   // the bound on all of them
  bool progress = false;  // the last wake-up was by a block that came
  // Blocks that came for this READ: one evicted before the READ had them
  // all and fetched again is no progress the second time.
  std::unordered_set<uint64_t> arrived;
  bool delivered = false;  // attempted under an unconfirmed fetch's reply (delivering_)
  // LastWrite(fh).seq when the READ came: a fetch that left before a write
  // answered after that may predate what the client was told was written.
  uint64_t arrived_seq = 0;
  std::optional<ChangeId> tried;  // the version of the last attempt that got that far
  bool revalidated = false;  // a GETATTR was sent for this op already
  // What that GETATTR returned: on an export whose attribute lifetime is 0
  // the cache does not keep them fresh, yet they are this op's revalidation.
  std::optional<fattr3> validated;
  bool advised = false;      // read-ahead was asked for this op
  bool stale = false;        // attempted from expired attributes (upstream outage)
  std::unordered_set<uint64_t> disk_tried;
};

ReadPath::ReadPath(const Clock& clock, MetadataCache& meta, BlockCache& blocks, DiskTier* disk,
                   ReadaheadTable& readahead, PathEstimator& path, RpcCaller& upstream,
                   const ReadPathOptions& options)
    : clock_(clock),
      meta_(meta),
      blocks_(blocks),
      disk_(disk),
      readahead_(readahead),
      path_(path),
      upstream_(upstream),
      options_(options),
      block_size_(blocks.block_size()) {
  uint32_t rs = options.read_size ? options.read_size : (1u << 20);
  rs = std::min(rs, options.max_transfer);
  for (ServerReads& r : sizes_) r.read_size = std::max(block_size_, rs / block_size_ * block_size_);
  if (block_size_ > options.max_transfer) {
    NFSEDGE_LOG(kWarn) << "data cache: cache.block_size (" << block_size_
                       << ") is more than one READ carries within server.max_record_size ("
                       << options.max_transfer << " bytes): READs go upstream as they are";
  }
}

void ReadPath::Serve(const READ3args& a, const Export& exp, const OpaqueAuth& cred, ReplyFn reply,
                     ForwardFn forward) {
  stats_.reads++;
  auto op = std::make_shared<Op>();
  op->fh.assign(a.file.data.data_val, a.file.data.data_len);
  op->offset = a.offset;
  op->count = std::min(a.count, options_.max_transfer);
  op->max_attempts = kMaxAttempts + 2 * static_cast<int>(op->count / block_size_ + 2);
  op->exp = &exp;
  op->cred = cred;
  op->key = CredKeyOf(cred);
  op->reply = std::move(reply);
  op->forward = std::move(forward);
  op->arrived_seq = LastWrite(op->fh).seq;
  Attempt(op);
}

void ReadPath::Attempt(const OpPtr& op) {
  if (op->attempts++ > 0 && !op->progress) op->fruitless++;
  op->progress = false;
  if (op->fruitless >= kMaxAttempts || op->attempts > op->max_attempts) {
    Forward(op);
    return;
  }
  std::optional<fattr3> attr = meta_.FreshAttributes(op->fh, *op->exp);
  // The upstream is out: expired attributes and ACCESS results answer, from
  // blocks already here (memory or disk), nothing fetched.
  op->stale = !attr && meta_.ServeStale(*op->exp);
  if (op->stale) attr = meta_.ExpiredAttributes(op->fh);
  // Woken by a fetch whose reply showed another version than the one it
  // was made for, while waiting for that version: the reply is this READ's
  // answer, as the server gave it (also where the export's lifetime keeps
  // no attributes fresh). Not a READ that waited for another version (it
  // joined the fetch with a newer revalidation of its own).
  op->delivered = delivering_ && delivering_->fh == op->fh && op->tried &&
                  *op->tried == delivering_->expected &&
                  op->arrived_seq <= delivering_->write_seq;
  if (op->delivered) {
    attr = delivering_->attr;
    op->stale = false;  // the upstream's own answer, not expired attributes
  }
  if (!attr) attr = op->validated;
  if (!attr) {
    if (op->revalidated) {
      Forward(op);  // the GETATTR failed: the upstream decides
    } else {
      Revalidate(op);
    }
    return;
  }
  if (attr->type != NF3REG) {
    Forward(op);
    return;
  }
  if (!meta_.Allows(op->fh, op->key, ACCESS3_READ, *attr, op->stale)) {
    stats_.no_evidence++;
    Forward(op);
    return;
  }
  const ChangeId version = ChangeId::FromFattr(*attr);
  op->tried = version;
  const uint64_t size = attr->size;
  const uint64_t end = std::min<uint64_t>(op->offset + op->count, size);
  if (op->offset >= end) {
    if (!Answer(op, *attr, 1, 0)) Forward(op);
    return;
  }
  const uint64_t first = op->offset / block_size_;
  const uint64_t last = (end - 1) / block_size_;
  bool waiting = false;
  auto wait = [&](uint64_t i) {
    if (waiting) return;
    waiting = true;
    Wait(op->fh, i, [this, op, i, version](bool ok) {
      if (ok) {
        op->progress = blocks_.Contains(op->fh, i, version, /*confirmed_only=*/true) &&
                       op->arrived.insert(i).second;
        Attempt(op);
      } else {
        Forward(op);  // the upstream's own answer (error, short read) goes to the client
      }
    });
  };
  std::vector<uint64_t> missing;
  for (uint64_t i = first; i <= last; ++i) {
    // An unconfirmed fetch's blocks answer only the READs it delivers to.
    if (blocks_.Contains(op->fh, i, version, /*confirmed_only=*/!op->delivered)) continue;
    if (Pending(op->fh, i)) {
      wait(i);
    } else if (disk_ && !op->disk_tried.count(i) && disk_->MayContain(op->fh, i, version)) {
      op->disk_tried.insert(i);
      ReadDisk(op->fh, i, version);
      wait(i);
    } else {
      missing.push_back(i);
    }
  }
  if (op->stale && !missing.empty()) {
    // Waits for the upstream like any uncached READ; once the disk reads
    // under way are done (Attempt runs again then), not twice.
    if (!waiting) Forward(op);
    return;
  }
  // Missing blocks go upstream in runs of consecutive blocks, each at most
  // one upstream READ.
  const uint64_t per_fetch = FetchBlocks(op->exp->id());
  for (size_t k = 0; k < missing.size();) {
    size_t n = 1;
    while (k + n < missing.size() && n < per_fetch && missing[k + n] == missing[k] + n) ++n;
    if (!Fetch(op->fh, missing[k], n, size, version, *op->exp, op->cred, false)) {
      if (!waiting) Forward(op);
      return;
    }
    wait(missing[k]);
    k += n;
  }
  if (!op->advised && !op->stale) {
    op->advised = true;
    ReadAhead(op, *attr);
  }
  if (waiting) return;
  if (!Answer(op, *attr, first, last)) Forward(op);
}

void ReadPath::Revalidate(const OpPtr& op) {
  auto [it, first] = revalidating_.try_emplace(op->fh);
  it->second.push_back(op);
  if (!first) return;
  stats_.revalidations++;
  GETATTR3args args{};
  args.object = FhView(op->fh);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_GETATTR3args), &args, &wire);
  const std::string fh = op->fh;
  const Export* exp = op->exp;
  const CredKey key = op->key;
  const uint64_t write_seq = LastWrite(fh).seq;
  Status s = upstream_.Call(
      kNfsProgram, kNfsVersion, NFSPROC3_GETATTR, op->cred, wire,
      [this, fh, exp, key, write_seq](StatusOr<RpcReply> r) {
        std::vector<OpPtr> ops;
        if (auto it = revalidating_.find(fh); it != revalidating_.end()) {
          ops = std::move(it->second);
          revalidating_.erase(it);
        }
        std::optional<fattr3> validated;
        if (Succeeded(r)) {
          GETATTR3args args{};
          args.object = FhView(fh);
          meta_.Learn(*FindNfsProc(NFSPROC3_GETATTR), &args, r->results(), *exp, key, SentOf(*r));
          XdrValue<GETATTR3res> res(reinterpret_cast<xdrproc_t>(xdr_GETATTR3res));
          if (res.Decode(r->results()) && res->status == NFS3_OK) {
            validated = res->GETATTR3res_u.resok.obj_attributes;
          }
        }
        // Only as the metadata cache took them: it refuses a reply overtaken
        // by what it learned since the GETATTR left (a REMOVE or RENAME
        // through the proxy, newer attributes from a faster call: this one
        // went on the bulk lane), and the READs that joined it may have come
        // after that.
        if (validated && !meta_.AttributesStand(fh, *validated)) {
          validated.reset();
          stats_.overtaken++;
        }
        // A write through the proxy answered since the GETATTR left: its
        // reply may show the file before it (the ops that joined it came
        // after that write). Only fresh attributes then, else the upstream.
        if (validated && LastWrite(fh).seq > write_seq) {
          validated.reset();
          stats_.overtaken++;
        }
        for (const OpPtr& o : ops) {
          o->revalidated = true;
          o->validated = validated;
          Attempt(o);
        }
      });
  if (!s.ok()) {
    std::vector<OpPtr> ops = std::move(revalidating_[op->fh]);
    revalidating_.erase(op->fh);
    for (const OpPtr& o : ops) Forward(o);
  }
}

bool ReadPath::Answer(const OpPtr& op, const fattr3& attr, uint64_t first, uint64_t last) {
  const ChangeId version = ChangeId::FromFattr(attr);
  const uint64_t end = std::min<uint64_t>(op->offset + op->count, attr.size);
  std::string data;
  if (first <= last) data.reserve(end - op->offset);
  for (uint64_t i = first; i <= last && first <= last; ++i) {
    const Block* b = blocks_.Get(op->fh, i, version);
    if (b == nullptr) return false;
    const uint64_t start = i * block_size_;
    const uint64_t from = std::max(op->offset, start) - start;
    const uint64_t to = std::min(end, start + block_size_) - start;
    if (b->data.size() < to) return false;  // a block shorter than its version's size
    data.append(b->data, from, to - from);
  }
  READ3res res{};
  res.status = NFS3_OK;
  READ3resok& ok = res.READ3res_u.resok;
  ok.file_attributes.attributes_follow = TRUE;
  ok.file_attributes.post_op_attr_u.attributes = attr;
  ok.count = static_cast<count3>(data.size());
  ok.eof = op->offset + data.size() >= attr.size;
  ok.data.data_len = static_cast<u_int>(data.size());
  ok.data.data_val = data.data();
  std::string out;
  if (!XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READ3res), &res, &out)) return false;
  stats_.served++;
  if (op->attempts == 1) stats_.memory_hits++;
  if (op->stale) meta_.NoteStaleAnswer(NFSPROC3_READ);
  op->reply(std::move(out));
  return true;
}

void ReadPath::Forward(const OpPtr& op) {
  stats_.forwarded++;
  op->forward();
}

void ReadPath::ReadAhead(const OpPtr& op, const fattr3& attr) {
  if (options_.readahead_max == 0) return;
  const uint32_t rs = read_size(op->exp->id());
  uint64_t limit = std::max<uint64_t>(2 * path_.bdp(), 2ull * rs);
  // At most half the memory tier ahead of the client: more would evict
  // what it fetched before the client comes to read it.
  limit = std::min({limit, options_.readahead_max, blocks_.max_bytes() / 2});
  ReadaheadAdvice advice = readahead_.OnRead(op->fh, op->offset, op->count, limit);
  const uint64_t end = std::min<uint64_t>(advice.offset + advice.length, attr.size);
  if (advice.length == 0 || advice.offset >= end) return;
  const ChangeId version = ChangeId::FromFattr(attr);
  const uint64_t per_fetch = FetchBlocks(op->exp->id());
  uint64_t run_start = 0, run_len = 0;
  auto flush = [&]() {
    bool ok = run_len == 0 || (background_ < options_.max_background &&
                               Fetch(op->fh, run_start, run_len, attr.size, version,
                                     *op->exp, op->cred, true));
    run_len = 0;
    return ok;
  };
  for (uint64_t i = advice.offset / block_size_; i <= (end - 1) / block_size_; ++i) {
    bool have = blocks_.Contains(op->fh, i, version) || Pending(op->fh, i) ||
                (disk_ && disk_->MayContain(op->fh, i, version));
    if (have) {
      if (!flush()) return;
      continue;
    }
    if (run_len == 0) run_start = i;
    if (++run_len == per_fetch && !flush()) return;
  }
  flush();
}

bool ReadPath::HasBlockAt(const std::string& fh, uint64_t offset,
                          const ChangeId& version) const {
  return blocks_.Contains(fh, offset / block_size_, version);
}

bool ReadPath::PrefetchFile(const std::string& fh, uint64_t size, const ChangeId& version,
                            const Export& exp, const OpaqueAuth& cred, std::function<void()> done,
                            uint64_t offset, PrefetchPart* part, RpcCaller* via) {
  constexpr uint64_t kMaxSkipped = 4096;  // blocks looked at for the first one missing
  const uint64_t end = (size + block_size_ - 1) / block_size_;
  // In memory, on its way (a client's READ of the file may have started a
  // fetch of it) or on disk: not fetched.
  const auto have = [&](uint64_t index) {
    return blocks_.Contains(fh, index, version) || Pending(fh, index) ||
           (disk_ && disk_->MayContain(fh, index, version));
  };
  uint64_t first = offset / block_size_;
  for (uint64_t skipped = 0; first < end && have(first); ++first, ++skipped) {
    if (skipped == kMaxSkipped) return false;
  }
  if (first >= end) return false;
  uint64_t blocks = std::min<uint64_t>(end - first, FetchBlocks(exp.id()));
  // Up to the first block it has.
  for (uint64_t i = 1; i < blocks; ++i) {
    if (have(first + i)) blocks = i;
  }
  bool refused = false;
  if (!Fetch(fh, first, blocks, size, version, exp, cred, true, std::move(done), via, &refused)) {
    if (part) part->refused = refused;
    return false;
  }
  if (part) part->first_end = (first + 1) * block_size_;
  stats_.tree_fetches++;
  return true;
}

bool ReadPath::Fetch(const std::string& fh, uint64_t first, uint64_t count, uint64_t size,
                     const ChangeId& expected, const Export& exp, const OpaqueAuth& cred,
                     bool prefetch, std::function<void()> done, RpcCaller* via,
                     bool* refused) {
  // A server that reads less than a block at a time answers every fetch
  // short: nothing could be stored, and the client's READ would pay a
  // second round trip.
  const uint32_t rtmax = Sizes(exp.id()).rtmax;
  if (rtmax != 0 && rtmax < block_size_) return false;
  // Nor one whose reply would not fit the records the proxy takes.
  if (block_size_ > options_.max_transfer) return false;
  READ3args a{};
  a.file = FhView(fh);
  a.offset = first * block_size_;
  a.count = static_cast<count3>(count * block_size_);
  std::string wire;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READ3args), &a, &wire);
  const Export* e = &exp;
  const MonoTime sent = clock_.MonoNow();
  const uint64_t seq = writes_.seq();
  // The count stays whole blocks (the blocks are stored whole, and a file
  // that grew since its attributes is read to its new end); only the bytes
  // in flight count what the known size leaves.
  const uint64_t bytes = size > a.offset ? std::min<uint64_t>(a.count, size - a.offset) : 0;
  // Read-ahead's own fetches count against max_background; a tree walk's
  // (with `done`) against the prefetcher's bound, not read-ahead's: a walk
  // would otherwise leave a sequential reader of another file none.
  const bool readahead = prefetch && !done;
  Status s = (via ? *via : upstream_).CallExpecting(
      kNfsProgram, kNfsVersion, NFSPROC3_READ, cred, wire, bytes,
      [this, fh, first, count, expected, e, cred, prefetch, readahead, sent, seq,
       done](StatusOr<RpcReply> r) {
        if (readahead) background_--;
        OnFetched(fh, first, count, expected, *e, cred, prefetch, sent, seq, std::move(r));
        if (done) done();
      });
  if (!s.ok()) {
    if (refused) *refused = true;
    return false;
  }
  for (uint64_t k = 0; k < count; ++k) MarkPending(fh, first + k);
  if (readahead) background_++;
  if (prefetch) {
    stats_.readahead_fetches++;
  } else {
    stats_.fetches++;
  }
  return true;
}

void ReadPath::OnFetched(const std::string& fh, uint64_t first, uint64_t count,
                         const ChangeId& expected, const Export& exp, const OpaqueAuth& cred,
                         bool prefetch, MonoTime sent, uint64_t write_seq,
                         StatusOr<RpcReply> reply) {
  bool stored = false;
  std::optional<ChangeId> unconfirmed;  // the version of blocks kept for the waiters only
  fattr3 got_attr{};                     // the reply's attributes, when unconfirmed
  bool eof = false;
  uint64_t blocks = 0;
  // Overtaken by a write through the proxy answered while the fetch was
  // out: the data may predate it. Not kept, and not learned from; given
  // (as unconfirmed) to the READs that came before that write was answered,
  // for which it is as good as any answer of the upstream's (the write and
  // they were concurrent). Those that came after fetch anew.
  const bool overtaken = LastWrite(fh).seq > write_seq;
  if (overtaken && Succeeded(reply)) stats_.overtaken++;
  // Whether a client READ waits on the fetch (read-ahead's own may have
  // none): an overtaken reply nobody waits for is dropped at once.
  bool waited = false;
  for (uint64_t k = 0; overtaken && k < count && !waited; ++k) {
    auto it = pending_.find(BlockId(fh, first + k));
    waited = it != pending_.end() && !it->second.empty();
  }
  if (Succeeded(reply) && (waited || !overtaken)) {
    XdrValue<READ3res> res(reinterpret_cast<xdrproc_t>(xdr_READ3res));
    std::string_view results = reply->results();
    READ3args a{};
    a.file = FhView(fh);
    a.offset = first * block_size_;
    a.count = static_cast<count3>(count * block_size_);
    const bool decoded = res.Decode(results);
    // An error's post-op attributes (or a STALE file) teach the caches too,
    // as a forwarded READ's do.
    if (decoded && res->status != NFS3ERR_JUKEBOX && !overtaken) {
      meta_.Learn(*FindNfsProc(NFSPROC3_READ), &a, results, exp, CredKeyOf(cred), SentOf(*reply));
    }
    if (decoded && res->status == NFS3_OK) {
      const READ3resok& ok = res->READ3res_u.resok;
      const MonoTime now = clock_.MonoNow();
      // A READ sent more than once times no round trip (Karn's rule).
      if (reply->transmissions <= 1) {
        path_.OnSample(PathSample{PathSent(sent, *reply, now), now, ok.data.data_len});
      }
      if (ok.file_attributes.attributes_follow) {
        // A server reads the data and then takes the attributes: a write
        // between the two (another client's) gives the old bytes with the
        // new attributes. Only a version the proxy knew before the fetch
        // proves the bytes are of it; another is given to the READs
        // waiting (as the server gave it) and not kept.
        const ChangeId got = ChangeId::FromFattr(ok.file_attributes.post_op_attr_u.attributes);
        if (overtaken || !(got == expected)) {
          unconfirmed = got;
          got_attr = ok.file_attributes.post_op_attr_u.attributes;
          if (!overtaken) stats_.unconfirmed++;
        }
        blocks = Store(fh, first, std::string_view(ok.data.data_val, ok.data.data_len), ok.eof,
                       got, prefetch && !overtaken, !unconfirmed);
        stored = true;
        eof = ok.eof;
        if (!overtaken) (prefetch ? stats_.readahead_bytes : stats_.fetch_bytes) += ok.data.data_len;
      }
    }
  }
  if (!stored && !(overtaken && !waited && Succeeded(reply))) {
    stats_.fetch_errors++;
    NFSEDGE_LOG(kDebug) << "read path: fetch of " << count << " blocks at block " << first
                        << " gave no usable data";
  }
  // A block the reply brought, or one beyond the end of the file (the
  // waiter attempts again with the attributes just learned), may be retried;
  // a block the fetch failed to bring is not fetched again for the same READ.
  std::optional<Delivering> outer = std::move(delivering_);
  delivering_.reset();
  if (unconfirmed) delivering_ = Delivering{fh, expected, got_attr, write_seq};
  if (unconfirmed || overtaken) {
    // The blocks do not stay: every waiter of the fetch is taken out
    // first, so that a READ woken by one block finds none of the others
    // still pending, and fetches what it lacks in one go (not block by
    // block as each is done, the blocks dropped in between).
    std::vector<std::pair<std::function<void(bool)>, bool>> woken;
    for (uint64_t k = 0; k < count; ++k) {
      for (auto& w : TakeWaiters(fh, first + k)) {
        woken.emplace_back(std::move(w), stored && (k < blocks || eof));
      }
    }
    for (auto& [w, ok] : woken) w(ok);
  } else {
    for (uint64_t k = 0; k < count; ++k) Done(fh, first + k, stored && (k < blocks || eof));
  }
  delivering_ = std::move(outer);
  if (unconfirmed) blocks_.DropUnconfirmed(fh, *unconfirmed);  // the waiters had them
}

void ReadPath::ReadDisk(const std::string& fh, uint64_t index, const ChangeId& version) {
  MarkPending(fh, index);
  stats_.disk_reads++;
  const uint64_t seq = LastWrite(fh).seq;
  disk_->Get(fh, index, version, [this, fh, index, seq](std::optional<Block> b) {
    if (b && LastWrite(fh).seq > seq) {
      // Overtaken by a write answered meanwhile (whose attributes may not
      // have changed within the server's clock tick): the block may
      // predate it. The waiter fetches from the upstream.
      stats_.overtaken++;
      b.reset();
    }
    if (b) {
      stats_.disk_hits++;
      b->prefetched = false;
      blocks_.Put(fh, index, std::move(*b));
    } else {
      stats_.disk_misses++;
    }
    Done(fh, index, true);  // a miss: the waiter fetches from the upstream
  });
}

uint64_t ReadPath::Store(const std::string& fh, uint64_t first, std::string_view data, bool eof,
                         const ChangeId& version, bool prefetch, bool keep) {
  uint64_t stored = 0;
  for (uint64_t off = 0, i = first; off < data.size(); off += block_size_, ++i) {
    std::string_view piece = data.substr(off, block_size_);
    const bool last = off + piece.size() >= data.size();
    const bool block_eof = eof && last;
    if (piece.size() < block_size_ && !block_eof) break;  // a short read: keep whole blocks
    Block b;
    b.version = version;
    b.data.assign(piece);
    b.eof = block_eof;
    b.prefetched = prefetch;
    b.unconfirmed = !keep;
    // Not over a block of its version another fetch confirmed: that one
    // answers the waiters as well, and stays.
    if (!keep && blocks_.Contains(fh, i, version, /*confirmed_only=*/true)) {
      ++stored;
      continue;
    }
    if (keep && disk_ && options_.disk_write_through) disk_->Put(fh, i, b);
    blocks_.Put(fh, i, std::move(b));
    ++stored;
  }
  return stored;
}

void ReadPath::LearnForwarded(const READ3args& a, std::string_view results,
                              uint32_t transmissions, std::chrono::steady_clock::time_point sent_at,
                              const std::optional<ChangeId>& before) {
  if (a.offset % block_size_ != 0) return;
  if (transmissions > 1) {
    stats_.overtaken++;  // which send it answers is unknown
    return;
  }
  XdrValue<READ3res> res(reinterpret_cast<xdrproc_t>(xdr_READ3res));
  if (!res.Decode(results) || res->status != NFS3_OK) return;
  const READ3resok& ok = res->READ3res_u.resok;
  if (!ok.file_attributes.attributes_follow) return;
  std::string fh(a.file.data.data_val, a.file.data.data_len);
  if (LastWrite(fh).at >= sent_at && LastWrite(fh).seq > 0) {
    stats_.overtaken++;
    return;
  }
  // Kept only under the version known before the READ (OnFetched).
  const ChangeId got = ChangeId::FromFattr(ok.file_attributes.post_op_attr_u.attributes);
  if (!before || !(*before == got)) {
    stats_.unconfirmed++;
    return;
  }
  Store(fh, a.offset / block_size_, std::string_view(ok.data.data_val, ok.data.data_len), ok.eof,
        got, false);
}

std::optional<ChangeId> ReadPath::KnownVersion(std::string_view fh) {
  std::optional<fattr3> a = meta_.LatestAttributes(fh);
  if (!a) return std::nullopt;
  return ChangeId::FromFattr(*a);
}

void ReadPath::NoteWrite(std::string_view fh) {
  writes_.Note(fh);
  blocks_.DropFile(fh);
  if (disk_) disk_->DropFile(fh);
}

void ReadPath::NoteDropAll() {
  writes_.NoteAll();
  blocks_.DropAll();
  if (disk_) disk_->DropAll();
}

void ReadPath::LearnFsinfo(std::string_view results, uint32_t export_id) {
  XdrValue<FSINFO3res> res(reinterpret_cast<xdrproc_t>(xdr_FSINFO3res));
  if (export_id >= kMaxExports || !res.Decode(results) || res->status != NFS3_OK) return;
  const FSINFO3resok& ok = res->FSINFO3res_u.resok;
  ServerReads& sizes = sizes_[export_id];
  if (ok.rtmax != 0 && ok.rtmax != sizes.rtmax) {
    sizes.rtmax = ok.rtmax;
    if (sizes.rtmax < block_size_) {
      NFSEDGE_LOG(kWarn) << "data cache: the upstream reads at most " << sizes.rtmax
                         << " bytes at a time (FSINFO rtmax) on one export, less than "
                            "cache.block_size ("
                         << block_size_ << "): its READs go upstream as they are; set "
                            "cache.block_size to at most "
                         << sizes.rtmax;
    }
  }
  // The configured size, else the server's preferred one; never more than
  // the server reads at once (every fetch would come back short).
  uint64_t rs = options_.read_size != 0 ? options_.read_size : (ok.rtpref ? ok.rtpref : ok.rtmax);
  if (ok.rtmax) rs = std::min<uint64_t>(rs, ok.rtmax);
  rs = std::min<uint64_t>(rs, options_.max_transfer);
  if (rs == 0) return;
  sizes.read_size =
      static_cast<uint32_t>(std::max<uint64_t>(block_size_, rs / block_size_ * block_size_));
}

uint64_t ReadPath::FetchBlocks(uint32_t export_id) const {
  return std::max<uint64_t>(
      1, std::min<uint64_t>(read_size(export_id), blocks_.max_bytes() / 4) / block_size_);
}

std::string ReadPath::BlockId(std::string_view fh, uint64_t index) {
  std::string id(fh);
  id.append(reinterpret_cast<const char*>(&index), sizeof(index));
  return id;
}

bool ReadPath::Pending(std::string_view fh, uint64_t index) const {
  return pending_.count(BlockId(fh, index)) != 0;
}

void ReadPath::MarkPending(std::string_view fh, uint64_t index) {
  pending_.try_emplace(BlockId(fh, index));
}

void ReadPath::Wait(std::string_view fh, uint64_t index, std::function<void(bool)> fn) {
  pending_[BlockId(fh, index)].push_back(std::move(fn));
}

std::vector<std::function<void(bool)>> ReadPath::TakeWaiters(std::string_view fh,
                                                             uint64_t index) {
  auto it = pending_.find(BlockId(fh, index));
  if (it == pending_.end()) return {};
  std::vector<std::function<void(bool)>> waiters = std::move(it->second);
  pending_.erase(it);
  return waiters;
}

void ReadPath::Done(std::string_view fh, uint64_t index, bool ok) {
  for (auto& w : TakeWaiters(fh, index)) w(ok);
}

}  // namespace nfsedge
