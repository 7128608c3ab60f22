#include "harness/testbed.h"

#include "harness/private_network.h"

namespace nfsedge::harness {

StatusOr<std::unique_ptr<Testbed>> Testbed::Start(Options o) {
  if (!PrivateNetwork::entered()) {
    return Status::Error("Testbed: call PrivateNetwork::Enter() first");
  }
  std::unique_ptr<Testbed> t(new Testbed());
  t->dir_ = std::make_unique<TempDir>(o.name);
  if (!t->dir_->ok()) return Status::Error("cannot create a temporary directory");

  Rpcbind::Options rpcbind_options;
  rpcbind_options.log_path = t->dir_->Sub("rpcbind.log");
  auto rpcbind = Rpcbind::Start(rpcbind_options);
  if (!rpcbind.ok()) return rpcbind.status();
  t->rpcbind_ = std::move(rpcbind).value();

  o.ganesha.work_dir = t->dir_->Sub("ganesha");
  if (o.ganesha.exports.empty()) {
    o.ganesha.exports.emplace_back();
    o.ganesha.exports.back().path = "export";
  }
  auto absolute = [&](std::string* path) {
    if (!path->empty() && (*path)[0] != '/') *path = t->dir_->Sub(*path);
  };
  for (Ganesha::Export& e : o.ganesha.exports) absolute(&e.path);
  for (ProxyExport& e : o.proxy.exports) absolute(&e.upstream_path);
  auto ganesha = Ganesha::Start(o.ganesha);
  if (!ganesha.ok()) return ganesha.status();
  t->ganesha_ = std::move(ganesha).value();

  if (o.start_proxy) {
    ProxyProcess::Options& p = o.proxy;
    p.work_dir = t->dir_->Sub("nfsedge");
    p.upstream_host = o.ganesha.bind_address;
    p.upstream_nfs_port = o.ganesha.nfs_port;
    p.upstream_mount_port = o.ganesha.mount_port;
    if (p.exports.empty()) {
      for (const Ganesha::Export& e : o.ganesha.exports) {
        ProxyExport pe;
        pe.path = e.path;
        pe.upstream_path = e.path;
        p.exports.push_back(pe);
      }
    }
    t->proxy_options_ = p;
    auto proxy = ProxyProcess::Start(p);
    if (!proxy.ok()) return proxy.status();
    t->proxy_ = std::move(proxy).value();
  }
  return t;
}

Status Testbed::RestartProxy() {
  proxy_exit_ = proxy_->Stop();
  if (!proxy_exit_.success()) return Status::Error("nfsedge did not stop cleanly");
  auto proxy = ProxyProcess::Start(proxy_options_);
  if (!proxy.ok()) return proxy.status();
  proxy_ = std::move(proxy).value();
  return Status::OK();
}

std::string Testbed::LogTails(size_t max_lines) const {
  std::string out;
  if (proxy_)
    out += "--- nfsedge log (" + proxy_->log_path() + ") ---\n" + proxy_->LogTail(max_lines);
  if (ganesha_) out += ganesha_->LogTail(max_lines / 3);
  return out;
}

ExitStatus Testbed::Stop() {
  // Subprocess::Stop() is idempotent; the objects stay for LogTails().
  if (proxy_) proxy_exit_ = proxy_->Stop();
  if (ganesha_) ganesha_->Stop();
  if (rpcbind_) rpcbind_->Stop();
  return proxy_exit_;
}

}  // namespace nfsedge::harness
