// The proxy's NFS and MOUNT programs behind a loopback RpcServer, with
// in-memory upstreams (FakeUpstream) for NFS and MOUNT: the bed of the
// unit tests that speak to the proxy as a client does.
//
// A fixture derives from ProgramsBed, calls StartPrograms() with its
// exports, sets the upstreams' responders, then loop_.Start(). The
// programs run on loop_'s thread; tests reach them with loop_.RunSync().
#ifndef NFSEDGE_TESTS_UNIT_PROGRAMS_BED_H_
#define NFSEDGE_TESTS_UNIT_PROGRAMS_BED_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "client_calls.h"
#include "test_loop.h"

namespace nfsedge {

class ProgramsBed : public ::testing::Test {
 protected:
  // Builds the programs for `exports` (answering from `cache` if given) and
  // listens on `address`, port 0. The loop is not started.
  void StartPrograms(const std::vector<ExportConfig>& exports, MetadataCache* cache = nullptr,
                     size_t max_handles = 1000, const std::string& address = "127.0.0.1") {
    exports_ = std::make_unique<ExportTable>(exports);
    registry_ = std::make_unique<HandleRegistry>(max_handles);
    up_ = std::make_unique<FakeUpstream>(loop_.base());
    mount_up_ = std::make_unique<FakeUpstream>(loop_.base());
    nfs_ = std::make_unique<NfsService>(*exports_, *registry_, *up_, NfsServiceOptions{}, cache);
    mount_ = std::make_unique<MountService>(*exports_, *registry_, *mount_up_, up_.get());
    dispatcher_ = std::make_unique<Dispatcher>(std::vector<RpcProgram*>{nfs_.get(), mount_.get()});
    server_ = std::make_unique<RpcServer>(loop_.base(), ServerOptions{}, dispatcher_.get());
    port_ = *server_->Listen(*ResolveAddress(address, 0));
  }
  // StartPrograms() with one export, /data of the upstream's /srv/data, for
  // 127.0.0.0/8, whose root the upstream's mountd answers as `root`.
  void StartDataExport(const std::string& root) {
    ExportConfig e;
    e.path = "/data";
    e.upstream_path = "/srv/data";
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    StartPrograms({e});
    mount_up_->set_responder([root](const FakeUpstream::Seen& s) {
      return test_calls::MountdAnswer(s, {{"/srv/data", root}});
    });
  }
  // The programs go on the loop's thread, before a fixture's own members
  // (a MetadataCache the NfsService refers to) are destroyed.
  void TearDown() override {
    loop_.RunSync([this] {
      server_.reset();
      dispatcher_.reset();
      mount_.reset();
      nfs_.reset();
    });
  }

  LoopThread loop_;
  std::unique_ptr<ExportTable> exports_;
  std::unique_ptr<HandleRegistry> registry_;
  std::unique_ptr<FakeUpstream> up_, mount_up_;
  std::unique_ptr<NfsService> nfs_;
  std::unique_ptr<MountService> mount_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<RpcServer> server_;
  uint16_t port_ = 0;
};

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_PROGRAMS_BED_H_
