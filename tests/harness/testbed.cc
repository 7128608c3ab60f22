#include "harness/testbed.h"

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <optional>

#include "harness/private_network.h"
#include "harness/subprocess.h"

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
    const char* chain_env = std::getenv("NFSEDGE_TESTBED_TLS_CHAIN");
    if (o.tls_chain || (chain_env != nullptr && std::string(chain_env) == "1")) {
      Status s = t->StartTlsInner(&p);
      if (!s.ok()) return s;
    }
    t->proxy_options_ = p;
    auto proxy = ProxyProcess::Start(p);
    if (!proxy.ok()) return proxy.status();
    t->proxy_ = std::move(proxy).value();
  }
  return t;
}

Status Testbed::StartTlsInner(ProxyProcess::Options* edge) {
  const std::string certs = dir_->Sub("certs");
  auto maker = Subprocess::Start(
      {"/bin/sh", std::string(NFSEDGE_SOURCE_DIR) + "/tests/tools/make_test_certs.sh", certs},
      dir_->Sub("make_test_certs.log"));
  if (!maker.ok()) return maker.status();
  std::optional<ExitStatus> made = (*maker)->WaitForExit(Millis(30000));
  if (!made || !made->success()) {
    return Status::Error("make_test_certs.sh failed: " + (*maker)->LogTail());
  }
  ProxyProcess::Options inner = *edge;
  inner.work_dir = dir_->Sub("nfsedge-inner");
  inner.nfs_port = static_cast<uint16_t>(edge->nfs_port + 1);
  inner.mount_port = static_cast<uint16_t>(edge->mount_port + 1);
  inner.control_socket = "none";
  inner.extra_server_toml += "tls_cert_file = \"" + certs + "/server.pem\"\n" +
                             "tls_key_file = \"" + certs + "/server.key\"\n";
  for (ProxyExport& e : inner.exports) {
    // The head office serves the paths the edge mounts, only over TLS, and
    // trusts the edge's credentials as they come (the edge squashes).
    e.upstream_path = e.upstream_path.empty() ? e.path : e.upstream_path;
    e.path = e.upstream_path;
    e.root_squash = false;
    e.extra_toml = "tls = \"required\"\n";
  }
  auto started = ProxyProcess::Start(inner);
  if (!started.ok()) return started.status();
  inner_ = std::move(started).value();
  edge->upstream_host = "127.0.0.1";
  edge->upstream_nfs_port = inner_->nfs_port();
  edge->upstream_mount_port = inner_->mount_port();
  edge->extra_upstream_toml += "tls = true\ntls_ca_file = \"" + certs +
                               "/ca.pem\"\ntls_server_name = \"nfsedge-upstream\"\n";
  return Status::OK();
}

Status Testbed::RestartProxy() {
  proxy_exit_ = proxy_->Stop();
  if (!proxy_exit_.success()) return Status::Error("nfsedge did not stop cleanly");
  auto proxy = ProxyProcess::Start(proxy_options_);
  if (!proxy.ok()) return proxy.status();
  proxy_ = std::move(proxy).value();
  return Status::OK();
}

Status Testbed::KillAndRestartGanesha(Millis down) {
  const Ganesha::Options options = ganesha_->options();
  ganesha_->Kill();
  const std::string log = ganesha_->log_path();
  ganesha_.reset();
  (void)std::rename(log.c_str(), (log + ".killed").c_str());
  std::this_thread::sleep_for(down);
  auto ganesha = Ganesha::Start(options);
  if (!ganesha.ok()) return ganesha.status();
  ganesha_ = std::move(ganesha).value();
  return Status::OK();
}

std::string Testbed::LogTails(size_t max_lines) const {
  std::string out;
  if (proxy_)
    out += "--- nfsedge log (" + proxy_->log_path() + ") ---\n" + proxy_->LogTail(max_lines);
  if (inner_) {
    out += "--- head-office nfsedge log (" + inner_->log_path() + ") ---\n" +
           inner_->LogTail(max_lines / 2);
  }
  if (ganesha_) out += ganesha_->LogTail(max_lines / 3);
  return out;
}

ExitStatus Testbed::Stop() {
  // Subprocess::Stop() is idempotent; the objects stay for LogTails().
  if (proxy_) proxy_exit_ = proxy_->Stop();
  if (inner_) inner_->Stop();
  if (ganesha_) ganesha_->Stop();
  if (rpcbind_) rpcbind_->Stop();
  return proxy_exit_;
}

}  // namespace nfsedge::harness
