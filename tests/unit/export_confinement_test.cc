// Confinement of handles to the exports they were handed out for (docs/security.md, "Confinement of file handles"). The proxy's
// programs run behind a real loopback socket, with in-memory upstreams
// (NFS and MOUNT) whose answers are what a Linux server gives.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <atomic>
#include <functional>
#include <utility>
#include <vector>

#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_procs.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "rpc/xdr_codec.h"
#include "client_calls.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "xdr_test_util.h"

namespace nfsedge {
namespace {

using test_xdr::Bytes;
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Proc;
using test_xdr::Xdr;

constexpr char kRoot[] = "ROOT-OF-SRV-DATA";      // /srv/data, the export's root
constexpr char kSub[] = "SUBDIR-OF-DATA-01";      // /srv/data/sub
constexpr char kParent[] = "PARENT-SRV-000001";   // /srv, outside the export
constexpr char kSecret[] = "ROOT-OF-SRV-SECRET";  // /srv/secret, another upstream export
constexpr char kLink[] = "SYMLINK-IN-DATA-01";    // /srv/data/link -> /srv/secret

fattr3 DirAttr(uint64_t fileid) {
  fattr3 a{};
  a.type = NF3DIR;
  a.mode = 0755;
  a.nlink = 2;
  a.uid = a.gid = 0;
  a.size = 4096;
  a.fileid = fileid;
  a.mtime.seconds = a.ctime.seconds = 1700000000;
  return a;
}

class ExportConfinementTest : public ProgramsBed {
 protected:
  void Start(size_t max_handles) {
    ExportConfig e;
    e.path = "/data";
    e.upstream_path = "/srv/data";
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    StartPrograms({e}, nullptr, max_handles);
    mount_up_->set_responder([this](const FakeUpstream::Seen& s) { return MountRespond(s); });
    up_->set_responder([this](const FakeUpstream::Seen& s) { return NfsRespond(s); });
    loop_.Start();
  }

  // The upstream mountd: Linux's resolves symlinks in the path (realpath)
  // and answers the root of the export the resolved path is in.
  std::optional<std::string> MountRespond(const FakeUpstream::Seen& s) {
    return test_calls::MountdAnswer(s, mounts_);
  }

  // The upstream NFS server: LOOKUPs from lookups_, GETATTR of any handle.
  std::optional<std::string> NfsRespond(const FakeUpstream::Seen& s) {
    if (s.proc == NFSPROC3_LOOKUP && during_lookup_) std::exchange(during_lookup_, nullptr)();
    if (s.proc == NFSPROC3_LOOKUP && reload_at_every_lookup_) {
      // A change that keeps the client in: the lifetimes, back and forth.
      ExportConfig e = exports_->Get(0).config();
      e.acregmin = e.acregmin == 3 ? 4 : 3;
      EXPECT_TRUE(exports_->Update({e}).ok());
    }
    if (s.proc == NFSPROC3_LOOKUP) {
      XdrValue<LOOKUP3args> a(Proc(xdr_LOOKUP3args));
      EXPECT_TRUE(a.Decode(s.args));
      auto it = lookups_.find({Bytes(a->what.dir), a->what.name ? a->what.name : ""});
      LOOKUP3res res{};
      if (it == lookups_.end()) {
        res.status = NFS3ERR_NOENT;
        return Xdr(Proc(xdr_LOOKUP3res), res);
      }
      res.status = NFS3_OK;
      res.LOOKUP3res_u.resok.object = Fh(it->second.first);
      if (!without_attributes_.contains(it->second.first)) {
        res.LOOKUP3res_u.resok.obj_attributes = PostOp(it->second.second);
      }
      res.LOOKUP3res_u.resok.dir_attributes = PostOp(DirAttr(1));
      return Xdr(Proc(xdr_LOOKUP3res), res);
    }
    if (s.proc == NFSPROC3_GETATTR) {
      GETATTR3res res{};
      res.status = NFS3_OK;
      res.GETATTR3res_u.resok.obj_attributes = DirAttr(7);
      return Xdr(Proc(xdr_GETATTR3res), res);
    }
    ADD_FAILURE() << "unexpected upstream call " << s.proc;
    return std::nullopt;
  }

  std::string Call(BlockingClient& c, uint32_t xid, uint32_t prog, uint32_t proc,
                   const std::string& args) {
    return test_calls::CallResults(c, xid, prog, proc, args);
  }
  // MNT `path`; returns the status and the handle.
  std::pair<uint32_t, std::string> Mount(BlockingClient& c, uint32_t xid, const std::string& path) {
    return test_calls::MountPath(c, xid, path);
  }
  // LOOKUP `name` in `dir`; returns the status and the handle.
  std::pair<uint32_t, std::string> Lookup(BlockingClient& c, uint32_t xid, const std::string& dir,
                                          const char* name) {
    LOOKUP3args a{};
    a.what.dir = Fh(dir);
    a.what.name = const_cast<char*>(name);
    const std::string r = Call(c, xid, kNfsProgram, NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), a));
    XdrValue<LOOKUP3res> res(Proc(xdr_LOOKUP3res));
    if (!res.Decode(r)) return {0xffffffff, ""};
    if (res->status != NFS3_OK) return {res->status, ""};
    return {NFS3_OK, Bytes(res->LOOKUP3res_u.resok.object)};
  }
  uint32_t Getattr(BlockingClient& c, uint32_t xid, const std::string& fh) {
    GETATTR3args a{};
    a.object = Fh(fh);
    const std::string r =
        Call(c, xid, kNfsProgram, NFSPROC3_GETATTR, Xdr(Proc(xdr_GETATTR3args), a));
    return r.size() >= 4 ? LoadBE32(r.data()) : 0xffffffff;
  }
  // Whether the NFS upstream saw a call whose arguments carry `fh`.
  bool UpstreamSawHandle(const std::string& fh) {
    bool seen = false;
    loop_.RunSync([&] {
      for (const FakeUpstream::Seen& s : up_->calls) {
        if (s.args.find(fh) != std::string::npos) seen = true;
      }
    });
    return seen;
  }
  // Whether the NFS upstream was asked LOOKUP ".." in `dir`.
  bool UpstreamLookedUpDotDotIn(const std::string& dir) {
    bool seen = false;
    loop_.RunSync([&] {
      for (const FakeUpstream::Seen& s : up_->calls) {
        if (s.proc != NFSPROC3_LOOKUP) continue;
        XdrValue<LOOKUP3args> a(Proc(xdr_LOOKUP3args));
        if (a.Decode(s.args) && Bytes(a->what.dir) == dir && a->what.name &&
            std::string(a->what.name) == "..") {
          seen = true;
        }
      }
    });
    return seen;
  }

  std::map<std::string, std::string> mounts_;  // upstream path -> root handle
  std::map<std::pair<std::string, std::string>, std::pair<std::string, fattr3>> lookups_;
  std::set<std::string> without_attributes_;  // LOOKUPs of these answer no attributes
  std::function<void()> during_lookup_;  // run (once) as the next LOOKUP reaches the upstream
  std::atomic<bool> reload_at_every_lookup_{false};
};

// docs/security.md: "The way out of an export, "..", is closed: a LOOKUP of
// ".." on an export's root does not count for that export". The root is
// known as such by a bit in the registry entry MNT made: the registry never
// forgets that entry (least recently used, server.max_handles), or a
// LOOKUP ".." from a directory below the root would register the root again
// as an ordinary handle of the export, and ".." of the root lead out.
TEST_F(ExportConfinementTest, DotDotOfTheRootStaysClosedAfterTheRegistryForgetsTheRoot) {
  Start(/*max_handles=*/3);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  lookups_[{kSub, "a"}] = {"FILE-A-IN-SUB-0001", DirAttr(3)};
  lookups_[{kSub, "b"}] = {"FILE-B-IN-SUB-0001", DirAttr(4)};
  lookups_[{kSub, ".."}] = {kRoot, DirAttr(1)};
  lookups_[{kRoot, ".."}] = {kParent, DirAttr(9)};

  BlockingClient c(port_);
  auto [mst, root] = Mount(c, 1, "/data");
  ASSERT_EQ(mst, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(root, kRoot);
  // With the export freshly mounted, ".." of its root is refused.
  EXPECT_EQ(Lookup(c, 2, kRoot, "..").first, static_cast<uint32_t>(NFS3ERR_ACCES));

  ASSERT_EQ(Lookup(c, 3, kRoot, "sub").second, kSub);
  // The client keeps using the subdirectory; the root is used least.
  ASSERT_EQ(Lookup(c, 4, kSub, "a").first, static_cast<uint32_t>(NFS3_OK));
  ASSERT_EQ(Lookup(c, 5, kSub, "b").first, static_cast<uint32_t>(NFS3_OK));
  // ".." of a directory below the root is inside the export: the root.
  ASSERT_EQ(Lookup(c, 6, kSub, "..").second, kRoot);

  // ".." of the export's root still leaves the export.
  auto [st, fh] = Lookup(c, 7, kRoot, "..");
  EXPECT_EQ(st, static_cast<uint32_t>(NFS3ERR_ACCES))
      << "LOOKUP \"..\" of the export's root answered with handle " << fh;
  EXPECT_FALSE(UpstreamLookedUpDotDotIn(kRoot)) << "the LOOKUP \"..\" of the root went upstream";
  if (!fh.empty()) {
    EXPECT_NE(Getattr(c, 8, fh), static_cast<uint32_t>(NFS3_OK))
        << "the parent of the export's root is usable through the export";
  }
}

// A name is one component: "../x" or "sub/../.." would be a path to an
// upstream that resolves it as one, past the ".." checks. Such a name does
// not decode (GARBAGE_ARGS), as on Linux's server, and never goes upstream.
TEST_F(ExportConfinementTest, ANameWithASlashIsRefusedBeforeTheUpstream) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  lookups_[{kRoot, "../secret"}] = {kParent, DirAttr(9)};
  lookups_[{kRoot, "sub/../.."}] = {kParent, DirAttr(9)};

  BlockingClient c(port_);
  ASSERT_EQ(Mount(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(Lookup(c, 2, kRoot, "sub").first, static_cast<uint32_t>(NFS3_OK));
  uint32_t xid = 3;
  const std::string root = kRoot;  // outlives the handle viewing it
  for (const char* name : {"../secret", "sub/../..", "/"}) {
    LOOKUP3args a{};
    a.what.dir = Fh(root);
    a.what.name = const_cast<char*>(name);
    c.SendRecord(MakeCall(xid, kNfsProgram, 3, NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), a),
                          SysCred(1000, 100)));
    std::optional<std::string> reply = c.ReadRecord();
    ASSERT_TRUE(reply.has_value()) << name;
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    ASSERT_TRUE(h.ok()) << name;
    EXPECT_EQ(h->xid, xid++);
    EXPECT_EQ(h->accept_stat, kGarbageArgs) << name;
  }
  loop_.RunSync([&] {
    for (const FakeUpstream::Seen& s : up_->calls) {
      XdrValue<LOOKUP3args> a(Proc(xdr_LOOKUP3args));
      if (s.proc != NFSPROC3_LOOKUP || !a.Decode(s.args)) continue;
      EXPECT_EQ(std::strchr(a->what.name, '/'), nullptr) << a->what.name << " went upstream";
    }
  });
}

// MNT of a path below an export (`/data/link`) is not sent upstream as
// `/srv/data/link`: Linux's mountd resolves symlinks in the path (realpath)
// and answers the root of the export the resolved path lies in, so a
// symlink in /srv/data to /srv/secret (another upstream export the proxy's
// host may mount, not served to this client) would make the client a
// holder of /srv/secret's root. The proxy walks the path from the export's
// root with LOOKUPs and refuses a component that is not a directory.
TEST_F(ExportConfinementTest, MountOfASubpathCannotHandOutAHandleOutsideTheExport) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  mounts_["/srv/data/link"] = kSecret;  // mountd's realpath: /srv/secret
  fattr3 link{};
  link.type = NF3LNK;
  link.mode = 0777;
  link.nlink = 1;
  link.size = 11;
  link.fileid = 5;
  lookups_[{kRoot, "link"}] = {kLink, link};

  BlockingClient c(port_);
  ASSERT_EQ(Mount(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  auto [st, fh] = Mount(c, 2, "/data/link");
  EXPECT_NE(fh, kSecret) << "MNT /data/link handed out the root of /srv/secret";
  // Whatever MNT answered, the other export's root is not usable.
  EXPECT_NE(Getattr(c, 3, kSecret), static_cast<uint32_t>(NFS3_OK))
      << "the root of /srv/secret is usable through /data";
  EXPECT_FALSE(UpstreamSawHandle(kSecret)) << "a call with /srv/secret's root went upstream";
  (void)st;
}

// A client that mounted a directory below an export (`/data/sub`) cannot
// look its mount point up again: however many handles other clients make
// the registry forget (server.max_handles), the mount point stays usable.
TEST_F(ExportConfinementTest, AMountPointBelowTheExportOutlivesTheRegistrysLimit) {
  Start(/*max_handles=*/3);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  for (int i = 0; i < 5; ++i) {
    lookups_[{kRoot, "f" + std::to_string(i)}] = {"FILE-IN-DATA-000" + std::to_string(i),
                                                  DirAttr(10 + i)};
  }
  BlockingClient c(port_);
  auto [mst, sub] = Mount(c, 1, "/data/sub");
  ASSERT_EQ(mst, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(sub, kSub);
  for (int i = 0; i < 5; ++i) {
    const std::string name = "f" + std::to_string(i);
    ASSERT_EQ(Lookup(c, 2 + i, kRoot, name.c_str()).first, static_cast<uint32_t>(NFS3_OK));
  }
  EXPECT_EQ(Getattr(c, 10, kSub), static_cast<uint32_t>(NFS3_OK))
      << "the mount point was forgotten: its client's mount is stale for good";
}

// Post-op attributes are optional (RFC 1813): a LOOKUP of the walk answered
// without them is followed by a GETATTR, not taken for a non-directory.
TEST_F(ExportConfinementTest, MountBelowTheExportAsksTheTypeALookupDidNotTell) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  without_attributes_.insert(kSub);
  BlockingClient c(port_);
  auto [st, fh] = Mount(c, 1, "/data/sub");
  EXPECT_EQ(st, static_cast<uint32_t>(MNT3_OK));
  EXPECT_EQ(fh, kSub);
}

// A directory handed out for the export and then moved out of its tree (at
// the head office, or through an enclosing export) keeps its handle: its
// ".." is then outside the export, and each ".." after it would lead on to
// the whole upstream file system. Such a parent is not the export's.
TEST_F(ExportConfinementTest, DotDotOfADirectoryMovedOutOfTheExportIsRefused) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  lookups_[{kSub, ".."}] = {kParent, DirAttr(9)};  // /srv/data/sub is now /srv/sub
  BlockingClient c(port_);
  ASSERT_EQ(Mount(c, 1, "/data").first, static_cast<uint32_t>(MNT3_OK));
  ASSERT_EQ(Lookup(c, 2, kRoot, "sub").second, kSub);
  auto [st, fh] = Lookup(c, 3, kSub, "..");
  EXPECT_EQ(st, static_cast<uint32_t>(NFS3ERR_ACCES))
      << "LOOKUP \"..\" of the moved directory answered with handle " << fh;
  EXPECT_NE(Getattr(c, 4, kParent), static_cast<uint32_t>(NFS3_OK))
      << "the directory outside the export is usable through it";
  EXPECT_EQ(Getattr(c, 5, kSub), static_cast<uint32_t>(NFS3_OK));
}

// A client that mounted a directory below the export may look up its
// mount point's "..": the MNT walk went through it, inside the export.
TEST_F(ExportConfinementTest, DotDotOfAMountPointBelowTheExportIsTheExports) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  lookups_[{kSub, "deep"}] = {"DEEP-DIR-IN-SUB-01", DirAttr(3)};
  lookups_[{"DEEP-DIR-IN-SUB-01", ".."}] = {kSub, DirAttr(2)};
  BlockingClient c(port_);
  auto [mst, deep] = Mount(c, 1, "/data/sub/deep");
  ASSERT_EQ(mst, static_cast<uint32_t>(MNT3_OK));
  auto [st, fh] = Lookup(c, 2, deep, "..");
  EXPECT_EQ(st, static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(fh, kSub);
  EXPECT_EQ(Getattr(c, 3, kSub), static_cast<uint32_t>(NFS3_OK));
}

// A reload while a MNT is on its way (here during the walk below the
// export) that takes the client's network out of the export: the mount is
// refused under the rules in force when it is answered.
TEST_F(ExportConfinementTest, AMountAnsweredAfterAReloadMeetsTheNewRules) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  during_lookup_ = [this] {
    ExportConfig e = exports_->Get(0).config();
    e.clients = {*Network::Parse("10.9.0.0/16")};
    ASSERT_TRUE(exports_->Update({e}).ok());
  };
  BlockingClient c(port_);
  auto [st, fh] = Mount(c, 1, "/data/sub");
  EXPECT_EQ(st, static_cast<uint32_t>(MNT3ERR_ACCES)) << "mounted, handle " << fh;
}

// Reloads that keep coming while a MNT is on its way: it starts over a
// bounded number of times, then is refused (the client mounts again), not
// walked for ever.
TEST_F(ExportConfinementTest, AMountStartedOverByReloadsAgainAndAgainIsRefused) {
  Start(/*max_handles=*/1000);
  mounts_["/srv/data"] = kRoot;
  lookups_[{kRoot, "sub"}] = {kSub, DirAttr(2)};
  reload_at_every_lookup_ = true;
  BlockingClient c(port_);
  EXPECT_EQ(Mount(c, 1, "/data/sub").first, static_cast<uint32_t>(MNT3ERR_SERVERFAULT));
  reload_at_every_lookup_ = false;
  EXPECT_EQ(Mount(c, 2, "/data/sub").first, static_cast<uint32_t>(MNT3_OK));
}

}  // namespace
}  // namespace nfsedge
