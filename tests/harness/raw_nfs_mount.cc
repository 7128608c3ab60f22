// RawNfs: the six MOUNTv3 procedures.

#include "harness/raw_nfs_impl.h"

namespace nfsedge::harness {

RpcResult RawNfs::MountNull() {
  RpcResult r;
  impl_->Call(
      &r, [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_mount3_null_async(rpc, cb, p); },
      [](void*) {}, timeout_);
  return r;
}

MntResult RawNfs::Mnt(const std::string& path) {
  MntResult r;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_mount3_mnt_async(rpc, cb, Str(path), p);
      },
      [&](void* d) {
        auto* res = static_cast<mountres3*>(d);
        r.status = res->fhs_status;
        if (res->fhs_status != MNT3_OK) return;
        const mountres3_ok& ok = res->mountres3_u.mountinfo;
        r.fh.assign(ok.fhandle.fhandle3_val ? ok.fhandle.fhandle3_val : "",
                    ok.fhandle.fhandle3_len);
        for (u_int i = 0; i < ok.auth_flavors.auth_flavors_len; ++i) {
          r.auth_flavors.push_back(ok.auth_flavors.auth_flavors_val[i]);
        }
      },
      timeout_);
  return r;
}

DumpResult RawNfs::Dump() {
  DumpResult r;
  impl_->Call(
      &r, [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_mount3_dump_async(rpc, cb, p); },
      [&](void* d) {
        // libnfs hands over a pointer to the decoded `mountlist` (itself a
        // pointer to the first mountbody).
        mountlist list = d ? *static_cast<mountlist*>(d) : nullptr;
        for (; list != nullptr; list = list->ml_next) {
          r.mounts.push_back({list->ml_hostname ? list->ml_hostname : "",
                              list->ml_directory ? list->ml_directory : ""});
        }
      },
      timeout_);
  return r;
}

RpcResult RawNfs::Umnt(const std::string& path) {
  RpcResult r;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) {
        return rpc_mount3_umnt_async(rpc, cb, Str(path), p);
      },
      [](void*) {}, timeout_);
  return r;
}

RpcResult RawNfs::Umntall() {
  RpcResult r;
  impl_->Call(
      &r,
      [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_mount3_umntall_async(rpc, cb, p); },
      [](void*) {}, timeout_);
  return r;
}

ExportResult RawNfs::Export() {
  ExportResult r;
  impl_->Call(
      &r, [&](rpc_context* rpc, rpc_cb cb, void* p) { return rpc_mount3_export_async(rpc, cb, p); },
      [&](void* d) {
        exports list = d ? *static_cast<exports*>(d) : nullptr;
        for (; list != nullptr; list = list->ex_next) {
          ExportEntry e;
          e.dir = list->ex_dir ? list->ex_dir : "";
          for (groups g = list->ex_groups; g != nullptr; g = g->gr_next) {
            e.groups.push_back(g->gr_name ? g->gr_name : "");
          }
          r.exports.push_back(std::move(e));
        }
      },
      timeout_);
  return r;
}

}  // namespace nfsedge::harness
