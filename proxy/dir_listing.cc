#include "proxy/dir_listing.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "cache/dir_cache.h"
#include "proxy/metadata_cache.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {

// XDR sizes (RFC 1813 section 2.5, 3.3.16).
constexpr uint32_t kFattrXdr = 84;
// An entry3 on the wire: "value follows", fileid, name length, cookie; and
// the name padded to 4 bytes.
uint64_t EntryXdr(const char* name) {
  const uint64_t len = name ? std::strlen(name) : 0;
  return 4 + 8 + 4 + ((len + 3) & ~uint64_t{3}) + 8;
}

std::string_view Bytes(const nfs_fh3& fh) {
  return std::string_view(fh.data.data_val, fh.data.data_len);
}

// The verifier a page is kept under: the request's, but none at cookie 0,
// where it means nothing (RFC 1813; a Linux client listing a directory
// again from the start sends the one it was last given).
CookieVerf KeyVerf(uint64_t cookie, const cookieverf3& verf) {
  return cookie == 0 ? CookieVerf{} : ToCookieVerf(verf);
}

// An entryplus3 on the wire: its entry3 part, then the attributes and the
// handle, each with its "follows" word.
uint64_t EntryPlusXdr(const entryplus3& e) {
  return EntryXdr(e.name) + 4 + (e.name_attributes.attributes_follow ? kFattrXdr : 0) + 4 +
         (e.name_handle.handle_follows
              ? 4 + ((uint64_t{e.name_handle.post_op_fh3_u.handle.data.data_len} + 3) & ~uint64_t{3})
              : 0);
}

// Cuts a decoded READDIRPLUS entry list to the part a client is answered
// with, and puts it back whole when destroyed (xdr_free follows the list).
class EntryListCut {
 public:
  explicit EntryListCut(dirlistplus3* list) : list_(list), head_(list->entries) {}
  EntryListCut(const EntryListCut&) = delete;
  EntryListCut& operator=(const EntryListCut&) = delete;
  ~EntryListCut() {
    if (tail_ != nullptr) tail_->nextentry = rest_;
    list_->entries = head_;
    list_->eof = eof_;
  }
  // Starts the list after its first `n` entries; false iff it has fewer.
  bool SkipFirst(size_t n) {
    for (; n > 0; --n) {
      if (list_->entries == nullptr) return false;
      list_->entries = list_->entries->nextentry;
    }
    return true;
  }
  // Keeps the entries that fit a READDIRPLUS of `dircount` and `maxcount`
  // (RFC 1813: maxcount bounds the whole READDIRPLUS3resok); eof only if
  // all fit. False iff entries were left and none fits.
  bool FitPlus(uint32_t dircount, uint32_t maxcount) {
    // Directory attributes, verifier, end of list, eof.
    uint64_t used = 4 + kFattrXdr + NFS3_COOKIEVERFSIZE + 4 + 4;
    uint64_t dir = 0;
    entryplus3* last = nullptr;
    for (entryplus3* e = list_->entries; e; e = e->nextentry) {
      dir += EntryXdr(e->name);
      used += EntryPlusXdr(*e);
      if (used > maxcount || dir > dircount) {
        if (last == nullptr) return false;
        tail_ = last;
        rest_ = e;
        last->nextentry = nullptr;
        list_->eof = FALSE;
        return true;
      }
      last = e;
    }
    return true;
  }

 private:
  dirlistplus3* list_;
  entryplus3* head_;
  bool_t eof_ = list_->eof;
  entryplus3* tail_ = nullptr;  // the last entry kept, if the list was cut after it
  entryplus3* rest_ = nullptr;  // what followed it
};

// The READDIRPLUS maxcount asked for a READDIR of `count` bytes: an
// entryplus3 is about six times an entry3 (attributes and handle).
constexpr uint32_t kPlusPerEntryFactor = 6;

}  // namespace

READDIRPLUS3args PlusArgsForReaddir(const READDIR3args& a, uint32_t max_transfer) {
  READDIRPLUS3args p{};
  p.dir = a.dir;
  p.cookie = a.cookie;
  std::memcpy(p.cookieverf, a.cookieverf, NFS3_COOKIEVERFSIZE);
  const uint32_t count = std::min(a.count, max_transfer);
  p.dircount = count;
  const uint64_t maxcount = uint64_t{count} * kPlusPerEntryFactor;
  p.maxcount = static_cast<uint32_t>(std::min<uint64_t>(maxcount, max_transfer));
  p.maxcount = std::max(p.maxcount, count);
  return p;
}

std::string ReaddirFromPlus(const READDIRPLUS3res& plus, uint32_t count) {
  READDIR3res out{};
  out.status = plus.status;
  std::string wire;
  if (plus.status != NFS3_OK) {
    out.READDIR3res_u.resfail.dir_attributes = plus.READDIRPLUS3res_u.resfail.dir_attributes;
    XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIR3res), &out, &wire);
    return wire;
  }
  const READDIRPLUS3resok& ok = plus.READDIRPLUS3res_u.resok;
  READDIR3resok& r = out.READDIR3res_u.resok;
  r.dir_attributes = ok.dir_attributes;
  std::memcpy(r.cookieverf, ok.cookieverf, NFS3_COOKIEVERFSIZE);
  // status, directory attributes, verifier, end of list, eof.
  uint64_t used = 4 + 4 + (ok.dir_attributes.attributes_follow ? kFattrXdr : 0) +
                  NFS3_COOKIEVERFSIZE + 4 + 4;
  std::vector<entry3> entries;
  bool all = true;
  for (const entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
    const uint64_t size = EntryXdr(e->name);
    if (used + size > count) {
      all = false;
      break;
    }
    used += size;
    entry3 x{};
    x.fileid = e->fileid;
    x.name = e->name;
    x.cookie = e->cookie;
    entries.push_back(x);
  }
  if (entries.empty() && !all) {
    READDIR3res small{};
    small.status = NFS3ERR_TOOSMALL;
    small.READDIR3res_u.resfail.dir_attributes = ok.dir_attributes;
    XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIR3res), &small, &wire);
    return wire;
  }
  for (size_t i = 0; i + 1 < entries.size(); ++i) entries[i].nextentry = &entries[i + 1];
  r.reply.entries = entries.empty() ? nullptr : entries.data();
  r.reply.eof = all ? ok.reply.eof : FALSE;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIR3res), &out, &wire);
  return wire;
}

std::string EncodeListingPage(const ListingLimits& limits, std::string_view results) {
  std::string out(8, '\0');
  StoreBE32(out.data(), limits.dircount);
  StoreBE32(out.data() + 4, limits.maxcount);
  out.append(results);
  return out;
}

bool DecodeListingPage(std::string_view page, ListingLimits* limits, std::string_view* results) {
  if (page.size() < 8) return false;
  limits->dircount = LoadBE32(page.data());
  limits->maxcount = LoadBE32(page.data() + 4);
  *results = page.substr(8);
  return true;
}


// MetadataCache's listing pages (declared in metadata_cache.h).

std::optional<std::string> MetadataCache::AnswerListing(bool plus, const void* args,
                                                        const Export& exp, const CredKey& cred) {
  const nfs_fh3& dir_fh = plus ? static_cast<const READDIRPLUS3args*>(args)->dir
                               : static_cast<const READDIR3args*>(args)->dir;
  const uint64_t cookie = plus ? static_cast<const READDIRPLUS3args*>(args)->cookie
                               : static_cast<const READDIR3args*>(args)->cookie;
  const cookieverf3& verf = plus ? static_cast<const READDIRPLUS3args*>(args)->cookieverf
                                 : static_cast<const READDIR3args*>(args)->cookieverf;
  std::string_view dir = Bytes(dir_fh);
  // Attributes no older than the answering export's lifetimes allow (a
  // nested export, or a reload, may have shorter ones than they were
  // learned under), as for GETATTR.
  std::optional<fattr3> dir_attr = Attrs(dir, false, exp);
  if (!dir_attr || dir_attr->type != NF3DIR) return std::nullopt;
  // DESIGN rule 6: listing needs READ and LOOKUP on the directory.
  if (!access_.Allows(dir, cred, ACCESS3_READ | ACCESS3_LOOKUP, *dir_attr)) {
    return std::nullopt;
  }
  const DirPage* page = dirs_.Lookup(DirPageKey{std::string(dir), true, cookie,
                                                KeyVerf(cookie, verf), 0},
                                     ChangeId::FromFattr(*dir_attr));
  // A client that asks less than a page holds goes on from a cookie inside
  // it (a Linux client starts a directory at 4 KiB): answered from there.
  size_t skip = 0;
  if (page == nullptr && cookie != 0) {
    std::tie(page, skip) = dirs_.Continue(dir, cookie, ToCookieVerf(verf),
                                          ChangeId::FromFattr(*dir_attr));
  }
  if (page == nullptr) return std::nullopt;
  ListingLimits filled;
  std::string_view results;
  if (!DecodeListingPage(page->bytes, &filled, &results)) return std::nullopt;
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  if (!res.Decode(results) || res->status != NFS3_OK) return std::nullopt;
  READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
  // The list is cut (entries before the client's cookie, and those after
  // what fits); put back whole before `res` frees it.
  EntryListCut cut(&ok.reply);
  if (!cut.SkipFirst(skip)) return std::nullopt;
  // The entries' attributes are those of the attribute cache, fresh (never
  // older than a GETATTR answered now would be), or the page is not used.
  ok.dir_attributes.attributes_follow = TRUE;
  ok.dir_attributes.post_op_attr_u.attributes = *dir_attr;
  // Only ".." goes without them instead: its attributes are not learned
  // from listings, and never for an export root's (outside the export); a
  // client does not use them.
  for (entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
    if (!e->name_attributes.attributes_follow) continue;
    if (!e->name_handle.handle_follows) return std::nullopt;
    std::optional<fattr3> a = Attrs(Bytes(e->name_handle.post_op_fh3_u.handle), false, exp);
    if (!a && e->name != nullptr && std::string_view(e->name) == "..") {
      e->name_attributes.attributes_follow = FALSE;
      continue;
    }
    if (!a) return std::nullopt;
    e->name_attributes.post_op_attr_u.attributes = *a;
  }
  std::string out;
  if (!plus) {
    const uint32_t count = static_cast<const READDIR3args*>(args)->count;
    out = ReaddirFromPlus(res.get(), count);
    if (out.size() < 4 || LoadBE32(out.data()) != NFS3_OK) return std::nullopt;
    return out;
  }
  const auto* a = static_cast<const READDIRPLUS3args*>(args);
  // The whole page to a request as large as the one it was fetched with
  // (the upstream sized it); else what fits this request.
  const bool within_fill =
      skip == 0 && a->dircount >= filled.dircount && a->maxcount >= filled.maxcount;
  if (!within_fill && !cut.FitPlus(a->dircount, a->maxcount)) return std::nullopt;
  XdrEncode(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res), &res.get(), &out);
  return out;
}

bool MetadataCache::ListingFresh(std::string_view dir) {
  std::optional<fattr3> dir_attr = attrs_.PeekFresh(dir);
  if (!dir_attr || dir_attr->type != NF3DIR) return false;
  const DirPage* page = dirs_.Peek(DirPageKey{std::string(dir), true, 0, CookieVerf{}, 0},
                                   ChangeId::FromFattr(*dir_attr));
  if (page == nullptr) return false;
  ListingLimits filled;
  std::string_view results;
  if (!DecodeListingPage(page->bytes, &filled, &results)) return false;
  XdrValue<READDIRPLUS3res> res(reinterpret_cast<xdrproc_t>(xdr_READDIRPLUS3res));
  if (!res.Decode(results) || res->status != NFS3_OK) return false;
  for (const entryplus3* e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
    if (!e->name_attributes.attributes_follow) continue;
    if (e->name != nullptr && std::string_view(e->name) == "..") continue;
    if (!e->name_handle.handle_follows) return false;
    if (!attrs_.PeekFresh(Bytes(e->name_handle.post_op_fh3_u.handle))) return false;
  }
  return true;
}

void MetadataCache::LearnListing(const READDIRPLUS3args& a, const READDIRPLUS3res& r,
                                 std::string_view results) {
  if (r.status != NFS3_OK) return;
  const READDIRPLUS3resok& ok = r.READDIRPLUS3res_u.resok;
  if (!ok.dir_attributes.attributes_follow) return;
  const fattr3& d = ok.dir_attributes.post_op_attr_u.attributes;
  if (d.type != NF3DIR) return;
  DirPage page;
  page.bytes = EncodeListingPage(ListingLimits{a.dircount, a.maxcount}, results);
  page.dir_change = ChangeId::FromFattr(d);
  page.verf = ToCookieVerf(ok.cookieverf);
  for (const entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
    if (e->name != nullptr && std::string_view(e->name) == "..") page.parent_fileid = e->fileid;
    page.cookies.push_back(e->cookie);
  }
  page.eof = ok.reply.eof;
  // Its ".." may be a parent it was moved away from since the call left
  // (ForgetMovedAway).
  if (page.parent_fileid && ParentMovedFrom(*page.parent_fileid)) {
    names_overtaken_++;
    return;
  }
  // The entries' attributes are replaced by fresh ones when served, so the
  // page lives as long as the directory is unchanged.
  dirs_.Put(DirPageKey{std::string(Bytes(a.dir)), true, a.cookie,
                       KeyVerf(a.cookie, a.cookieverf), 0},
            std::move(page), kNoMaxAge);
}

}  // namespace nfsedge
