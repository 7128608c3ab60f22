// RawNfs: conveniences made of several calls. No libnfs types here.

#include <algorithm>

#include "harness/raw_nfs.h"

namespace nfsedge::harness {

ReaddirResult RawNfs::ReaddirAll(const std::string& dir, bool plus, uint32_t count, int max_pages) {
  ReaddirResult all;
  uint64_t cookie = 0;
  std::string verf;
  for (int page = 0; page < max_pages; ++page) {
    ReaddirResult r =
        plus ? Readdirplus(dir, cookie, verf, count, count * 4) : Readdir(dir, cookie, verf, count);
    all.pages++;
    all.rpc_ok = r.rpc_ok;
    all.rpc_error = r.rpc_error;
    all.status = r.status;
    if (!r.ok()) return all;
    all.dir_attr = r.dir_attr;
    all.cookieverf = r.cookieverf;
    all.entries.insert(all.entries.end(), r.entries.begin(), r.entries.end());
    if (r.eof) {
      all.eof = true;
      return all;
    }
    if (r.entries.empty()) {
      all.rpc_ok = false;
      all.rpc_error =
          "READDIR page without entries and without eof (cookie " + std::to_string(cookie) + ")";
      return all;
    }
    cookie = r.entries.back().cookie;
    verf = r.cookieverf;
  }
  all.rpc_ok = false;
  all.rpc_error = "READDIR did not reach eof in " + std::to_string(max_pages) + " pages";
  return all;
}

LookupResult RawNfs::LookupPath(const std::string& root, const std::string& path) {
  LookupResult r;
  r.rpc_ok = true;
  r.status = kNfs3Ok;
  r.fh = root;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string name = path.substr(pos, slash - pos);
    pos = slash + 1;
    if (name.empty()) continue;
    r = Lookup(r.fh, name);
    if (!r.ok()) return r;
  }
  return r;
}

WriteResult RawNfs::WriteAll(const std::string& fh, uint64_t offset, const std::string& data,
                             Stable stable, uint32_t chunk) {
  WriteResult total;
  total.rpc_ok = true;
  total.status = kNfs3Ok;
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(chunk, data.size() - pos);
    WriteResult r = Write(fh, offset + pos, data.substr(pos, n), stable);
    if (!r.ok()) return r;
    if (r.count == 0 && n > 0) {
      r.rpc_ok = false;
      r.rpc_error = "WRITE made no progress";
      return r;
    }
    pos += r.count;
    total.count += r.count;
    total.committed = r.committed;
    total.verf = r.verf;
    total.wcc = r.wcc;
  } while (pos < data.size());
  return total;
}

ReadResult RawNfs::ReadAll(const std::string& fh, uint64_t offset, uint64_t length,
                           uint32_t chunk) {
  ReadResult total;
  total.rpc_ok = true;
  total.status = kNfs3Ok;
  while (total.data.size() < length) {
    uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(chunk, length - total.data.size()));
    ReadResult r = Read(fh, offset + total.data.size(), n);
    if (!r.ok()) return r;
    total.data += r.data;
    total.count += r.count;
    total.attr = r.attr;
    total.eof = r.eof;
    if (r.eof || r.data.empty()) break;
  }
  return total;
}

}  // namespace nfsedge::harness
