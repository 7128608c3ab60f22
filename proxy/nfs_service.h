// NfsService: the NFSv3 program of the proxy (transparent forwarding).
//
// For every call it decodes the arguments (GARBAGE_ARGS if they do not
// decode), finds the exports of each file handle in the HandleRegistry
// (NFS3ERR_STALE for a handle the proxy never handed out, BADHANDLE for an
// empty one, XDEV for handles sharing no export; ".." of an export's root
// does not count for that export), picks the deepest of them that admits the
// client and applies its rules (NFS3ERR_ACCES for a client outside its
// networks, NFS3ERR_PERM for an unprivileged port on a `secure` export,
// NFS3ERR_ROFS for a mutation or COMMIT on a read-only export, root or all squash on
// the credential), and forwards the call
// upstream, unless the MetadataCache can answer it or an identical read-only
// call (same procedure, arguments, credential, export) is already in flight
// and no mutation was answered since it left, whose reply then answers both
// (single flight). The upstream's reply
// teaches the cache, and goes back with the client's XID, after the handles
// it carries are registered. An upstream that cannot answer in time
// gets the client NFS3ERR_JUKEBOX ("try again later").
//
// Thread-safety: runs on the event loop's thread.
#ifndef NFSEDGE_PROXY_NFS_SERVICE_H_
#define NFSEDGE_PROXY_NFS_SERVICE_H_

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/change_id.h"
#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/drc.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "proxy/prefetcher.h"
#include "proxy/read_path.h"
#include "proxy/write_path.h"
#include "rpc/rpc_caller.h"

namespace nfsedge {

struct NfsServiceOptions {
  // Speculative ACCESS calls in flight at most (DESIGN rule 8); beyond it
  // speculation is skipped, never queued.
  uint32_t max_speculative = 32;
  // Largest READ/WRITE/READDIR payload the proxy can carry in one record;
  // FSINFO replies are clamped to it.
  uint32_t max_transfer = 1 << 20;
  // Duplicate request cache size (finished calls); 0 = none.
  size_t drc_entries = 4096;
};

struct NfsProcStats {
  uint64_t calls = 0;
  uint64_t cache_answers = 0;    // answered from the metadata cache
  uint64_t local_errors = 0;     // answered by the proxy without the upstream
  uint64_t upstream_errors = 0;  // no reply from the upstream (JUKEBOX)
  uint64_t speculative = 0;      // ACCESS calls the proxy made ahead of the client
  uint64_t coalesced = 0;        // joined an identical (or speculative) call in flight
};

class NfsService : public RpcProgram {
 public:
  // `cache` may be null: every call then goes upstream. `read_path` may be
  // null (no data cache): READs then go upstream as is.
  NfsService(const ExportTable& exports, HandleRegistry& handles, RpcCaller& upstream,
             NfsServiceOptions options, MetadataCache* cache = nullptr,
             ReadPath* read_path = nullptr);
  // Takes back what it gave the cache.
  ~NfsService() override;

  uint32_t program() const override { return kNfsProgram; }
  uint32_t version() const override { return kNfsVersion; }
  uint32_t proc_count() const override { return kNfsProcCount; }
  void Handle(std::shared_ptr<IncomingCall> call) override;

  const NfsProcStats& stats(uint32_t proc) const { return stats_[proc]; }
  DrcStats drc_stats() const { return drc_.stats(); }

  // Tree-walk prefetch after client listings; null = none.
  void SetPrefetcher(Prefetcher* prefetcher) { prefetcher_ = prefetcher; }
  // Write gathering and write-behind; null = WRITE and COMMIT are forwarded.
  // The write path's replies take the file's latest attributes from the
  // cache when they are newer than its own (a SETATTR went by).
  void SetWritePath(WritePath* write_path);
  // The upstream's outage began (`out`) or ended (OutageDetector's
  // listener). At the start, the GETATTR, ACCESS, LOOKUP and READ calls
  // waiting for the upstream on exports with serve_stale_on_outage are
  // answered from expired cache entries where the rules allow; the rest
  // keep waiting (their upstream reply, if any, then goes nowhere).
  void OnOutage(bool out);
  // Learns from a successful upstream `reply` to `p` with decoded `args`
  // sent for `cred` on `exp`: caches, handle registry, data cache; clamps
  // FSINFO and masks ACCESS on a read-only export (may rewrite the record).
  // A READ's data is kept only under `read_version`, the version the cache
  // held when the READ left (none: not kept).
  void LearnReply(const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
                  const OpaqueAuth& cred, const std::optional<ChangeId>& read_version = {});

 private:
  // Returns NFS3_OK and sets *exp iff the call's handles and the export's
  // rules let it through.
  nfsstat3 Admit(const NfsProc& p, const void* args, const IncomingCall& call,
                 const Export** exp);
  void OnReply(const NfsProc& p, const Export& exp, const std::shared_ptr<IncomingCall>& call,
               const std::shared_ptr<XdrBox>& args, const OpaqueAuth& cred,
               const std::string& flight, uint64_t before,
               const std::optional<ChangeId>& read_version, StatusOr<RpcReply> reply);
  // The key under which identical read-only calls share one upstream call.
  static std::string FlightKey(uint32_t proc, uint32_t export_id, const OpaqueAuth& cred,
                               std::string_view args);
  // Answers an admitted call: from the cache, by joining a call in flight,
  // or by forwarding it upstream. `before`: the call was held for buffered
  // writes (WritePath::Hold) at that write stamp; later writes do not hold
  // it again.
  void Serve(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
             const std::shared_ptr<XdrBox>& args, const Export& exp, const OpaqueAuth& cred,
             uint64_t before = UINT64_MAX);
  // A call admitted under `exp` that waited (held for buffered writes, for
  // a speculative ACCESS, for a prefetched listing, for the write path):
  // checked again against that export's rules now in force (a reload may
  // have made it read-only, squash its credential, or refuse the client),
  // its error answered, or served (ServeAgain) or forwarded (ForwardAgain)
  // with the credential mapped anew.
  bool Readmit(const NfsProc& p, const std::shared_ptr<IncomingCall>& call, const Export& exp,
               OpaqueAuth* cred);
  void ServeAgain(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                  const std::shared_ptr<XdrBox>& args, const Export& exp,
                  uint64_t before = UINT64_MAX);
  void ForwardAgain(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                    const std::shared_ptr<XdrBox>& args, const Export& exp);
  // The rules of `exp` itself for `p` from `call` (Admit's last steps): a
  // plaintext call to a TLS-only export, a mutation or COMMIT on a
  // read-only one.
  nfsstat3 ExportRules(const NfsProc& p, const IncomingCall& call, const Export& exp);
  // Returns true iff the write path took the call: WRITE and COMMIT, and a
  // READ, GETATTR, ACCESS, LINK, SETATTR or CREATE held until buffered
  // writes of its file are upstream (DESIGN rule 4; Serve runs again then).
  bool ServeWrites(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                   const std::shared_ptr<XdrBox>& args, const Export& exp,
                   const OpaqueAuth& cred, uint64_t before);
  // Returns true iff a handle in the call's arguments names a file whose
  // writes (up to stamp `before`) are not upstream yet: `again` then runs
  // once they are.
  bool HoldNamed(const NfsProc& p, const std::shared_ptr<XdrBox>& args,
                 const std::function<void()>& again, uint64_t before);
  // Returns true iff the successful `results` of a LOOKUP or READDIRPLUS
  // name a file whose writes (up to stamp `before`) the write path still
  // buffers: `retry` (which serves the call again, given the stamp it was
  // held at) then runs once the upstream has them, so that no answer shows
  // that file's attributes without its writes.
  bool HoldForBufferedWrites(const NfsProc& p, std::string_view results, uint64_t before,
                             const std::function<void(uint64_t)>& retry);
  // Returns true iff `cred` is one any NFSv3 server accepts, so that a cached
  // answer cannot be given where the upstream would refuse the credential:
  // AUTH_SYS within RFC 5531's limits (at most 16 groups). Other credentials
  // always go upstream, which decides.
  static bool IsCacheableCred(const OpaqueAuth& cred);
  // Asks the upstream's FSINFO (on `fh` of `exp`, for `cred`) for the read
  // path, if it knows none of that export yet (a proxy restarted under
  // mounted clients).
  void AskFsinfo(std::string_view fh, const Export& exp, const OpaqueAuth& cred);
  // A WRITE or SETATTR `p` with `args` the upstream answered, or may have
  // carried out (its reply lost): the data cache drops the file's blocks
  // (ReadPath::NoteWrite). Nothing for another procedure.
  void NoteDataChange(const NfsProc& p, const void* args);
  // Leaves out the file's attributes from a CREATE's successful reply that
  // names a file whose writes the proxy holds and the upstream lacks.
  void HideUnsentWrites(RpcReply* reply);
  // Sends an admitted READDIR upstream as a READDIRPLUS ("bulk getattr":
  // it fills the attribute and name caches and the directory cache) and
  // answers it with the entries converted to READDIR3res within the
  // client's count (proxy/dir_listing.h); an upstream without READDIRPLUS
  // (NFS3ERR_NOTSUPP, or the procedure refused at the RPC level: PROC_UNAVAIL,
  // GARBAGE_ARGS) gets that READDIR and every later one as is. Identical
  // READDIRs in flight share one call.
  void ForwardReaddirAsPlus(const std::shared_ptr<IncomingCall>& call,
                            const std::shared_ptr<XdrBox>& args, const Export& exp,
                            const OpaqueAuth& cred);
  // The upstream refused a READDIRPLUS as unknown (`exp` null: the whole
  // upstream, PROC_UNAVAIL) or not supported on export `exp` (NOTSUPP, as
  // Linux's `nordirplus` answers per export): READDIRs go as they are.
  void LackingPlus(const Export* exp);
  // After a successful upstream reply to `p`: LearnReply, then speculation
  // and tree-walk prefetch for what the client will ask next.
  void LearnAndSpeculate(const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
                         const OpaqueAuth& cred, const std::optional<ChangeId>& read_version = {});
  // Tree-walk prefetch below a READDIRPLUS listing (`args`, `results`),
  // from the upstream or the cache (the prefetcher skips what it did).
  void PrefetchBelow(const void* args, std::string_view results, const Export& exp,
                     const OpaqueAuth& cred);
  // Sends an admitted call upstream (or joins an identical one in flight).
  // `before`: as for Serve (a call served again after a hold).
  void Forward(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
               const std::shared_ptr<XdrBox>& args, const Export& exp, const OpaqueAuth& cred,
               uint64_t before = UINT64_MAX);
  // The bytes the upstream's answer to READDIRPLUS `a` is expected to bring,
  // for the scheduler's count of bytes in flight: the page last stored for
  // it and a quarter more, else `a`'s maxcount.
  uint64_t ExpectedListing(const READDIRPLUS3args& a) const;
  // Returns true iff the decoded `args` asked for more than max_transfer
  // (READ count, READDIR count, READDIRPLUS dircount/maxcount) and were
  // lowered to it: the server may always return less than asked.
  bool ClampTransfer(const NfsProc& p, void* args) const;
  // Returns true iff `reply` answers a LOOKUP ".." with a directory not
  // handed out for `exp` (a directory moved out of the export, its parent
  // outside): the reply is then rewritten as NFS3ERR_ACCES, registers
  // nothing and teaches nothing.
  bool RefuseWayOut(const NfsProc& p, const void* args, RpcReply* reply, const Export& exp);
  // Registers handles in a successful reply, clamps FSINFO, and removes the
  // write bits from ACCESS on a read-only export; may rewrite reply->record.
  void PostProcess(const NfsProc& p, const Export& exp, RpcReply* reply);
  // Registers the handles of `p`'s decoded successful `results` for `exp`
  // (never a listing's "..").
  // RegisterHandles for a call answered from the cache with `results`.
  void RegisterAnswered(const NfsProc& p, const Export& exp, std::string_view results);
  void RegisterHandles(const NfsProc& p, const Export& exp, const void* results);
  // Fetches ACCESS (all bits) for `cred` on `fh` in the background unless the
  // cache already has it or the same fetch is in flight, so the ACCESS, and
  // the LOOKUPs in a directory, that a client sends next are answered
  // locally.
  // `for_writes`: WRITEs of the object may wait for this one (WaitForAccess).
  void SpeculateAccess(std::string_view fh, const Export& exp, const OpaqueAuth& cred,
                       bool for_writes = false);
  // Whether ACCESS evidence changes how the WRITE `a` on `exp` is answered:
  // an UNSTABLE write is then buffered, any write on a write_back export
  // journaled.
  static bool EvidenceMatters(const Export& exp, const WRITE3args& a);
  // A WRITE `a` without the evidence that would let it be buffered or
  // journaled, while a speculative ACCESS that a CREATE started for its file
  // and credential is on its way: waits for that reply (once) and is served
  // again. Returns false (the caller goes on) where the evidence would not
  // change the answer.
  bool WaitForAccess(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                     const std::shared_ptr<XdrBox>& args, const Export& exp,
                     const OpaqueAuth& cred, const WRITE3args& a);
  // After a reply: speculation for what the client will ask next.
  void SpeculateAfter(const NfsProc& p, const void* args, std::string_view results,
                      const Export& exp, const OpaqueAuth& cred);

  // Remembers a call that may wait for the upstream and could be answered
  // from expired entries if an outage began (OnOutage), within a bound.
  void ParkForOutage(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                     const std::shared_ptr<XdrBox>& args, const Export& exp,
                     const OpaqueAuth& cred);
  // Answers a parked call from the caches if they can, else leaves it be.
  void ServeStaleOnly(const NfsProc& p, const std::shared_ptr<IncomingCall>& call,
                      const std::shared_ptr<XdrBox>& args, const Export& exp,
                      const OpaqueAuth& cred);

  const ExportTable& exports_;
  HandleRegistry& handles_;
  RpcCaller& upstream_;
  const NfsServiceOptions options_;
  MetadataCache* cache_;
  ReadPath* read_path_;
  // AskFsinfo, by export id: one on its way; the earliest time for the next.
  static constexpr Duration kFsinfoRetry = std::chrono::seconds(30);
  std::array<bool, kMaxExports> fsinfo_asked_{};
  std::array<SteadyClock::time_point, kMaxExports> fsinfo_next_ask_{};
  Prefetcher* prefetcher_ = nullptr;
  WritePath* write_path_ = nullptr;
  // A client call (ACCESS, or a WRITE that could be buffered with the
  // evidence) waiting for a speculative ACCESS's reply.
  // Served again through ServeAgain (its export's rules checked anew).
  struct Waiter {
    const NfsProc* proc;
    std::shared_ptr<IncomingCall> call;
    std::shared_ptr<XdrBox> args;
    const Export* exp;
  };
  // Speculative ACCESS calls in flight, by handle + credential key, with the
  // client calls that wait for them.
  std::unordered_map<std::string, std::vector<Waiter>> speculating_;
  // Those of them a CREATE started: WRITEs of the new file wait for them.
  std::unordered_set<std::string> writes_may_wait_;
  // Those of them whose CREATE's reply showed the credential as the owner
  // with the owner's write bit: its writes are buffered at once (the fresh
  // attributes must still show that) until the ACCESS answers.
  std::unordered_set<std::string> created_by_;
  // Calls waiting on an identical call in flight, by FlightKey; `epoch`:
  // *mutations_answered_ when that call left. A call may join only while it
  // is unchanged: a reply the upstream made before a mutation was answered
  // may not show it, and the joiner may have seen that answer.
  struct Flight {
    uint64_t epoch = 0;
    uint64_t attr_seq = 0;  // MetadataCache::AttrChangeSeq() as it left
    std::vector<std::shared_ptr<IncomingCall>> calls;
  };
  // Marks `f` as leaving now.
  void StartFlight(Flight* f) const;
  // Whether a call `p` with `args` may take the reply of flight `f`: no
  // mutation was answered since it left, nor were newer attributes of the
  // call's objects learned (from a faster call: its reply may show an older
  // state than the joiner has seen).
  bool Joinable(const Flight& f, const NfsProc& p, const void* args) const;
  std::unordered_map<std::string, Flight> joined_;
  bool upstream_lacks_plus_ = false;  // READDIRs go as they are
  int plus_garbage_ = 0;  // READDIRPLUS answered GARBAGE_ARGS in a row
  uint64_t exports_lacking_plus_ = 0;  // ... on these exports (bits by id)
  // Replies sent to mutating calls (shared with their reply hooks, which
  // may outlive this).
  std::shared_ptr<uint64_t> mutations_answered_ = std::make_shared<uint64_t>(0);
  // Calls ParkForOutage kept (answered ones are dropped lazily), oldest
  // first, at most kMaxParked.
  struct Parked {  // served (stale) through Readmit
    const NfsProc* p;
    std::shared_ptr<IncomingCall> call;
    std::shared_ptr<XdrBox> args;
    const Export* exp;
  };
  static constexpr size_t kMaxParked = 4096;
  std::deque<Parked> parked_;
  std::array<NfsProcStats, kNfsProcCount> stats_{};
  DuplicateRequestCache drc_;
};

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_NFS_SERVICE_H_
