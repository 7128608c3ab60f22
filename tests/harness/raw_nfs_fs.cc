// RawNfs: READDIR, READDIRPLUS, FSSTAT, FSINFO, PATHCONF, COMMIT.

#include <algorithm>
#include <cstring>

#include "harness/raw_nfs_impl.h"

namespace nfsedge::harness {
namespace {

void SetCookieverf(char* dst, const std::string& src) {
  std::memset(dst, 0, NFS3_COOKIEVERFSIZE);
  std::memcpy(dst, src.data(), std::min<size_t>(NFS3_COOKIEVERFSIZE, src.size()));
}

}  // namespace

ReaddirResult RawNfs::Readdir(const std::string& dir, uint64_t cookie,
                              const std::string& cookieverf, uint32_t count) {
  ReaddirResult r;
  READDIR3args args{};
  args.dir = ToFh(dir);
  args.cookie = cookie;
  SetCookieverf(args.cookieverf, cookieverf);
  args.count = count;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_readdir_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<READDIR3res*>(d);
        r.status = res->status;
        r.pages = 1;
        if (res->status != NFS3_OK) {
          r.dir_attr = ToFattr(res->READDIR3res_u.resfail.dir_attributes);
          return;
        }
        const READDIR3resok& ok = res->READDIR3res_u.resok;
        r.dir_attr = ToFattr(ok.dir_attributes);
        r.cookieverf.assign(ok.cookieverf, NFS3_COOKIEVERFSIZE);
        r.eof = ok.reply.eof;
        for (const entry3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
          r.entries.push_back(DirEntry{e->fileid, e->name ? e->name : "", e->cookie, {}, {}});
        }
      },
      timeout_);
  return r;
}

ReaddirResult RawNfs::Readdirplus(const std::string& dir, uint64_t cookie,
                                  const std::string& cookieverf, uint32_t dircount,
                                  uint32_t maxcount) {
  ReaddirResult r;
  READDIRPLUS3args args{};
  args.dir = ToFh(dir);
  args.cookie = cookie;
  SetCookieverf(args.cookieverf, cookieverf);
  args.dircount = dircount;
  args.maxcount = maxcount;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_readdirplus_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<READDIRPLUS3res*>(d);
        r.status = res->status;
        r.pages = 1;
        if (res->status != NFS3_OK) {
          r.dir_attr = ToFattr(res->READDIRPLUS3res_u.resfail.dir_attributes);
          return;
        }
        const READDIRPLUS3resok& ok = res->READDIRPLUS3res_u.resok;
        r.dir_attr = ToFattr(ok.dir_attributes);
        r.cookieverf.assign(ok.cookieverf, NFS3_COOKIEVERFSIZE);
        r.eof = ok.reply.eof;
        for (const entryplus3* e = ok.reply.entries; e != nullptr; e = e->nextentry) {
          r.entries.push_back(DirEntry{e->fileid, e->name ? e->name : "", e->cookie,
                                       ToFattr(e->name_attributes), ToHandle(e->name_handle)});
        }
      },
      timeout_);
  return r;
}

FsstatResult RawNfs::Fsstat(const std::string& fh) {
  FsstatResult r;
  FSSTAT3args args{};
  args.fsroot = ToFh(fh);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_fsstat_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<FSSTAT3res*>(d);
        r.status = res->status;
        if (res->status != NFS3_OK) return;
        const FSSTAT3resok& ok = res->FSSTAT3res_u.resok;
        r.tbytes = ok.tbytes;
        r.fbytes = ok.fbytes;
        r.abytes = ok.abytes;
        r.tfiles = ok.tfiles;
        r.ffiles = ok.ffiles;
        r.afiles = ok.afiles;
        r.invarsec = ok.invarsec;
      },
      timeout_);
  return r;
}

FsinfoResult RawNfs::Fsinfo(const std::string& fh) {
  FsinfoResult r;
  FSINFO3args args{};
  args.fsroot = ToFh(fh);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_fsinfo_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<FSINFO3res*>(d);
        r.status = res->status;
        if (res->status != NFS3_OK) return;
        const FSINFO3resok& ok = res->FSINFO3res_u.resok;
        r.rtmax = ok.rtmax;
        r.rtpref = ok.rtpref;
        r.rtmult = ok.rtmult;
        r.wtmax = ok.wtmax;
        r.wtpref = ok.wtpref;
        r.wtmult = ok.wtmult;
        r.dtpref = ok.dtpref;
        r.maxfilesize = ok.maxfilesize;
        r.time_delta = {ok.time_delta.seconds, ok.time_delta.nseconds};
        r.properties = ok.properties;
      },
      timeout_);
  return r;
}

PathconfResult RawNfs::Pathconf(const std::string& fh) {
  PathconfResult r;
  PATHCONF3args args{};
  args.object = ToFh(fh);
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_pathconf_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<PATHCONF3res*>(d);
        r.status = res->status;
        if (res->status != NFS3_OK) return;
        const PATHCONF3resok& ok = res->PATHCONF3res_u.resok;
        r.linkmax = ok.linkmax;
        r.name_max = ok.name_max;
        r.no_trunc = ok.no_trunc;
        r.chown_restricted = ok.chown_restricted;
        r.case_insensitive = ok.case_insensitive;
        r.case_preserving = ok.case_preserving;
      },
      timeout_);
  return r;
}

CommitResult RawNfs::Commit(const std::string& fh, uint64_t offset, uint32_t count) {
  CommitResult r;
  COMMIT3args args{};
  args.file = ToFh(fh);
  args.offset = offset;
  args.count = count;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_nfs3_commit_async(rpc, cb, &args, p);
      },
      [&](void* d) {
        auto* res = static_cast<COMMIT3res*>(d);
        r.status = res->status;
        if (res->status == NFS3_OK) {
          r.verf.assign(res->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
          r.wcc = ToWcc(res->COMMIT3res_u.resok.file_wcc);
        } else {
          r.wcc = ToWcc(res->COMMIT3res_u.resfail.file_wcc);
        }
      },
      timeout_);
  return r;
}

}  // namespace nfsedge::harness
