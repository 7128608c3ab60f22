// Client READs handed to the proxy's NFS program with the data cache: a
// forwarded READ answered after a newer version was learned; a WRITE whose
// reply was lost; the upstream's read size after a restart; a READ that
// waited in the read path across a reload.

#include <algorithm>

#include "cache/handle_registry.h"
#include "incoming_call.h"
#include "proxy/exports.h"
#include "proxy/nfs_service.h"
#include "read_path_fixture.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.

// --- Data: a forwarded READ answered after a newer version was learned -------
//
// A server reads a READ's data, then takes its post-op attributes: another
// client's write between the two answers old bytes under the new version.
// A forwarded READ's data is kept only under the version the proxy knew as
// the READ left; that the cache learned the new version in the meantime
// (from a second READ, sent after the write and answered first) does not
// make the old bytes the new version's.
class ForwardedReadTest : public ReadPathTest {
 protected:
  ForwardedReadTest()
      : table_({Reachable(exp_.config())}),
        registry_(1000),
        nfs_(table_, registry_, up_, Options(), &meta_, rp_.get()) {
    registry_.Add(file_, exp_.id());
  }
  static ExportConfig Reachable(ExportConfig c) {
    c.clients.push_back(*Network::Parse("127.0.0.0/8"));
    return c;
  }
  static NfsServiceOptions Options() {
    NfsServiceOptions o;
    o.drc_entries = 0;  // it would take the reply hook
    return o;
  }
  // A client READ handed to the proxy's NFS program; its reply lands in
  // `*results`.
  void SendRead(uint64_t offset, uint32_t count, std::optional<std::string>* results) {
    READ3args a{};
    a.file = Fh(file_);
    a.offset = offset;
    a.count = count;
    nfs_.Handle(IncomingNfsCall(next_xid_++, NFSPROC3_READ, user_, Xdr(Proc(xdr_READ3args), a),
                                [results](std::string r) { *results = std::move(r); }));
  }
  // The index of the last upstream READ at `offset`, or -1.
  int UpstreamRead(uint64_t offset) const {
    for (int i = static_cast<int>(up_.calls.size()) - 1; i >= 0; --i) {
      const FakeUpstream::Seen& s = up_.calls[static_cast<size_t>(i)];
      if (s.proc != NFSPROC3_READ) continue;
      XdrValue<READ3args> a(Proc(xdr_READ3args));
      if (a.Decode(s.args) && a->offset == offset) return i;
    }
    return -1;
  }

  ExportTable table_;
  HandleRegistry registry_;
  NfsService nfs_;
  uint32_t next_xid_ = 1;
};

TEST_F(ForwardedReadTest, OldBytesUnderAVersionLearnedAfterTheReadLeftAreNotKept) {
  hold_ = true;  // every upstream call waits for the test
  MetaGetattr(exp_, file_, file().attr);
  // No ACCESS evidence yet: the READ goes upstream as it is.
  std::optional<std::string> first, second;
  SendRead(0, kBlock, &first);
  const int r1 = UpstreamRead(0);
  ASSERT_GE(r1, 0);
  const std::string old_block = file().data.substr(0, kBlock);

  // Another client writes the file at the head office; a second READ leaves
  // after it and is answered first, with the new version.
  SetFile(Content(10000, 5), kWall0 - 60);
  SendRead(kBlock, kBlock, &second);
  const int r2 = UpstreamRead(kBlock);
  ASSERT_GE(r2, 0);
  up_.Answer(static_cast<size_t>(r2), Respond(up_.calls[static_cast<size_t>(r2)]));
  Drain();
  ASSERT_TRUE(second.has_value());

  // The first READ read its bytes before the write, its attributes after.
  READ3res res{};
  res.status = NFS3_OK;
  READ3resok& ok = res.READ3res_u.resok;
  ok.file_attributes = PostOp(file().attr);
  ok.count = kBlock;
  ok.data.data_val = const_cast<char*>(old_block.data());
  ok.data.data_len = kBlock;
  up_.Answer(static_cast<size_t>(r1), Xdr(Proc(xdr_READ3res), res));
  Drain();
  ASSERT_TRUE(first.has_value());

  // With ACCESS evidence, a READ of the first block is served by the data
  // cache: from the upstream, or from blocks of the new version.
  hold_ = false;
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  const Outcome out = ReadNow(0, kBlock);
  ASSERT_EQ(out.replies, 1);
  EXPECT_TRUE(out.reply().data == file().data.substr(0, kBlock))
      << "the bytes the write replaced were kept under the version it made";
  EXPECT_EQ(rp_->stats().unconfirmed, 2u) << "neither forwarded READ's data was kept";
}

// --- Data: a forwarded WRITE whose reply is lost -----------------------------
//
// A WRITE forwarded as it is (no write path) that the upstream carried out
// but whose reply never came (timed out): the server's timestamps did not
// tick, so a revalidation finds the version the blocks were cached under.
// They hold the bytes the write replaced, and must not be served, as after
// an answered write (read_path.h, NoteWrite).
using LostWriteReplyTest = ForwardedReadTest;

TEST_F(LostWriteReplyTest, AWriteWhoseReplyWasLostDropsTheFilesBlocks) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 6000), 0, 6000);  // the blocks are cached
  const std::string data(100, 'n');
  WRITE3args w{};
  w.file = Fh(file_);
  w.count = static_cast<uint32_t>(data.size());
  w.stable = FILE_SYNC;
  w.data.data_val = const_cast<char*>(data.data());
  w.data.data_len = w.count;
  up_.set_fail_with(Status(StatusCode::kTimeout, "no reply"));
  std::optional<std::string> results;
  nfs_.Handle(IncomingNfsCall(next_xid_++, NFSPROC3_WRITE, user_, Xdr(Proc(xdr_WRITE3args), w),
                              [&results](std::string r) { results = std::move(r); }));
  Drain();
  ASSERT_TRUE(results.has_value());
  EXPECT_EQ(LoadBE32(results->data()), static_cast<uint32_t>(NFS3ERR_JUKEBOX));
  up_.set_fail_with(std::nullopt);
  // The upstream took it: other bytes, the same size and times.
  std::string now = file().data;
  now.replace(0, data.size(), data);
  SetFile(now, file().attr.mtime.seconds);
  ExpectData(ReadNow(0, 6000), 0, 6000);
}

// --- Data: the upstream's read size after a restart ---------------------------
//
// Clients mounted before a proxy restart send no FSINFO: the proxy asks on
// the first file read, once, so that its fetches are no larger than the
// upstream reads at once (every fetch would come back short).
using RestartedReadSizeTest = ForwardedReadTest;

TEST_F(RestartedReadSizeTest, TheFirstReadAsksTheUpstreamsReadSizeOnce) {
  server_rtmax_ = 2 * kBlock;
  ASSERT_GT(rp_->read_size(0), server_rtmax_);
  // Every bit asked: no speculative ACCESS.
  LearnAccess(user_, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
                         ACCESS3_DELETE | ACCESS3_EXECUTE,
              ACCESS3_READ);
  for (uint64_t offset : {0u, 5000u}) {
    std::optional<std::string> results;
    SendRead(offset, 1000, &results);
    Drain();
    ASSERT_TRUE(results.has_value());
  }
  EXPECT_EQ(fsinfo_asked_, 1);
  EXPECT_EQ(rp_->read_size(0), server_rtmax_);
}

// --- A READ that waits in the read path across a reload ----------------------
//
// A READ waiting for the read path (a fetch, a revalidation) meets its
// export's rules as they are when it is answered or forwarded: the client's
// network taken out of the export by a reload meanwhile refuses it, as it
// refuses any call held elsewhere.
class ReloadedReadTest : public ForwardedReadTest {
 protected:
  // Sends a READ, which must wait; reloads the export without the client's
  // network; answers what the upstream holds; returns the READ's status.
  uint32_t ReadAcrossAReload(bool keep_the_client = false) {
    hold_ = true;
    std::optional<std::string> results;
    SendRead(0, 1000, &results);
    Drain();
    EXPECT_FALSE(results.has_value()) << "the READ waits for the upstream";
    ExportConfig moved = table_.Get(0).config();
    if (!keep_the_client) moved.clients = {*Network::Parse("10.0.0.0/8")};
    moved.acregmin = 1;  // a change that leaves the READ's rules as they were
    EXPECT_TRUE(table_.Update({moved}).ok());
    for (size_t i = 0; i < up_.calls.size(); ++i) {
      if (up_.calls[i].proc == NFSPROC3_ACCESS) continue;  // speculative: left waiting
      if (std::optional<std::string> r = Respond(up_.calls[i])) up_.Answer(i, *r);
    }
    Drain();
    EXPECT_TRUE(results.has_value());
    return results && results->size() >= 4 ? LoadBE32(results->data()) : 0xffffffff;
  }
  size_t UpstreamReads() const {
    return static_cast<size_t>(std::count_if(up_.calls.begin(), up_.calls.end(),
                                             [](const FakeUpstream::Seen& c) {
                                               return c.proc == NFSPROC3_READ;
                                             }));
  }
};

TEST_F(ReloadedReadTest, AReadWaitingForAFetchIsRefusedAfterTheReload) {
  MetaGetattr(exp_, file_, file().attr);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  EXPECT_EQ(ReadAcrossAReload(), static_cast<uint32_t>(NFS3ERR_ACCES));
  EXPECT_EQ(UpstreamReads(), 1u) << "the fetch only";
}

TEST_F(ReloadedReadTest, AReloadThatLeavesItsRulesAnswersItWithWhatItWaitedFor) {
  MetaGetattr(exp_, file_, file().attr);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  EXPECT_EQ(ReadAcrossAReload(/*keep_the_client=*/true), static_cast<uint32_t>(NFS3_OK));
  EXPECT_EQ(UpstreamReads(), 1u) << "served again after the reload: fetched again";
}

TEST_F(ReloadedReadTest, AReadWaitingForARevalidationIsNotForwardedAfterTheReload) {
  // Attributes known but expired, no ACCESS evidence: the read path asks
  // the attributes, then hands the READ back to be forwarded.
  MetaGetattr(exp_, file_, file().attr);
  clock_.Advance(std::chrono::hours(1));
  EXPECT_EQ(ReadAcrossAReload(), static_cast<uint32_t>(NFS3ERR_ACCES));
  EXPECT_EQ(UpstreamReads(), 0u) << "forwarded after the reload refused its client";
}

}  // namespace
}  // namespace nfsedge
