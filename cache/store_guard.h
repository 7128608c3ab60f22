// What the cache stores (DiskTier, HandleStore) must never rebuild.
//
// Both rebuild a directory empty when it holds a store they do not
// recognise: they are caches, losing one costs only upstream calls. The edge
// journal (write_journal.h) is not a cache: it holds writes clients were
// told are stable. A cache store pointed at the journal's directory (one
// path in two config keys) leaves it alone and fails to open instead.
//
// Thread-safety: plain functions; rocksdb::DB is thread-safe.
#ifndef NFSEDGE_CACHE_STORE_GUARD_H_
#define NFSEDGE_CACHE_STORE_GUARD_H_

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>

#include <memory>
#include <string>
#include <string_view>

namespace nfsedge {

// Returns true iff `db` holds an edge journal (docs/cache-format.md, "Write
// journal"): its metadata key `m` with the journal's magic, or a record key
// (`r` and an 8-byte sequence number). Only what can be read counts: a
// store whose keys cannot be read is left to the caller's corruption rules.
inline bool HoldsEdgeJournal(rocksdb::DB* db) {
  constexpr std::string_view kJournalMagic = "nfsedge-write-journal";
  std::string meta;
  const rocksdb::Status s = db->Get(rocksdb::ReadOptions(), "m", &meta);
  if (s.ok() && std::string_view(meta).starts_with(kJournalMagic)) return true;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->Seek("r");
  return it->Valid() && it->key().size() == 9 && it->key()[0] == 'r';
}

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_STORE_GUARD_H_
