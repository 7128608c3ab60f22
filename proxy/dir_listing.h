// Directory listings: how the proxy turns a client READDIR into an upstream
// READDIRPLUS ("bulk getattr": one round trip brings the handle and
// attributes of every entry, which fill the attribute and name caches) and
// converts the results back to READDIR3res, and how listing pages are kept
// in the directory cache (cache/dir_cache.h) by MetadataCache.
//
// A stored page is an upstream READDIRPLUS3res (XDR) with the dircount and
// maxcount it was asked with. It answers a later READDIRPLUS or READDIR of
// the same directory, cookie and cookie verifier iff it fits that request
// (RFC 1813: a server may always return fewer entries than asked).
//
// Thread-safety: plain functions.
#ifndef NFSEDGE_PROXY_DIR_LISTING_H_
#define NFSEDGE_PROXY_DIR_LISTING_H_

#include <rpc/xdr/nfs3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nfsedge {

// The sizes of the READDIRPLUS calls the proxy makes by itself (tree-walk
// prefetch, bulk revalidation): large pages, few round trips.
inline constexpr uint32_t kListingDircount = 32 << 10;
inline constexpr uint32_t kListingMaxcount = 256 << 10;

// The limits a READDIRPLUS page was fetched with.
struct ListingLimits {
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
};

// Returns the READDIRPLUS arguments that fetch what READDIR `a` asks for:
// same directory, cookie and verifier; dircount = count, maxcount large
// enough for the entries' attributes and handles, at most `max_transfer`.
// The result views `a`'s handle. REQUIRES: `a` outlives the result.
READDIRPLUS3args PlusArgsForReaddir(const READDIR3args& a, uint32_t max_transfer);

// Returns READDIR3res (XDR) holding the entries of `plus` (names, fileids,
// cookies, its verifier and directory attributes) that fit in `count` bytes
// of reply (RFC 1813: count bounds the whole READDIR3resok with its XDR
// overhead); eof only if every entry fit. A failed `plus` converts to the
// same status. Returns NFS3ERR_TOOSMALL iff not even one entry fits.
std::string ReaddirFromPlus(const READDIRPLUS3res& plus, uint32_t count);

// Returns the bytes stored in the directory cache for a page: `limits`
// followed by the READDIRPLUS3res `results`.
std::string EncodeListingPage(const ListingLimits& limits, std::string_view results);
// Splits a stored page into its limits and results; false iff malformed.
bool DecodeListingPage(std::string_view page, ListingLimits* limits, std::string_view* results);

}  // namespace nfsedge

#endif  // NFSEDGE_PROXY_DIR_LISTING_H_
