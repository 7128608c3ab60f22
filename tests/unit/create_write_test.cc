// A new file's first writes through the proxy's programs (real loopback
// socket, in-memory upstream, metadata cache and write path): the creator
// the CREATE's reply shows as the owner, with the owner's write bit, has its
// UNSTABLE writes buffered at once, while the speculative ACCESS the CREATE
// started is still on its way; any other creator's writes wait for that
// ACCESS, and go upstream as stable writes when it does not grant MODIFY.
// A CREATE that returned a file that existed is no such evidence. An
// UNCHECKED CREATE that truncates a file with buffered writes waits for
// them to reach the upstream. A call held for them meets the export's rules
// as they are when it goes on.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>
#include <thread>

#include "cache/clock.h"
#include "cache/handle_registry.h"
#include "proxy/dispatcher.h"
#include "proxy/exports.h"
#include "proxy/metadata_cache.h"
#include "proxy/mount_service.h"
#include "proxy/nfs_service.h"
#include "rpc/rpc_server.h"
#include "client_calls.h"
#include "programs_bed.h"
#include "test_loop.h"
#include "write_path_fixture.h"
#include "nfs_xdr_builders.h"

namespace nfsedge {
namespace {

using namespace write_path_test;  // NOLINT: test file, the fixture's helpers.
using test_xdr::Fh;
using test_xdr::PostOp;
using test_xdr::Xdr;

constexpr char kRootFh[] = "ROOT-HANDLE-0001";
constexpr char kFileFh[] = "FILE-HANDLE-0001";

std::string MntOk() {
  std::string out;
  XdrWriter w(&out);
  w.WriteU32(MNT3_OK);
  w.WriteOpaque(kRootFh);
  w.WriteU32(1);
  w.WriteU32(kAuthSys);
  return out;
}

class CreateWriteTest : public ProgramsBed {
 protected:
  void SetUp() override {
    ExportConfig e = MakeExport(0);
    e.path = "/data";
    e.upstream_path = "/srv/data";
    e.clients.push_back(*Network::Parse("127.0.0.0/8"));
    export_ = e;
    cache_ = std::make_unique<MetadataCache>(clock_, CacheConfig{});
    StartPrograms({e}, cache_.get());
    WritePathOptions wo;
    wo.flush_delay = std::chrono::hours(1);  // buffered writes stay in the buffer
    if (max_bytes_ > 0) wo.max_bytes = max_bytes_;
    writes_ = std::make_unique<WritePath>(
        clock_, *up_, *up_, [](Duration, std::function<void()>) {},
        [this](const NfsProc& p, const void* args, RpcReply* reply, const Export& exp,
               const OpaqueAuth& cred) { nfs_->LearnReply(p, args, reply, exp, cred); },
        wo);
    writes_->LearnFsinfo(FsinfoResults());  // as a client's mount tells it
    nfs_->SetWritePath(writes_.get());
    mount_up_->set_responder([](const FakeUpstream::Seen&) { return MntOk(); });
    up_->set_responder([this](const FakeUpstream::Seen& s) { return Respond(s); });
    loop_.Start();
  }
  void TearDown() override {
    loop_.RunSync([this] {
      server_.reset();
      nfs_->SetWritePath(nullptr);
      writes_.reset();
    });
    ProgramsBed::TearDown();
  }

  std::string Call(BlockingClient& c, uint32_t xid, uint32_t prog, uint32_t proc,
                   const std::string& args) {
    return test_calls::CallResults(c, xid, prog, proc, args);
  }

  // The upstream: CREATE makes kFileFh with created_'s attributes, ACCESS
  // is held (the test answers it), a WRITE is made stable at once (and
  // moves the ctime).
  std::optional<std::string> Respond(const FakeUpstream::Seen& s) {
    if (s.proc == NFSPROC3_CREATE) {
      CREATE3res res{};
      res.status = NFS3_OK;
      res.CREATE3res_u.resok.obj.handle_follows = TRUE;
      res.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(file_);
      res.CREATE3res_u.resok.obj_attributes = PostOp(created_);
      // A new entry: the directory changed (unless the name existed).
      wcc_data& dir = res.CREATE3res_u.resok.dir_wcc;
      dir.before.attributes_follow = TRUE;
      dir.before.pre_op_attr_u.attributes.size = 512;
      dir.before.pre_op_attr_u.attributes.mtime.seconds = 1;
      dir.before.pre_op_attr_u.attributes.ctime.seconds = 1;
      fattr3 after = Attr(512, existed_ ? 1 : 2);
      after.type = NF3DIR;
      dir.after = PostOp(after);
      return Xdr(Proc(xdr_CREATE3res), res);
    }
    if (s.proc == NFSPROC3_WRITE) {
      if (hold_writes_) return std::nullopt;  // the test answers (AnswerWrite)
      fattr3 after = created_;
      after.size = 4096;
      after.ctime.seconds += ++upstream_writes_;  // each one a change
      return WriteOk(static_cast<uint32_t>(DecodeWriteArgs(s.args).data.size()), FILE_SYNC, kV1,
                     after);
    }
    if (s.proc == NFSPROC3_SETATTR) {
      SETATTR3res res{};
      res.status = NFS3_OK;
      return Xdr(Proc(xdr_SETATTR3res), res);
    }
    if (s.proc != NFSPROC3_ACCESS) ADD_FAILURE() << "unexpected upstream call " << s.proc;
    return std::nullopt;
  }

  void Mount(BlockingClient& c) {
    std::string path;
    XdrWriter(&path).WriteOpaque("/data");
    ASSERT_EQ(LoadBE32(Call(c, 1, kMountProgram, /*MNT*/ 1, path).data()),
              static_cast<uint32_t>(MNT3_OK));
  }
  // Mounts, then creates kFileFh as a file owned by `owner` with `mode`.
  void MountAndCreate(BlockingClient& c, uint32_t owner, uint32_t mode, uint64_t size = 0) {
    ASSERT_NO_FATAL_FAILURE(Mount(c));
    loop_.RunSync([&] {
      created_ = Attr(size, 1);
      created_.uid = owner;
      created_.gid = 100;
      created_.mode = mode;
    });
    ASSERT_EQ(Create(c, 2, /*truncate=*/false), static_cast<uint32_t>(NFS3_OK));
  }
  // Sends an UNCHECKED CREATE of "new" (setting the size to 0 with
  // `truncate`) and returns its status.
  uint32_t Create(BlockingClient& c, uint32_t xid, bool truncate) {
    CREATE3args a{};
    a.where.dir = Fh(root_);
    a.where.name = const_cast<char*>("new");
    a.how.mode = UNCHECKED;
    a.how.createhow3_u.obj_attributes.size.set_it = truncate;
    const std::string results =
        Call(c, xid, kNfsProgram, NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), a));
    return results.size() >= 4 ? LoadBE32(results.data()) : 0xffffffff;
  }

  // Sends a WRITE of 4096 bytes at 0, UNSTABLE unless told (the reply is
  // read apart).
  void SendWrite(BlockingClient& c, uint32_t xid, stable_how how = UNSTABLE) {
    std::string data(4096, 'w');
    WRITE3args a{};
    a.file = Fh(file_);
    a.count = 4096;
    a.stable = how;
    a.data.data_val = data.data();
    a.data.data_len = 4096;
    c.SendRecord(MakeCall(xid, kNfsProgram, 3, NFSPROC3_WRITE, Xdr(Proc(xdr_WRITE3args), a),
                          SysCred(1000, 100)));
  }
  ClientReply ReadWriteReply(BlockingClient& c) {
    std::optional<std::string> reply = c.ReadRecord();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return {};
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    EXPECT_TRUE(h.ok());
    return DecodeWriteReply(reply->substr(h.ok() ? h->results_offset : 0));
  }
  // Answers the held ACCESS with `granted`.
  void AnswerAccess(uint32_t granted) {
    loop_.RunSync([&] {
      for (size_t i = 0; i < up_->calls.size(); ++i) {
        if (up_->calls[i].proc != NFSPROC3_ACCESS) continue;
        ACCESS3res res{};
        res.status = NFS3_OK;
        res.ACCESS3res_u.resok.obj_attributes = PostOp(created_);
        res.ACCESS3res_u.resok.access = granted;
        up_->Answer(i, Xdr(Proc(xdr_ACCESS3res), res));
        return;
      }
      ADD_FAILURE() << "no ACCESS upstream";
    });
  }
  void ExpectWriteWaitsForAccess(uint32_t owner, uint32_t mode, uint64_t size = 0) {
    BlockingClient c(port_);
    MountAndCreate(c, owner, mode, size);
    SendWrite(c, 3);
    ASSERT_TRUE(WriteWaits()) << "the WRITE waits for the ACCESS";
    AnswerAccess(ACCESS3_READ);
    ClientReply r = ReadWriteReply(c);
    EXPECT_EQ(r.status, NFS3_OK);
    EXPECT_EQ(r.committed, FILE_SYNC) << "sent upstream as a stable write";
    EXPECT_EQ(Count(NFSPROC3_WRITE), 1u);
  }
  // Returns true once a WRITE waits for the speculative ACCESS (within 5 s).
  bool WriteWaits() {
    for (int i = 0; i < 500; ++i) {
      uint64_t waiting = 0;
      loop_.RunSync([&] { waiting = nfs_->stats(NFSPROC3_WRITE).coalesced; });
      if (waiting > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  size_t Count(uint32_t proc) {
    size_t n = 0;
    loop_.RunSync([&] {
      for (const FakeUpstream::Seen& s : up_->calls) n += s.proc == proc;
    });
    return n;
  }

  FakeClock clock_;
  std::unique_ptr<MetadataCache> cache_;
  std::unique_ptr<WritePath> writes_;
  const std::string root_ = kRootFh, file_ = kFileFh;
  fattr3 created_{};  // on the loop thread
  bool existed_ = false;  // the CREATE returns a file that was there
  uint32_t upstream_writes_ = 0;  // upstream WRITEs answered
  bool hold_writes_ = false;      // on the loop thread
  ExportConfig export_;
  uint64_t max_bytes_ = 0;  // the write buffer's room in all, if set before SetUp
};


// The owner with the owner's write bit: the WRITE is answered from the
// buffer while the ACCESS is still on its way.
TEST_F(CreateWriteTest, TheOwningCreatorsFirstWriteIsBufferedWithoutWaitingForAccess) {
  BlockingClient c(port_);
  MountAndCreate(c, 1000, 0644);
  ASSERT_EQ(Count(NFSPROC3_ACCESS), 1u) << "the CREATE's speculative ACCESS";
  SendWrite(c, 3);
  ClientReply r = ReadWriteReply(c);
  EXPECT_EQ(r.status, NFS3_OK);
  EXPECT_EQ(r.count, 4096u);
  EXPECT_EQ(r.committed, UNSTABLE) << "answered from the buffer";
  EXPECT_EQ(Count(NFSPROC3_WRITE), 0u);
  loop_.RunSync([&] { EXPECT_EQ(nfs_->stats(NFSPROC3_WRITE).coalesced, 0u); });
  AnswerAccess(ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
}

// An UNCHECKED CREATE that truncates the file of that name, which has
// buffered writes: they go upstream before it, not after the truncation.
TEST_F(CreateWriteTest, TruncatingCreateOfAFileWithBufferedWritesWaitsForThem) {
  BlockingClient c(port_);
  MountAndCreate(c, 1000, 0644);
  SendWrite(c, 3);
  ASSERT_EQ(ReadWriteReply(c).committed, UNSTABLE);
  ASSERT_EQ(Count(NFSPROC3_WRITE), 0u) << "buffered";
  EXPECT_EQ(Create(c, 4, /*truncate=*/true), static_cast<uint32_t>(NFS3_OK));
  loop_.RunSync([&] {
    std::vector<uint32_t> order;
    for (const FakeUpstream::Seen& s : up_->calls) {
      if (s.proc == NFSPROC3_WRITE || s.proc == NFSPROC3_CREATE) order.push_back(s.proc);
    }
    EXPECT_EQ(order, (std::vector<uint32_t>{NFSPROC3_CREATE, NFSPROC3_WRITE, NFSPROC3_CREATE}))
        << "the buffered write before the truncating CREATE";
  });
  AnswerAccess(ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
}

// Once the evidence that the caller may write a file has lapsed, a
// FILE_SYNC or DATA_SYNC write goes upstream as it is whatever an ACCESS
// would show, so it starts none; an UNSTABLE one starts the ACCESS whose
// answer lets the next ones be buffered.
TEST_F(CreateWriteTest, OnlyAWriteTheEvidenceWouldChangeStartsAnAccess) {
  BlockingClient c(port_);
  MountAndCreate(c, 1000, 0644);
  AnswerAccess(ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND);
  loop_.RunSync([&] { clock_.Advance(std::chrono::hours(1)); });  // every lifetime over
  SendWrite(c, 3, FILE_SYNC);
  EXPECT_EQ(ReadWriteReply(c).committed, FILE_SYNC);
  SendWrite(c, 4, DATA_SYNC);
  EXPECT_EQ(ReadWriteReply(c).committed, FILE_SYNC);
  EXPECT_EQ(Count(NFSPROC3_WRITE), 2u);
  EXPECT_EQ(Count(NFSPROC3_ACCESS), 1u) << "only the CREATE's: none for stable writes";
  SendWrite(c, 5);
  ClientReply r = ReadWriteReply(c);
  EXPECT_EQ(r.status, NFS3_OK);
  EXPECT_EQ(r.committed, FILE_SYNC) << "without evidence, sent upstream as a stable write";
  EXPECT_EQ(Count(NFSPROC3_ACCESS), 2u) << "the UNSTABLE write's speculative ACCESS";
}

// A SETATTR held until the file's buffered writes are upstream meets the
// rules of its export as they are when it goes on: made read-only by a
// reload meanwhile, it refuses it, rather than let its truncation reach the
// upstream. The handle's place in the export stays: the handle registry
// letting it go meanwhile (other handles handed out) does not refuse it.
class HeldSetattrTest : public CreateWriteTest {
 protected:
  // Buffers a write of kFileFh, sends a truncating SETATTR, which waits
  // for it, runs `meanwhile` on the loop once the write is upstream, then
  // lets the write be answered; returns the SETATTR's status.
  uint32_t HeldSetattr(const std::function<void()>& meanwhile) {
    BlockingClient c(port_);
    MountAndCreate(c, 1000, 0644);
    SendWrite(c, 3);
    EXPECT_EQ(ReadWriteReply(c).committed, UNSTABLE) << "buffered";
    loop_.RunSync([&] { hold_writes_ = true; });
    SETATTR3args s{};
    s.object = Fh(file_);
    s.new_attributes.size.set_it = TRUE;
    s.new_attributes.size.set_size3_u.size = 0;
    c.SendRecord(MakeCall(4, kNfsProgram, 3, NFSPROC3_SETATTR, Xdr(Proc(xdr_SETATTR3args), s),
                          SysCred(1000, 100)));
    for (int i = 0; i < 500 && Count(NFSPROC3_WRITE) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(Count(NFSPROC3_WRITE), 1u) << "the buffered write goes first";
    loop_.RunSync([&] {
      meanwhile();
      for (size_t i = 0; i < up_->calls.size(); ++i) {
        if (up_->calls[i].proc != NFSPROC3_WRITE) continue;
        fattr3 after = created_;
        after.size = 4096;
        up_->Answer(i, WriteOk(4096, FILE_SYNC, kV1, after));
      }
    });
    std::optional<std::string> reply = c.ReadRecord();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return 0xffffffff;
    StatusOr<ReplyHeader> h = ParseReply(*reply);
    EXPECT_TRUE(h.ok());
    const std::string results = h.ok() ? reply->substr(h->results_offset) : "";
    return results.size() >= 4 ? LoadBE32(results.data()) : 0xffffffff;
  }
};

TEST_F(HeldSetattrTest, AReloadMeanwhileAppliesToIt) {
  const uint32_t status = HeldSetattr([&] {
    ExportConfig ro = export_;
    ro.read_only = true;
    ASSERT_TRUE(exports_->Update({ro}).ok());
  });
  EXPECT_EQ(status, static_cast<uint32_t>(NFS3ERR_ROFS));
  EXPECT_EQ(Count(NFSPROC3_SETATTR), 0u) << "the truncation reached the upstream";
}

TEST_F(HeldSetattrTest, ItsHandleLeavingTheRegistryMeanwhileDoesNotRefuseIt) {
  const uint32_t status = HeldSetattr([&] {
    for (int i = 0; i < 1100; ++i) registry_->Add("OTHER-" + std::to_string(i), 0);
    ASSERT_FALSE(registry_->FindAll(file_)) << "the file's handle is still registered";
  });
  EXPECT_EQ(status, static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(Count(NFSPROC3_SETATTR), 1u);
}

// A WRITE that waited for buffer room meets the rules of its export as they
// are when room comes: made read-only by a reload meanwhile, it is refused,
// not buffered and answered.
class WaitingForRoomTest : public HeldSetattrTest {
 protected:
  WaitingForRoomTest() { max_bytes_ = 4096; }  // one write's bytes
};

TEST_F(WaitingForRoomTest, AReloadMeanwhileAppliesToIt) {
  BlockingClient c(port_);
  MountAndCreate(c, 1000, 0644);
  SendWrite(c, 3);
  ASSERT_EQ(ReadWriteReply(c).committed, UNSTABLE) << "buffered";
  loop_.RunSync([&] { hold_writes_ = true; });
  SendWrite(c, 4);  // no room: it waits, and the buffered write goes upstream
  for (int i = 0; i < 500 && Count(NFSPROC3_WRITE) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Count(NFSPROC3_WRITE), 1u) << "the buffered write makes room";
  loop_.RunSync([&] {
    EXPECT_EQ(writes_->stats().blocked, 1u);
    ExportConfig ro = export_;
    ro.read_only = true;
    ASSERT_TRUE(exports_->Update({ro}).ok());
    for (size_t i = 0; i < up_->calls.size(); ++i) {
      if (up_->calls[i].proc != NFSPROC3_WRITE) continue;
      fattr3 after = created_;
      after.size = 4096;
      up_->Answer(i, WriteOk(4096, FILE_SYNC, kV1, after));
    }
  });
  ClientReply r = ReadWriteReply(c);
  EXPECT_EQ(r.status, NFS3ERR_ROFS);
  loop_.RunSync([&] { EXPECT_EQ(writes_->stats().buffered_bytes, 0u); });
  EXPECT_EQ(Count(NFSPROC3_WRITE), 1u);
}

// An UNCHECKED CREATE of a name that exists returns that file, made by
// whomever: its owner is no evidence about the caller (a server squashing
// root answers root's CREATE with root's own file, then refuses its
// writes). The WRITE waits for the ACCESS.
TEST_F(CreateWriteTest, AnExistingFileReturnedByCreateIsNoEvidence) {
  loop_.RunSync([&] { existed_ = true; });
  ExpectWriteWaitsForAccess(1000, 0644, /*size=*/4096);
}

// Another owner (a squashed creator), or no owner's write bit: the WRITE
// waits for the ACCESS, and without MODIFY granted goes upstream stable.
TEST_F(CreateWriteTest, AnotherOwnersWritesWaitForTheAccess) {
  ExpectWriteWaitsForAccess(65534, 0644);
}

TEST_F(CreateWriteTest, WritesWithoutTheOwnersWriteBitWaitForTheAccess) {
  ExpectWriteWaitsForAccess(1000, 0444);
}

}  // namespace
}  // namespace nfsedge
