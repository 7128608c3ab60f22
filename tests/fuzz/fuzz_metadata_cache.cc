// Fuzz target: the metadata cache (proxy/metadata_cache.h) learning from
// upstream replies and answering calls from what it learned: what the proxy
// does with every decoded NFSv3 result, beyond decoding it.
//
// Input: a sequence of steps, each
//   op (1 byte: bits 0-4 the procedure, bit 6 read-only export, bit 7 the
//       second of two credentials), args length (2 bytes, big-endian), args,
//   results length (2 bytes), results, seconds to advance the clock (1 byte).
// For each step whose arguments decode: MetadataCache::Answer (an answer
// must decode as the procedure's results, with a status the cache may give:
// GETATTR, ACCESS, LOOKUP, READLINK, FSINFO, PATHCONF, READDIR and
// READDIRPLUS are the procedures it answers),
// then MetadataCache::Learn from the results, then the clock moves on.
// Small cache limits make eviction part of the run.
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "cache/clock.h"
#include "cache/cred_key.h"
#include "proxy/config.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/nfs_procs.h"
#include "rpc/xdr_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace nfsedge::fuzz {
namespace {

class Steps {
 public:
  Steps(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool done() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::string_view Bytes() {
    size_t n = (size_t{Byte()} << 8) | Byte();
    n = std::min(n, size_ - pos_);
    std::string_view out = AsView(data_ + pos_, n);
    pos_ += n;
    return out;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

Export MakeExport(uint32_t id, bool read_only) {
  ExportConfig c;
  c.path = read_only ? "/ro" : "/rw";
  c.upstream_path = c.path;
  c.read_only = read_only;
  return Export(id, c);
}

// Checks an answer given from the cache.
void CheckAnswer(const NfsProc& p, const std::string& answer, const Export& exp) {
  XdrBox res(p.res_xdr, p.res_size);
  FUZZ_CHECK(res.Decode(answer));
  std::string again;
  FUZZ_CHECK(res.Encode(&again));
  FUZZ_CHECK(again == answer);
  FUZZ_CHECK(answer.size() >= 4);
  uint32_t status = LoadBE32(answer.data());
  switch (p.proc) {
    case NFSPROC3_GETATTR:
      FUZZ_CHECK(status == NFS3_OK);
      break;
    case NFSPROC3_ACCESS: {
      FUZZ_CHECK(status == NFS3_OK);
      uint32_t granted = static_cast<const ACCESS3res*>(res.get())->ACCESS3res_u.resok.access;
      if (exp.read_only()) {
        FUZZ_CHECK((granted & (ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE)) == 0);
      }
      break;
    }
    case NFSPROC3_LOOKUP:
      FUZZ_CHECK(status == NFS3_OK || status == NFS3ERR_NOENT);
      if (status == NFS3_OK) {
        const auto* r = static_cast<const LOOKUP3res*>(res.get());
        FUZZ_CHECK(r->LOOKUP3res_u.resok.object.data.data_len <= NFS3_FHSIZE);
      }
      break;
    case NFSPROC3_FSINFO:
    case NFSPROC3_PATHCONF:
      // What the file system said of itself, with the object's attributes.
      FUZZ_CHECK(status == NFS3_OK);
      break;
    case NFSPROC3_READLINK: {
      // Only a link's target, with the link's attributes.
      FUZZ_CHECK(status == NFS3_OK);
      const auto* r = static_cast<const READLINK3res*>(res.get());
      FUZZ_CHECK(r->READLINK3res_u.resok.symlink_attributes.attributes_follow);
      FUZZ_CHECK(r->READLINK3res_u.resok.symlink_attributes.post_op_attr_u.attributes.type ==
                 NF3LNK);
      break;
    }
    case NFSPROC3_READDIR:
    case NFSPROC3_READDIRPLUS:
      // Listings are answered from cached pages (proxy/dir_listing.cc),
      // only successful ones.
      FUZZ_CHECK(status == NFS3_OK);
      if (p.proc == NFSPROC3_READDIRPLUS) {
        const auto* r = static_cast<const READDIRPLUS3res*>(res.get());
        for (const entryplus3* e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
          if (e->name_handle.handle_follows) {
            FUZZ_CHECK(e->name_handle.post_op_fh3_u.handle.data.data_len <= NFS3_FHSIZE);
          }
        }
      }
      break;
    default:
      FUZZ_CHECK(false);  // the cache answers nothing else
  }
}

}  // namespace
}  // namespace nfsedge::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsedge;
  using namespace nfsedge::fuzz;
  static const Export kExports[2] = {MakeExport(0, false), MakeExport(1, true)};
  static const CredKey kCreds[2] = {CredKey::FromIds(0, 0, {}),
                                    CredKey::FromIds(1000, 1000, {1000, 27})};
  FakeClock clock;
  CacheConfig config;
  config.max_attr_entries = 16;
  config.max_access_entries = 16;
  config.max_name_entries = 16;
  MetadataCache cache(clock, config);

  Steps steps(data, size);
  for (int n = 0; n < 64 && !steps.done(); ++n) {
    uint8_t op = steps.Byte();
    std::string_view args = steps.Bytes();
    std::string_view results = steps.Bytes();
    uint8_t advance = steps.Byte();
    const NfsProc* p = FindNfsProc(op & 0x1f);
    if (!p) continue;
    const Export& exp = kExports[(op >> 6) & 1];
    const CredKey& cred = kCreds[op >> 7];
    XdrBox decoded(p->args_xdr, p->args_size);
    if (!decoded.Decode(args)) continue;
    if (std::optional<std::string> answer = cache.Answer(*p, decoded.get(), exp, cred)) {
      CheckAnswer(*p, *answer, exp);
    }
    cache.Learn(*p, decoded.get(), results, exp, cred);
    clock.Advance(std::chrono::seconds(advance));
  }
  // What the refresher asks for at the end of a run.
  FUZZ_CHECK(cache.RefreshCandidates(std::chrono::seconds(5), 8).size() <= 8);
  return 0;
}
