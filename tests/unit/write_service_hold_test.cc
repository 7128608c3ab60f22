// Calls held for a file's buffered writes (DESIGN rule 4): what waits, for
// which writes, and what it meets when it goes on. Each test drives the
// proxy's NFS program as a client would (write_service_fixture.h).
#include "write_service_fixture.h"

namespace nfsedge::write_path_test {
namespace {

// A reader's GETATTR arrives while the file has one buffered UNSTABLE write
// (4 KiB at 0); the proxy holds it and sends that write upstream. Meanwhile
// the writer appends (4 KiB at 4 KiB), as a log or a copy does. Once the
// upstream has answered the write that came before the GETATTR, the GETATTR
// must be answered (architecture.md, "Read your writes": a held call waits
// only for the writes that came before it, "so a writer that keeps
// appending does not hold a reader of the file for as long as it writes").
// Served again from the top, the held call would be held again behind the
// newer append, and so on for every append that comes within a round trip.
TEST_F(WriteServiceTest, HeldGetattrIsNotHeldAgainBehindWritesThatCameAfterIt) {
  LearnAccess(FileAttr(0, 1));
  const std::string chunk(4096, 'w');
  const size_t w1 = WriteUnstable(0, chunk);
  ASSERT_TRUE(results_[w1].has_value());
  ASSERT_EQ(up_.Count(NFSPROC3_WRITE) + bg_.Count(NFSPROC3_WRITE), 0u) << "buffered";

  const size_t getattr = Getattr();
  EXPECT_FALSE(results_[getattr].has_value()) << "held for the buffered write";
  int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held GETATTR sends the write at once";

  uint64_t size = 4096;
  for (int round = 0; round < 3 && !results_[getattr].has_value(); ++round) {
    // The writer appends while the upstream WRITE is on its way...
    const size_t w = WriteUnstable(size, chunk);
    ASSERT_TRUE(results_[w].has_value());
    // ...and the upstream answers the WRITE sent for the GETATTR.
    const SentWrite s = DecodeWriteArgs(up_.calls[static_cast<size_t>(sent)].args);
    AnswerRecord(up_, static_cast<size_t>(sent),
           WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1,
                   FileAttr(s.offset + s.data.size(), 2 + round)));
    size += 4096;
    if (results_[getattr].has_value()) break;
    ADD_FAILURE() << "round " << round
                  << ": every write that came before the GETATTR is upstream, yet the GETATTR "
                     "is still held (now behind the append that came after it)";
    const int next = Last(up_, NFSPROC3_WRITE);
    if (next == sent) break;
    sent = next;
  }
  ASSERT_TRUE(results_[getattr].has_value());
  std::optional<fattr3> attr = GetattrAttr(*results_[getattr]);
  ASSERT_TRUE(attr.has_value());
  EXPECT_GE(attr->size, 4096u) << "the GETATTR shows the write that came before it";
}

// Calls other than GETATTR and READ whose replies carry a file's
// attributes wait for its buffered writes too: FSSTAT (obj_attributes) and
// a directory operation naming the file (refused NOTDIR, with the file's
// attributes). Sent at once, their replies would show the file without
// the write its client was told was done (DESIGN rule 4).
TEST_F(WriteServiceTest, FsstatAndALookupInAFileWaitForItsBufferedWrites) {
  LearnAccess(FileAttr(0, 1));
  FSSTAT3args fs{};
  fs.fsroot = Fh(file_);
  LOOKUP3args lk{};
  lk.what.dir = Fh(file_);
  char name[] = "x";
  lk.what.name = name;
  const std::pair<uint32_t, std::string> calls[] = {
      {NFSPROC3_FSSTAT, Xdr(Proc(xdr_FSSTAT3args), fs)},
      {NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), lk)}};
  uint64_t offset = 0;
  for (const auto& [proc, args] : calls) {
    const size_t w = WriteUnstable(offset, std::string(4096, 'w'));
    ASSERT_TRUE(results_[w].has_value());
    Send(proc, args);
    EXPECT_EQ(Last(up_, proc), -1) << proc << ": sent before the buffered write";
    const int sent = Last(up_, NFSPROC3_WRITE);
    ASSERT_GE(sent, 0) << proc << ": the held call sends the write at once";
    offset += 4096;
    AnswerRecord(up_, static_cast<size_t>(sent),
                 WriteOk(4096, UNSTABLE, kV1, FileAttr(offset, 2)));
    EXPECT_GE(Last(up_, proc), 0) << proc << ": not sent once the write was upstream";
  }
}

// A client COMMIT that waited for the file's data to be stable upstream
// meets the rules in force when it is answered: an export made read-only
// by a reload meanwhile answers it NFS3ERR_ROFS, as it would a new one.
TEST_F(WriteServiceTest, ACommitThatWaitedThroughAReloadMeetsTheRulesNow) {
  LearnAccess(FileAttr(0, 1));
  const size_t w = WriteUnstable(0, std::string(4096, 'w'));
  ASSERT_TRUE(results_[w].has_value());
  const size_t commit = CommitAll();
  ASSERT_FALSE(results_[commit].has_value()) << "answered before the data is stable upstream";
  ExportConfig ro = Exports()[0];
  ro.read_only = true;
  ASSERT_TRUE(exports_.Update({ro}).ok());
  for (int round = 0; round < 10 && !results_[commit].has_value(); ++round) {
    for (HeldUpstream* u : {&up_, &bg_}) {
      const int i = u->Pending();
      if (i < 0) continue;
      const bool write = u->calls[static_cast<size_t>(i)].proc == NFSPROC3_WRITE;
      u->Answer(static_cast<size_t>(i), write ? WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2))
                                              : CommitOk(kV1, FileAttr(4096, 3)));
    }
    Advance(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(results_[commit].has_value());
  XdrValue<COMMIT3res> res(Proc(xdr_COMMIT3res));
  ASSERT_TRUE(res.Decode(*results_[commit]));
  EXPECT_EQ(res->status, NFS3ERR_ROFS);
}

// The file has a buffered, acknowledged UNSTABLE write (4 KiB at 0). A
// client opens it with O_CREAT (an UNCHECKED CREATE without a size, sent
// when the client believed the name free): the upstream returns the file
// that exists, with the attributes it knows, size 0. Passed on as is, it
// would tell the client a size of 0 for a file whose 4 KiB the proxy has
// acknowledged (DESIGN rule 4: "attributes returned reflect them";
// architecture.md: "no answer shows a file's size or times without its
// writes"), and a client appending (O_APPEND takes the size from those
// attributes) would write over the acknowledged bytes. A CREATE is not
// sent again to learn more (it is not idempotent): the answer goes without
// the file's attributes.
TEST_F(WriteServiceTest, CreateReturningAFileWithBufferedWritesShowsThem) {
  LearnAccess(FileAttr(0, 1));
  const size_t w = WriteUnstable(0, std::string(4096, 'w'));
  ASSERT_TRUE(results_[w].has_value());
  ASSERT_EQ(wp_->stats().buffered_bytes, 4096u);

  CREATE3args ca{};
  ca.where.dir = Fh(dir_);
  ca.where.name = const_cast<char*>("log");
  ca.how.mode = UNCHECKED;
  ca.how.createhow3_u.obj_attributes.mode.set_it = TRUE;
  ca.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
  const size_t create = Send(NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), ca));
  const int c = Last(up_, NFSPROC3_CREATE);
  ASSERT_GE(c, 0);
  CREATE3res cr{};
  cr.status = NFS3_OK;
  cr.CREATE3res_u.resok.obj.handle_follows = TRUE;
  cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle = Fh(file_);
  cr.CREATE3res_u.resok.obj_attributes = PostOp(FileAttr(0, 1));  // the upstream's view
  cr.CREATE3res_u.resok.dir_wcc.after = PostOp(DirAttr(1));
  AnswerRecord(up_, static_cast<size_t>(c), Xdr(Proc(xdr_CREATE3res), cr));
  // Held until the write is upstream, if need be.
  for (int i = up_.Pending(); i >= 0 && !results_[create].has_value(); i = up_.Pending()) {
    const auto& call = up_.calls[static_cast<size_t>(i)];
    if (call.proc == NFSPROC3_WRITE) {
      const SentWrite s = DecodeWriteArgs(call.args);
      AnswerRecord(up_, static_cast<size_t>(i),
             WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1, FileAttr(4096, 2)));
    } else if (call.proc == NFSPROC3_CREATE) {
      AnswerRecord(up_, static_cast<size_t>(i), Xdr(Proc(xdr_CREATE3res), cr));
    } else {
      break;
    }
  }
  ASSERT_TRUE(results_[create].has_value());
  XdrValue<CREATE3res> res(Proc(xdr_CREATE3res));
  ASSERT_TRUE(res.Decode(*results_[create]));
  ASSERT_EQ(res->status, NFS3_OK);
  const post_op_attr& attr = res->CREATE3res_u.resok.obj_attributes;
  if (attr.attributes_follow) {
    EXPECT_EQ(attr.post_op_attr_u.attributes.size, 4096u)
        << "the CREATE's answer shows the file without the 4 KiB the proxy acknowledged";
  }
}

// A LOOKUP goes upstream (no ACCESS evidence on the directory for this
// credential, so the cache cannot answer it) and names a file with a
// buffered, acknowledged write: it is held, and that write goes upstream.
// Meanwhile the writer appends, as a log does. Once the write that came
// before the LOOKUP is upstream, the LOOKUP must be answered
// (architecture.md, "Read your writes": "served again once they are
// upstream, the call is held by no write that came after it"; the held
// LOOKUP is named with GETATTR). Served again, it goes upstream again (the
// cache still cannot answer it), and its new reply is not held behind the
// append that came after it.
TEST_F(WriteServiceTest, HeldLookupIsNotHeldAgainBehindWritesThatCameAfterIt) {
  LearnAccess(FileAttr(0, 1));
  const std::string chunk(4096, 'w');
  const size_t w1 = WriteUnstable(0, chunk);
  ASSERT_TRUE(results_[w1].has_value());

  LOOKUP3args la{};
  la.what.dir = Fh(dir_);
  la.what.name = const_cast<char*>("log");
  const size_t lookup = Send(NFSPROC3_LOOKUP, Xdr(Proc(xdr_LOOKUP3args), la));
  uint64_t size = 4096;
  uint32_t t = 2;
  auto answer_lookup = [&](int i) {
    LOOKUP3res lr{};
    lr.status = NFS3_OK;
    lr.LOOKUP3res_u.resok.object = Fh(file_);
    lr.LOOKUP3res_u.resok.obj_attributes = PostOp(FileAttr(size - 4096, t));
    lr.LOOKUP3res_u.resok.dir_attributes = PostOp(DirAttr(1));
    AnswerRecord(up_, static_cast<size_t>(i), Xdr(Proc(xdr_LOOKUP3res), lr));
  };
  int l = Last(up_, NFSPROC3_LOOKUP);
  ASSERT_GE(l, 0) << "the cache cannot answer it: forwarded";
  answer_lookup(l);
  EXPECT_FALSE(results_[lookup].has_value()) << "held for the buffered write";
  int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held LOOKUP sends the write at once";

  for (int round = 0; round < 4 && !results_[lookup].has_value(); ++round) {
    // The writer appends while the upstream WRITE is on its way...
    const size_t w = WriteUnstable(size, chunk);
    ASSERT_TRUE(results_[w].has_value());
    // ...and the upstream answers the WRITE sent for the LOOKUP.
    const SentWrite s = DecodeWriteArgs(up_.calls[static_cast<size_t>(sent)].args);
    AnswerRecord(up_, static_cast<size_t>(sent),
           WriteOk(static_cast<uint32_t>(s.data.size()), UNSTABLE, kV1,
                   FileAttr(s.offset + s.data.size(), ++t)));
    size += 4096;
    // The LOOKUP served again may go upstream again: answered at once.
    const int again = Last(up_, NFSPROC3_LOOKUP);
    if (again != l && !up_.calls[static_cast<size_t>(again)].answered) {
      l = again;
      answer_lookup(l);
    }
    if (results_[lookup].has_value()) break;
    ADD_FAILURE() << "round " << round
                  << ": every write that came before the LOOKUP is upstream, yet the LOOKUP "
                     "is still held (now behind the append that came after it)";
    const int next = Last(up_, NFSPROC3_WRITE);
    if (next == sent) break;
    sent = next;
  }
  EXPECT_TRUE(results_[lookup].has_value())
      << "LOOKUPs sent upstream: " << up_.Count(NFSPROC3_LOOKUP);
}

// After a restart the journal's records are replayed upstream; the name
// cache is empty. A client that believes the name free sends an UNCHECKED
// CREATE with size 0 for a file whose records are being replayed (O_TRUNC):
// sent at once, it truncates the file, and the replay's WRITEs then put the
// old bytes back into it. It waits until the replayed data is stable and
// its records are out of the journal.
TEST_F(WriteServiceTest, ATruncatingCreateOfAnUnknownNameWaitsForTheReplay) {
  JournalRecord r;
  r.seq = journal_.NextSeq();
  r.fh = file_;
  r.export_path = "/e";
  r.cred = cred_;
  r.offset = 0;
  r.data = std::string(4096, 'r');
  wp_->Recover(r, exports_.all().front());
  wp_->FlushAll();

  CREATE3args ca{};
  ca.where.dir = Fh(dir_);
  ca.where.name = const_cast<char*>("log");
  ca.how.mode = UNCHECKED;
  ca.how.createhow3_u.obj_attributes.size.set_it = TRUE;
  ca.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
  Send(NFSPROC3_CREATE, Xdr(Proc(xdr_CREATE3args), ca));
  EXPECT_EQ(Last(up_, NFSPROC3_CREATE), -1) << "the truncation went before the replayed data";
  // The replayed data is written and committed; its record's removal
  // reaches the disk.
  for (int round = 0; round < 10 && Last(up_, NFSPROC3_CREATE) < 0; ++round) {
    Advance(std::chrono::milliseconds(50));
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (int i = u->Pending(); i >= 0; i = u->Pending()) {
        const HeldUpstream::Held& c = u->calls[static_cast<size_t>(i)];
        if (c.proc == NFSPROC3_CREATE) break;
        if (c.proc == NFSPROC3_WRITE) {
          u->Answer(static_cast<size_t>(i), WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2)));
        } else {
          ASSERT_EQ(c.proc, NFSPROC3_COMMIT);
          u->Answer(static_cast<size_t>(i), CommitOk(kV1, FileAttr(4096, 3)));
        }
      }
    }
    EXPECT_EQ(Last(up_, NFSPROC3_CREATE) >= 0 && journal_.removed.empty(), false)
        << "the truncation went before the replayed record left the journal's disk";
    journal_.Complete();
  }
  EXPECT_GE(Last(up_, NFSPROC3_CREATE), 0) << "the CREATE is never sent";
  EXPECT_EQ(journal_.removed, (std::vector<uint64_t>{1}));
}

// PATHCONF carries the file's attributes too: held while the file has
// buffered writes (which it sends upstream), as GETATTR is.
TEST_F(WriteServiceTest, PathconfWaitsForBufferedWritesAsGetattrDoes) {
  LearnAccess(FileAttr(0, 1));
  ASSERT_TRUE(results_[WriteUnstable(0, std::string(4096, 'w'))].has_value());
  PATHCONF3args pa{};
  pa.object = Fh(file_);
  const size_t p = Send(NFSPROC3_PATHCONF, Xdr(Proc(xdr_PATHCONF3args), pa));
  EXPECT_FALSE(results_[p].has_value());
  EXPECT_EQ(up_.Count(NFSPROC3_PATHCONF), 0u) << "not before the write is upstream";
  const int sent = Last(up_, NFSPROC3_WRITE);
  ASSERT_GE(sent, 0) << "the held PATHCONF sends the write at once";
  AnswerRecord(up_, static_cast<size_t>(sent), WriteOk(4096, UNSTABLE, kV1, FileAttr(4096, 2)));
  EXPECT_EQ(up_.Count(NFSPROC3_PATHCONF), 1u) << "then it goes on";
}

}  // namespace
}  // namespace nfsedge::write_path_test
