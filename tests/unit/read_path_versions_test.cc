// The read path and the versions of a file: revalidation on an export whose
// lifetimes are 0, and disk-tier copies of an older version.

#include "read_path_fixture.h"

namespace nfsedge {
namespace {

using namespace read_path_test;  // NOLINT: test file, the fixture's names throughout.

// Serves a READ of `fh` on `exp` for `cred` (the fixture's Read() uses exp_).
void ReadOn(ReadPath& rp, const std::string& fh, const Export& exp, const OpaqueAuth& cred,
            uint64_t offset, uint32_t count, Outcome* out) {
  READ3args a{};
  a.file = Fh(fh);
  a.offset = offset;
  a.count = count;
  rp.Serve(
      a, exp, cred,
      [out](std::string results) {
        out->replies++;
        out->results = std::move(results);
      },
      [out] { out->forwards++; });
}

// --- An export with lifetime 0 ("always revalidate") -------------------------
//
// docs/consistency.md, 3: "When the lifetime runs out, the proxy revalidates
// the attributes (one small call); if the file did not change, the cached
// data stays and only the attributes crossed the WAN." On an export whose
// lifetimes are 0 the lifetime has always run out: each READ must cost one
// GETATTR, and the blocks of the unchanged file answer it: the attributes
// that GETATTR returned stand for the READ, although the cache does not keep
// them fresh, rather than the READ crossing the WAN as well.
using AlwaysRevalidateReadTest = ReadPathTest;

TEST_F(AlwaysRevalidateReadTest, UnchangedFileIsServedFromBlocksAfterOneGetattr) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  ExpectData(ReadNow(0, 6000), 0, 6000);  // the blocks are cached
  LearnGetattr(zero_);                    // learnt through the lifetime-0 export
  ASSERT_FALSE(meta_.FreshAttributes(file_));
  const size_t calls = up_.calls.size();

  Outcome out;
  ReadOn(*rp_, file_, zero_, user_, 100, 5000, &out);
  Drain();
  EXPECT_EQ(CallsOf(NFSPROC3_GETATTR), 1u) << "the attributes revalidated once";
  EXPECT_EQ(out.forwards, 0) << "the READ crossed the WAN after the GETATTR that proved the "
                                "cached blocks current";
  ExpectData(out, 100, 5000);
  EXPECT_EQ(up_.calls.size(), calls + 1) << "only the attributes crossed the WAN";
}

// The file changes between the GETATTR that revalidated a READ on such an
// export and the fetch: the fetch's reply (another version) is the READ's
// answer as the server gave it, given with the user's ACCESS evidence (here
// still fresh, learnt through an export with a lifetime). Without that
// evidence for the new ctime the READ goes upstream as is, once. (It was
// attempted again under the GETATTR's older attributes, found no blocks of
// them and fetched again, four times, then went upstream as well.)
TEST_F(AlwaysRevalidateReadTest, AFetchShowingANewerVersionAnswersTheRead) {
  for (const bool evidence : {true, false}) {
    SCOPED_TRACE(evidence ? "ACCESS evidence fresh" : "ACCESS evidence of the old ctime only");
    blocks_.DropFile(file_);
    // (Later than the version the first round ended with: an older one
    // would be refused as overtaken.)
    SetFile(Content(10000, 0), kWall0 - 3600 + (evidence ? 0 : 100));
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ, evidence ? &exp_ : &zero_);
    const uint32_t changed = file().attr.mtime.seconds + 10;
    up_.set_responder([&](const FakeUpstream::Seen& s) -> std::optional<std::string> {
      // Another client writes the file right after the GETATTR is answered.
      std::string reply = Respond(s);
      if (s.proc == NFSPROC3_GETATTR) SetFile(Content(file().data.size(), 7), changed);
      return reply;
    });
    const size_t reads = CallsOf(NFSPROC3_READ);
    Outcome out;
    ReadOn(*rp_, file_, zero_, user_, 100, 5000, &out);
    Drain();
    EXPECT_EQ(CallsOf(NFSPROC3_READ) - reads, 1u) << "the READ was fetched again";
    if (evidence) {
      ASSERT_EQ(out.replies, 1);
      EXPECT_EQ(out.forwards, 0);
      EXPECT_EQ(out.reply().data, file().data.substr(100, 5000)) << "what the server gave";
    } else {
      EXPECT_EQ(out.replies, 0);
      EXPECT_EQ(out.forwards, 1);
    }
  }
  EXPECT_EQ(rp_->stats().unconfirmed, 2u);
}

// READs joining a fetch whose reply shows another version. JoinFetch: READ
// A (lifetime-0 export) revalidates the file and fetches (held); the file
// becomes `b_data` of `b_at` and READ B revalidates it and waits on A's
// fetch; the fetch's reply carries `f_data` under the attributes of `f_at`
// (read, then written, then the attributes taken); then the file is
// `b_data` again and everything is answered.
class JoinedFetchTest : public ReadPathTest {
 protected:
  void JoinFetch(const std::string& b_data, uint32_t b_at, const std::string& f_data,
                 uint32_t f_at, Outcome* a, Outcome* b) {
    LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
    hold_ = true;
    ReadOn(*rp_, file_, zero_, user_, 0, 100, a);
    Drain();
    up_.Answer(0, Respond(up_.calls[0]));  // A's GETATTR
    Drain();
    ASSERT_EQ(up_.calls.size(), 2u);  // A's fetch, held
    SetFile(b_data, b_at);
    ReadOn(*rp_, file_, zero_, user_, 0, 100, b);
    Drain();
    ASSERT_EQ(up_.calls.size(), 3u);  // B's GETATTR
    up_.Answer(2, Respond(up_.calls[2]));
    Drain();  // B waits on A's fetch
    SetFile(f_data, f_at);
    const std::string fetched = Respond(up_.calls[1]);
    SetFile(b_data, b_at);
    up_.Answer(1, fetched);
    hold_ = false;
    Drain();
  }
};

// Such a reply does not answer a READ that joined the fetch with a
// revalidation of its own showing another version (a newer one): that READ
// is attempted again under its own attributes.
TEST_F(JoinedFetchTest, AFetchsReplyDoesNotAnswerAReadThatKnowsANewerVersion) {
  const uint32_t t = file().attr.mtime.seconds;
  const std::string v2 = Content(10000, 2), v3 = Content(10000, 3);
  Outcome a, b;
  ASSERT_NO_FATAL_FAILURE(JoinFetch(v3, t + 20, v2, t + 10, &a, &b));
  ASSERT_EQ(a.replies, 1);
  EXPECT_EQ(a.reply().data, v2.substr(0, 100)) << "A is answered as the server gave it";
  ASSERT_EQ(b.replies, 1);
  EXPECT_EQ(b.reply().data, v3.substr(0, 100)) << "B was answered with an older version";
}

// The same when the version the fetch's reply shows is the one the joining
// READ revalidated: the reply's bytes may be from before that version, so
// they answer only the READ the fetch was made for; the other fetches anew.
TEST_F(JoinedFetchTest, AFetchsUnconfirmedBytesDoNotAnswerAReadThatRevalidatedTheirVersion) {
  const uint32_t t = file().attr.mtime.seconds;
  const std::string old_data = file().data, new_data = Content(10000, 5);
  Outcome a, b;
  ASSERT_NO_FATAL_FAILURE(JoinFetch(new_data, t + 10, old_data, t + 10, &a, &b));
  ASSERT_EQ(a.replies, 1);
  EXPECT_EQ(a.reply().data, old_data.substr(0, 100)) << "A is answered as the server gave it";
  ASSERT_EQ(b.replies, 1);
  EXPECT_EQ(b.reply().data, new_data.substr(0, 100))
      << "B was answered with bytes not proved to be of the version it revalidated";
}

// --- Disk blocks of an older version of the file ----------------------------
//
// A block on disk under another version of the file is not at hand: it can
// never be served (DESIGN rule 5). Once a file that was cached (disk_policy
// "all" keeps every block fetched, across restarts) changes at the head
// office, read-ahead still runs ahead of a sequential reader over the cached
// range, and the tree-walk prefetch fetches the file again.
class OldDiskVersionTest : public ReadPathTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsedge-read-versions-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    DiskTierOptions d;
    d.dir = dir_ + "/store";
    d.block_size = kBlock;
    d.threads = 1;
    d.max_queued = 1 << 16;
    StatusOr<std::unique_ptr<DiskTier>> disk = DiskTier::Open(d, posted_.AsFunction());
    ASSERT_TRUE(disk.ok()) << disk.status().ToString();
    disk_ = std::move(*disk);
  }
  void TearDown() override {
    Drain();
    rp_.reset();
    disk_.reset();
    std::filesystem::remove_all(dir_);
  }

  void UseDisk(uint64_t readahead_max) {
    ReadPathOptions o;
    o.readahead_max = readahead_max;
    MakeReadPath(o, disk_.get());
  }

  // The upstream's reply to a READ of [0, count) of file_ as it is now,
  // learned as if forwarded: every block goes to memory and to disk.
  void CacheWholeFile() {
    READ3args a{};
    a.file = Fh(file_);
    a.offset = 0;
    a.count = static_cast<count3>(file().data.size());
    FakeUpstream::Seen seen{
        kNfsProgram, kNfsVersion, NFSPROC3_READ, user_, Xdr(Proc(xdr_READ3args), a), nullptr, std::nullopt};
    rp_->LearnForwarded(a, Respond(seen), 1, std::chrono::steady_clock::now(),
                        ChangeId::FromFattr(file().attr));
  }

  // Serves a READ and runs the loop and the disk tier's callbacks until the
  // client has its answer.
  Outcome ReadWithDisk(uint64_t offset, uint32_t count) {
    Outcome out;
    Read(offset, count, &out);
    Drain();
    EXPECT_TRUE(posted_.RunUntil([&] { return out.replies + out.forwards > 0; }, [&] { Drain(); }));
    return out;
  }

  std::string dir_;
  PostQueue posted_;
  std::unique_ptr<DiskTier> disk_;
};

TEST_F(OldDiskVersionTest, ReadAheadFetchesBlocksWhoseDiskCopyIsAnOlderVersion) {
  UseDisk(256 << 10);
  SetFile(Content(1 << 20, 1), kWall0 - 7200);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  CacheWholeFile();
  ASSERT_TRUE(disk_->MayContain(file_, 200));
  ASSERT_EQ(CallsOf(NFSPROC3_READ), 0u);

  // Changed at the head office: the disk holds only the old version.
  SetFile(Content(1 << 20, 2), kWall0 - 60);
  LearnGetattr(exp_);
  blocks_.DropFile(file_);

  constexpr uint32_t kChunk = 16 << 10;
  for (uint64_t offset = 0; offset < 4 * kChunk; offset += kChunk) {
    ExpectData(ReadWithDisk(offset, kChunk), offset, kChunk);
  }
  EXPECT_GT(rp_->stats().readahead_fetches, 0u)
      << "a sequential reader got no read-ahead: blocks of the old version on disk were taken "
         "for blocks at hand";
  uint64_t beyond = 0;
  for (const SentRead& r : Reads()) beyond = std::max<uint64_t>(beyond, r.offset + r.count);
  EXPECT_GT(beyond, 4 * kChunk) << "an upstream READ beyond what the client read";
}

TEST_F(OldDiskVersionTest, TreePrefetchFetchesAFileWhoseDiskCopyIsAnOlderVersion) {
  UseDisk(0);
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  CacheWholeFile();  // 10000 bytes, blocks 0..2 on disk
  ASSERT_TRUE(disk_->MayContain(file_, 0));

  SetFile(Content(12000, 6), kWall0 - 60);  // changed at the head office
  LearnGetattr(exp_);
  blocks_.DropFile(file_);
  const ChangeId now = ChangeId::FromFattr(file().attr);
  bool done = false;
  EXPECT_TRUE(rp_->PrefetchFile(file_, file().data.size(), now, exp_, user_, [&] { done = true; }))
      << "the tree-walk prefetch skipped a file whose only cached copy is of the old version";
  Drain();
  EXPECT_EQ(CallsOf(NFSPROC3_READ), done ? 1u : 0u);
  EXPECT_TRUE(blocks_.Contains(file_, 0, now)) << "the current version was not prefetched";
}

// --- A reply whose version the proxy did not know before ---------------------
//
// A server reads a READ's data and then takes its post-op attributes: a
// write between the two (another client's) gives the old bytes with the new
// attributes. The proxy keeps blocks only under the version it knew before
// the reply; a READ waiting on the fetch gets what the server gave, and the
// next READ fetches again (else the old bytes would be served under the new
// version until the file changes again, and from disk after a restart).
TEST_F(ReadPathTest, AFetchShowingAnotherVersionAnswersItsWaitersAndIsNotKept) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  const std::string old_data = file().data;
  hold_ = true;
  Outcome out;
  Read(0, 100, &out);
  Drain();
  ASSERT_EQ(up_.calls.size(), 1u);
  const uint32_t changed = file().attr.mtime.seconds + 10;
  SetFile(old_data, changed);  // the old bytes under the new attributes...
  const std::string reply = Respond(up_.calls[0]);
  SetFile(Content(old_data.size(), 7), changed);  // ...of a file that holds the new ones
  up_.Answer(0, reply);
  hold_ = false;
  Drain();
  ASSERT_EQ(out.replies, 1);
  EXPECT_EQ(out.reply().data, old_data.substr(0, 100)) << "what the server gave";
  EXPECT_EQ(rp_->stats().unconfirmed, 1u);
  ExpectData(ReadNow(0, 100), 0, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 2u) << "the old bytes were kept under the new version";
}

// Such a reply drops only what it brought: blocks of the version it shows
// that another fetch confirmed meanwhile stay (each late read-ahead reply
// of a changed file wiped them all, to be fetched again).
TEST_F(ReadPathTest, AFetchShowingANewerVersionKeepsThatVersionsConfirmedBlocks) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  hold_ = true;
  Outcome first;
  Read(0, 100, &first);  // a fetch of block 0 expecting the old version
  Drain();
  ASSERT_EQ(CallsOf(NFSPROC3_READ), 1u);
  SetFile(Content(file().data.size(), 8), file().attr.mtime.seconds + 10);
  LearnGetattr(exp_);
  const ChangeId now = ChangeId::FromFattr(file().attr);
  Outcome second;
  Read(2 * kBlock, 100, &second);  // a fetch of block 2 under the new one
  Drain();
  ASSERT_EQ(CallsOf(NFSPROC3_READ), 2u);
  up_.Answer(1, Respond(up_.calls[1]));
  Drain();
  ASSERT_EQ(second.replies, 1);
  ASSERT_TRUE(blocks_.Contains(file_, 2, now, /*confirmed_only=*/true));
  up_.Answer(0, Respond(up_.calls[0]));  // shows the new version: unconfirmed
  hold_ = false;
  Drain();
  ASSERT_EQ(first.replies, 1);
  EXPECT_EQ(rp_->stats().unconfirmed, 1u);
  EXPECT_TRUE(blocks_.Contains(file_, 2, now, /*confirmed_only=*/true))
      << "the confirmed block was dropped with the unconfirmed ones";
  EXPECT_FALSE(blocks_.Contains(file_, 0, now)) << "the unconfirmed block was kept";
  ExpectData(ReadNow(2 * kBlock, 100), 2 * kBlock, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 2u) << "block 2 fetched again";
}

// The same for a READ forwarded as is.
TEST_F(ReadPathTest, AForwardedReplyShowingAnotherVersionIsNotKept) {
  LearnAccess(user_, ACCESS3_READ, ACCESS3_READ);
  const ChangeId before = ChangeId::FromFattr(file().attr);
  READ3args a{};
  a.file = Fh(file_);
  a.offset = 0;
  a.count = 2 * kBlock;
  FakeUpstream::Seen seen{kNfsProgram, kNfsVersion, NFSPROC3_READ, user_,
                          Xdr(Proc(xdr_READ3args), a), nullptr, std::nullopt};
  SetFile(file().data, file().attr.mtime.seconds + 10);
  rp_->LearnForwarded(a, Respond(seen), 1, std::chrono::steady_clock::now(), before);
  EXPECT_EQ(rp_->stats().unconfirmed, 1u);
  LearnGetattr(exp_);
  ExpectData(ReadNow(0, 100), 0, 100);
  EXPECT_EQ(CallsOf(NFSPROC3_READ), 1u) << "kept under a version not known before";
}

}  // namespace
}  // namespace nfsedge
