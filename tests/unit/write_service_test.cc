// Write-behind as the rest of the proxy sees it (write_path_test): the
// attributes a COMMIT the proxy answers carries, and what a WRITE's reply
// teaches the cache. Each test drives the proxy's NFS program as a client
// would (write_service_fixture.h).
#include "write_service_fixture.h"

namespace nfsedge::write_path_test {
namespace {

// A client's UNSTABLE write is buffered and acknowledged; the flush delay
// sends it upstream in the background, and commits it there (the COMMIT's
// reply shows size 4096, ctime 3). Then a SETATTR truncates the file to 0
// through the proxy (the upstream answers size 0, ctime 4), and a GETATTR
// shows size 0. A client COMMIT that comes now (at close, or from another
// client that wrote the file) has nothing left to wait for and is answered
// by the proxy itself: not with the post-op attributes the background
// COMMIT returned before the truncation (size 4096 and the old times),
// which the client would put in its attribute cache (they come in a reply
// newer than the SETATTR's), to see a file of 4096 bytes the server does
// not have (DESIGN rule 5: attributes follow the freshest the upstream
// returned; a reply made up by the proxy must not carry older ones).
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyDoesNotCarryAttributesOlderThanASetattr) {
  WriteAndTruncate(/*with_after=*/true);
  const size_t getattr = Getattr();
  ASSERT_TRUE(results_[getattr].has_value());
  std::optional<fattr3> now = GetattrAttr(*results_[getattr]);
  ASSERT_TRUE(now.has_value());
  ASSERT_EQ(now->size, 0u) << "the proxy knows the file is empty";

  const size_t upstream_calls = up_.calls.size() + bg_.calls.size();
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  EXPECT_EQ(up_.calls.size() + bg_.calls.size(), upstream_calls) << "answered by the proxy";
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  if (after.has_value()) {
    EXPECT_EQ(after->size, 0u) << "the COMMIT's reply shows a size the file no longer has";
    EXPECT_GE(after->ctime.seconds, 4u) << "... and times older than the truncation";
  }
}

// The same when the cache no longer holds the SETATTR's attributes (its
// entry evicted, or max_attr_entries = 0): the forwarded SETATTR itself
// told the write path that its own attributes are out of date.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterASetattrTheCacheForgotCarriesNoOldAttributes) {
  WriteAndTruncate(/*with_after=*/true);
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  if (after.has_value()) {
    EXPECT_EQ(after->size, 0u) << "the COMMIT's reply shows the size from before the truncation";
  }
}

// A change at the head office (no call through the proxy) that a GETATTR
// showed: the cache learned it, then evicted it. The write path's own
// attributes, from its COMMIT before the change, would show the client
// the file as it was (its size and times): a COMMIT the proxy answers
// carries none, or newer ones.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterAHeadOfficeChangeTheCacheForgotCarriesNoOldAttributes) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(8192, 6));  // appended to at the head office
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// The same with a cache that keeps no attributes (max_attr_entries = 0):
// the GETATTR's reply went to its client, and the cache let it go at once.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterAHeadOfficeChangeNoCacheKeptCarriesNoOldAttributes) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  CacheConfig none;
  none.max_attr_entries = 0;
  cache_.SetLimits(none);
  LearnGetattr(file_, FileAttr(8192, 6));
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// The same when the cache still has the file's entry but no attributes it
// serves: the change's expired, then a reply overtaken by it (older ctime)
// came; the entry keeps the change's ctime as a floor.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyCarriesNoAttributesOlderThanACacheFloor) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(8192, 6));
  Advance(std::chrono::minutes(10));  // past any attribute lifetime
  LearnGetattr(file_, FileAttr(4096, 4));
  ASSERT_FALSE(cache_.LatestAttributes(file_).has_value()) << "held, not served";
  ExpectProxysCommitShowsNothingBefore(FileAttr(8192, 6));
}

// Without such a change, evicting the file's entry costs the proxy's
// COMMIT reply nothing: its attributes are those of its last COMMIT.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyCarriesItsOwnAttributesAfterAnEviction) {
  ASSERT_NO_FATAL_FAILURE(WrittenAndCommitted());
  LearnGetattr(file_, FileAttr(4096, 3));  // what the COMMIT showed
  ASSERT_NO_FATAL_FAILURE(EvictFileAttributes());
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, 4096u);
  EXPECT_EQ(after->ctime.seconds, 3u);
}

// The same with a SETATTR reply that leaves out the attributes after it
// (optional in RFC 1813), and no GETATTR in between: the proxy knows nothing
// newer than the background COMMIT's attributes, which are older than the
// truncation. Its COMMIT reply carries none.
TEST_F(WriteServiceTest, CommitAnsweredByTheProxyAfterASetattrWithoutAttributesCarriesNone) {
  WriteAndTruncate(/*with_after=*/false);
  const size_t commit = CommitAll();
  ASSERT_TRUE(results_[commit].has_value());
  std::optional<fattr3> after = CommitAttr(*results_[commit]);
  EXPECT_FALSE(after.has_value()) << "the COMMIT's reply shows size " << after->size
                                  << " from before the truncation";
}

// The metadata cache tells the write path of a change whose result no
// reply showed (here a SETATTR whose reply never came). A reply to the
// write path's own WRITE sent before it may show the file from before the
// change: its attributes are not learned, and a COMMIT the proxy answers
// carries none.
TEST_F(WriteServiceTest, AWriteSentBeforeAChangeTheCacheForgotTeachesNoAttributes) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  EXPECT_FALSE(after.has_value()) << "attributes from before the change";
}

// A WRITE sent after such a change is learned, although the cache, on
// learning the reply of a WRITE sent before it (overtaken), marked the
// file again: that was the write path's own reply, not a change.
TEST_F(WriteServiceTest, AWriteSentAfterAChangeTheCacheForgotTeachesItsAttributes) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(1 << 20);  // while the first is upstream
  ASSERT_GT(w2, w1);
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  AnswerRecord(bg_, static_cast<size_t>(w2),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((1 << 20) + 4096, 5)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value()) << "a WRITE sent after the change taught nothing";
  EXPECT_EQ(after->size, (1u << 20) + 4096);
}

// A WRITE sent before such a change may also have been done by the server
// after a WRITE sent after it (the two went on different connections): its
// reply, coming last, shows a later ctime than what the newer WRITE taught,
// and it is those attributes that show the file.
TEST_F(WriteServiceTest, AnOvertakenWriteDoneLastByTheServerTeachesItsAttributes) {
  const int w1 = FlushedWrite(1 << 20);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(0);
  ASSERT_GT(w2, w1);
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 5)));
  AnswerRecord(bg_, static_cast<size_t>(w1),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((1 << 20) + 4096, 6)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, (1u << 20) + 4096) << "the attributes of the WRITE the server did last";
  EXPECT_EQ(after->ctime.seconds, 6u);
}

// A WRITE made before the change and written again after it (after a
// reconnect) may answer its first transmission, from before the change: it
// teaches nothing to a file the write path knows nothing of since.
TEST_F(WriteServiceTest, AWriteFromBeforeAChangeResentAfterItTeachesNothingAlone) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  bg_.calls[static_cast<size_t>(w1)].sent_at = std::chrono::steady_clock::now();  // resent
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  EXPECT_FALSE(after.has_value()) << "attributes from before the change";
}

// ...and is ordered by ctime against what a later call taught, older or
// newer.
TEST_F(WriteServiceTest, AWriteFromBeforeAChangeResentAfterItIsOrderedByCtime) {
  const int w1 = FlushedWrite(0);
  const int w2 = FlushedWrite(1 << 20);
  ASSERT_GE(w1, 0);
  ASSERT_GT(w2, w1);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w3 = FlushedWrite(3 << 20);
  ASSERT_GT(w3, w2);
  for (int w : {w1, w2}) bg_.calls[static_cast<size_t>(w)].sent_at = std::chrono::steady_clock::now();
  // The call made after the change teaches...
  AnswerRecord(bg_, static_cast<size_t>(w3),
               WriteOk(4096, FILE_SYNC, kV1, FileAttr((3 << 20) + 4096, 7)));
  // ...an older resent one does not undo it...
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 3)),
               /*transmissions=*/2);
  ASSERT_EQ(wp_->stats().buffered_bytes, 4096u) << "the second write is still upstream";
  // ...and a newer one replaces it.
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4 << 20, 8)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->size, 4u << 20);
  EXPECT_EQ(after->ctime.seconds, 8u);
}

// A WRITE made after the change left after it, however many times it was
// written: its attributes are learned (the change does not hold the file's
// later resent calls back for ever).
TEST_F(WriteServiceTest, AWriteMadeAfterAChangeTeachesThoughWrittenTwice) {
  const int w0 = FlushedWrite(0);
  ASSERT_GE(w0, 0);
  AnswerRecord(bg_, static_cast<size_t>(w0), WriteOk(4096, FILE_SYNC, kV1, FileAttr(4096, 2)));
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w = FlushedWrite(4096);
  ASSERT_GT(w, w0);
  AnswerRecord(bg_, static_cast<size_t>(w), WriteOk(4096, FILE_SYNC, kV1, FileAttr(8192, 5)),
               /*transmissions=*/2);
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  ASSERT_TRUE(after.has_value()) << "the reply of a WRITE made after the change taught nothing";
  EXPECT_EQ(after->size, 8192u);
}

// On a server whose ctime has a coarse tick, a WRITE sent before the change
// (here a chmod whose reply never came), the change and a WRITE sent after
// it ran within one tick: the older reply, coming last with the same ctime
// and the mode from before the chmod, does not replace what the newer
// taught.
TEST_F(WriteServiceTest, AnOvertakenReplyOfTheSameCtimeDoesNotBringTheOldModeBack) {
  const int w1 = FlushedWrite(0);
  ASSERT_GE(w1, 0);
  ASSERT_NO_FATAL_FAILURE(ChangeNoReplyShowed());
  const int w2 = FlushedWrite(4096);
  ASSERT_GT(w2, w1);
  fattr3 chmodded = FileAttr(8192, 5);
  chmodded.mode = 0600;
  AnswerRecord(bg_, static_cast<size_t>(w2), WriteOk(4096, FILE_SYNC, kV1, chmodded));
  AnswerRecord(bg_, static_cast<size_t>(w1), WriteOk(4096, FILE_SYNC, kV1, FileAttr(8192, 5)));
  std::optional<fattr3> after;
  ASSERT_NO_FATAL_FAILURE(ProxysCommitAttr(&after));
  if (after.has_value()) {
    EXPECT_EQ(after->mode, 0600u) << "the mode from before the chmod";
  }
}

}  // namespace
}  // namespace nfsedge::write_path_test
