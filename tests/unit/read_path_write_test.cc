// ReadPath and writes through the proxy: a write the upstream answered
// drops the file's cached blocks even under the same version (a server's
// timestamps are coarser than its writes), and READ replies that left
// before it are not stored.

#include <functional>
#include <list>

#include "read_path_fixture.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.


// 4d. A write the upstream answered drops the file's blocks even when the
// version it leaves is the one they carry (the server's timestamps did not
// tick between the two): the next READ fetches the new bytes.
TEST_F(ReadPathTest, AnsweredWriteDropsBlocksOfTheSameVersion) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 6000), 0, 6000);
  const size_t calls = up_.calls.size();
  // Same size, same times, other bytes: only the write through the proxy
  // tells.
  SetFile(Content(10000, 7), file().attr.mtime.seconds);
  rp_->NoteWrite(file_);
  ExpectData(ReadNow(0, 6000), 0, 6000);
  EXPECT_GT(up_.calls.size(), calls) << "the old blocks must not be served";
}

// A READ the upstream answered before `overtake` (the file rewritten
// meanwhile with `seed`'s bytes, its version unchanged), whose reply comes
// after it: not stored (its data predates it). The client READ it was
// fetched for came before the write was answered: concurrent with it, it is
// answered with those bytes, as the upstream gave them. A READ that came
// after the write was answered, and joined the fetch, fetches anew and gets
// the new bytes; so does the next READ.
class FetchOvertakenTest : public ReadPathTest {
 protected:
  void ExpectFetchOvertakenBy(const std::function<void()>& overtake, uint8_t seed) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    hold_ = true;
    Outcome early;
    Read(0, 3000, &early);
    Drain();
    ASSERT_EQ(up_.calls.size(), 1u);
    const std::string old_data = file().data;
    const std::string before = Respond(up_.calls[0]);  // executed before the change
    SetFile(Content(10000, seed), file().attr.mtime.seconds);
    overtake();
    Outcome late;
    Read(0, 3000, &late);  // joins the fetch under way
    Drain();
    ASSERT_EQ(up_.calls.size(), 1u) << "the test needs the second READ to join the fetch";
    hold_ = false;
    up_.Answer(0, before);
    Drain();
    ASSERT_EQ(early.replies, 1);
    EXPECT_EQ(early.reply().data, old_data.substr(0, 3000))
        << "the READ that came before the write gets the fetch's bytes";
    ExpectData(late, 0, 3000);
    EXPECT_EQ(rp_->stats().overtaken, 1u);
    EXPECT_EQ(CallsOf(NFSPROC3_READ), 2u) << "the later READ fetched anew";
    ExpectData(ReadNow(0, 3000), 0, 3000);
    EXPECT_EQ(CallsOf(NFSPROC3_READ), 2u) << "the second fetch was kept";
  }
};

// 4e. By a write through the proxy.
TEST_F(FetchOvertakenTest, FetchOvertakenByAWriteIsNotStored) {
  ExpectFetchOvertakenBy([this] { rp_->NoteWrite(file_); }, 8);
}

// 4e'. By `nfsedge drop-cache` (everything): drop-cache is the fix for a
// file rewritten at the head office within one timestamp tick.
TEST_F(FetchOvertakenTest, FetchOnItsWayAtADropCacheIsNotStored) {
  ExpectFetchOvertakenBy([this] { rp_->NoteDropAll(); }, 12);
}

// A file written through the proxy all the time (a write answered while
// every fetch is out, each with other bytes and the same version): a READ
// of three blocks that came while a fetch was out, after a write it may
// predate, is answered by the one fetch made once that fetch is back (not
// block by block, not forwarded); the READ the fetch was made for gets its
// bytes.
TEST_F(ReadPathTest, AReadOfAFileBeingWrittenTakesOneMoreFetch) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  std::list<Outcome> reads(1);
  Read(0, 10000, &reads.back());
  Drain();
  ASSERT_EQ(CallsOf(NFSPROC3_READ), 1u);
  for (int i = 0; i < 4; ++i) {
    const size_t fetch = up_.calls.size() - 1;
    const std::string reply = Respond(up_.calls[fetch]);
    const std::string fetched = file().data;
    SetFile(Content(10000, 20 + i), file().attr.mtime.seconds);
    rp_->NoteWrite(file_);  // a write answered while the fetch is out
    Outcome& waiting = reads.back();
    reads.emplace_back();
    Read(0, 10000, &reads.back());  // joins the fetch
    Drain();
    ASSERT_EQ(up_.calls.size(), fetch + 1) << "the test needs the READ to join the fetch";
    up_.Answer(fetch, reply);
    Drain();
    ASSERT_EQ(waiting.forwards, 0);
    ASSERT_EQ(waiting.replies, 1) << "round " << i;
    EXPECT_EQ(waiting.reply().data, fetched);
    ASSERT_EQ(up_.calls.size(), fetch + 2) << "round " << i << ": one fetch for the later READ";
    EXPECT_EQ(up_.calls.back().proc, NFSPROC3_READ);
    EXPECT_EQ(reads.back().replies + reads.back().forwards, 0);
  }
  hold_ = false;
  up_.Answer(up_.calls.size() - 1, Respond(up_.calls.back()));
  Drain();
  ExpectData(reads.back(), 0, 10000);
  EXPECT_EQ(rp_->stats().forwarded, 0u);
  EXPECT_EQ(rp_->stats().overtaken, 4u);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 5u);
}

// 4f. The same for a READ forwarded as is: its reply is not learned when it
// left before the write was answered; one that left after is.
TEST_F(ReadPathTest, ForwardedReplyOlderThanAWriteIsNotLearned) {
  READ3args a;
  const FakeUpstream::Seen seen = ForwardedRead(&a);
  const auto sent = std::chrono::steady_clock::now();
  const std::string old_reply = Respond(seen);
  SetFile(Content(10000, 9), file().attr.mtime.seconds);
  rp_->NoteWrite(file_);
  rp_->LearnForwarded(a, old_reply, 1, sent, ChangeId::FromFattr(file().attr));
  EXPECT_EQ(rp_->stats().overtaken, 1u);
  ExpectData(ReadNow(10, 100), 10, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "nothing was cached: fetched";

  const size_t calls = up_.calls.size();
  rp_->LearnForwarded(a, Respond(seen), 1, std::chrono::steady_clock::now(),
                      ChangeId::FromFattr(file().attr));
  ExpectData(ReadNow(kBlock, 100), kBlock, 100);
  EXPECT_EQ(up_.calls.size(), calls) << "a reply sent after the write is learned";
}

// A READ sent twice (retransmitted after its timeout) whose last send left
// after the write was answered: its reply may answer the first send, made
// before the write, so it is not learned.
TEST_F(ReadPathTest, ForwardedReplyOfAReadSentTwiceIsNotLearned) {
  READ3args a;
  const FakeUpstream::Seen seen = ForwardedRead(&a);
  const std::string old_reply = Respond(seen);
  SetFile(Content(10000, 9), file().attr.mtime.seconds);  // same size and times
  rp_->NoteWrite(file_);
  rp_->LearnForwarded(a, old_reply, 2, std::chrono::steady_clock::now(),
                      ChangeId::FromFattr(file().attr));
  EXPECT_EQ(rp_->stats().overtaken, 1u);
  ExpectData(ReadNow(10, 100), 10, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "nothing was cached: fetched";
}

// 5. Upstream READ sizes follow FSINFO, whatever the client asks.

// 4g. A GETATTR sent to revalidate before a write through the proxy, and
// answered after it, shows the file before the write: a READ that joined it
// (the write acknowledged, the file's lifetime 0 so nothing fresh) must not
// take its size for the file's. Here the write grew the file: answered from
// that GETATTR, the READ past the old end would get no data and EOF.
TEST_F(ReadPathTest, RevalidationOvertakenByAWriteIsNotTheFilesVersion) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  Outcome out;
  Read(10000, 100, user_, &out, &zero_);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  ASSERT_EQ(up_.calls[0].proc, NFSPROC3_GETATTR);
  const std::string before = Respond(up_.calls[0]);  // executed before the write
  SetFile(Content(12000, 8), file().attr.mtime.seconds + 1);
  LearnGetattr(zero_);  // the write's reply: its attributes
  rp_->NoteWrite(file_);
  hold_ = false;
  up_.Answer(0, before);
  Drain();
  ASSERT_EQ(out.replies + out.forwards, 1);
  if (out.replies == 1) {
    ExpectData(out, 10000, 100);
  }
}

// 4h. The same for what the metadata cache learned otherwise since the
// GETATTR left (it goes on the bulk lane; a REMOVE or a client's GETATTR on
// the metadata lane can overtake it): a READ that joined it is answered only
// under attributes the cache took from its reply.
class JoinedRevalidationTest : public ReadPathTest {
 protected:
  // A READ of the first two blocks through `exp`, made while GETATTR call
  // `getattr` (the upstream's last) is held: it joins that GETATTR, which is
  // then answered with `reply`. Returns the READ's outcome.
  Outcome ReadJoiningHeldGetattr(size_t getattr, const std::string& reply, const Export& exp) {
    Outcome out;
    Read(0, 2 * kBlock, user_, &out, &exp);
    Drain();
    EXPECT_EQ(up_.calls.size(), getattr + 1) << "the test needs the READ to join the GETATTR";
    hold_ = false;
    up_.Answer(getattr, reply);
    Drain();
    return out;
  }
};

fattr3 ParentAttr(uint32_t changed_at) {
  fattr3 d = FileAttr(4096, changed_at);
  d.type = NF3DIR;
  d.mode = 0755;
  d.fileid = 7;
  d.nlink = 2;
  return d;
}

TEST_F(JoinedRevalidationTest, AReadAfterARemoveIsNotAnsweredByAGetattrSentBeforeIt) {
  const std::string dir = "DIR-HANDLE-00001";
  char name[] = "f";
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 2 * kBlock), 0, 2 * kBlock);  // blocks cached
  LOOKUP3args look{};
  look.what.dir = Fh(dir);
  look.what.name = name;
  LOOKUP3res lres{};
  lres.status = NFS3_OK;
  lres.LOOKUP3res_u.resok.object = Fh(file_);
  lres.LOOKUP3res_u.resok.obj_attributes = PostOp(file().attr);
  lres.LOOKUP3res_u.resok.dir_attributes = PostOp(ParentAttr(kWall0 - 3600));
  meta_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &look, Xdr(Proc(xdr_LOOKUP3res), lres), exp_,
              CredKeyOf(user_));
  clock_.Advance(std::chrono::seconds(120));  // the file's attributes expire
  const size_t calls = up_.calls.size();
  hold_ = true;
  Outcome first;
  Read(0, 2 * kBlock, &first);
  Drain();
  ASSERT_EQ(up_.calls.size(), calls + 1);
  ASSERT_EQ(up_.calls[calls].proc, NFSPROC3_GETATTR);
  const std::string old_attrs = Respond(up_.calls[calls]);  // executed before the REMOVE
  REMOVE3args rm{};
  rm.object.dir = Fh(dir);
  rm.object.name = name;
  REMOVE3res rres{};
  rres.status = NFS3_OK;
  rres.REMOVE3res_u.resok.dir_wcc.after = PostOp(ParentAttr(kWall0 + 120));
  meta_.Learn(*FindNfsProc(NFSPROC3_REMOVE), &rm, Xdr(Proc(xdr_REMOVE3res), rres), exp_,
              CredKeyOf(user_));
  Outcome after = ReadJoiningHeldGetattr(calls, old_attrs, exp_);  // after the REMOVE's reply
  ASSERT_EQ(after.replies + after.forwards, 1);
  EXPECT_EQ(after.replies, 0) << "the removed file's cached blocks answered a READ after the "
                                 "REMOVE was answered";
}

TEST_F(JoinedRevalidationTest, AReadAfterNewerAttributesIsNotAnsweredByAnOlderGetattr) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 2 * kBlock), 0, 2 * kBlock);  // the first version's blocks
  const size_t calls = up_.calls.size();
  hold_ = true;
  Outcome first;
  Read(0, 2 * kBlock, user_, &first, &zero_);
  Drain();
  ASSERT_EQ(up_.calls.size(), calls + 1);
  ASSERT_EQ(up_.calls[calls].proc, NFSPROC3_GETATTR);
  const std::string old_attrs = Respond(up_.calls[calls]);  // the first version
  SetFile(Content(10000, 5), file().attr.mtime.seconds + 10);  // written at the head office
  LearnGetattr(zero_);  // a client's GETATTR showed it
  Outcome after = ReadJoiningHeldGetattr(calls, old_attrs, zero_);
  ASSERT_EQ(after.replies + after.forwards, 1);
  if (after.replies == 1) ExpectData(after, 0, 2 * kBlock);  // the new version's bytes
}

// With no attributes kept at all (cache.max_attr_entries = 0), the cache
// refuses nothing: each READ revalidates and is answered from blocks.
TEST_F(ReadPathTest, WithoutAttributeEntriesARevalidatedReadIsAnsweredFromBlocks) {
  CacheConfig c;
  c.max_attr_entries = 0;
  meta_.SetLimits(c);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 2 * kBlock), 0, 2 * kBlock);
  Outcome second = ReadNow(0, 2 * kBlock);
  EXPECT_EQ(second.forwards, 0);
  ExpectData(second, 0, 2 * kBlock);
  EXPECT_EQ(CallsOf(NFSPROC3_GETATTR), 2u);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "the blocks were fetched once";
}

// (rule 5) The attributes a READ is answered under are fresh for the export
// it came through: learned through an export whose lifetime is 60 s, they
// do not answer a READ through one (nested, or after a reload) whose
// lifetime is 0, any more than they answer its GETATTR.
TEST_F(ReadPathTest, AttributesAreFreshForTheReadsOwnExport) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);  // attributes through exp_ (60 s)
  ExpectData(ReadNow(0, 100), 0, 100);
  const size_t getattrs = CallsOf(NFSPROC3_GETATTR);
  Outcome out;
  Read(0, 100, user_, &out, &zero_);
  Drain();
  EXPECT_EQ(CallsOf(NFSPROC3_GETATTR), getattrs + 1)
      << "a READ through an export of lifetime 0 answered without asking the upstream";
}

}  // namespace
}  // namespace nfsedge
