// Prefetcher with an in-memory upstream (FakeUpstream, every call held until
// the test answers it) and an event loop driven by hand: what a READDIRPLUS
// listing makes it ask, in which bounds, and what it learns.
#include <algorithm>

#include "prefetcher_fixture.h"

namespace nfsedge {
namespace prefetcher_test {
namespace {

using ProcFh = std::pair<uint32_t, std::string>;

// A file larger than one upstream read (a warm's files go up to
// control.warm_file_bytes) is read whole, one read size a fetch, and counts
// as one file.
TEST_F(PrefetcherTest, AFileLargerThanOneReadIsReadWhole) {
  PrefetchOptions o = Options();
  const uint64_t rs = rp_->read_size(exp_.id());
  ASSERT_GE(rs, kBlock);
  o.small_file_bytes = 8 * rs;
  Make(o);
  root_.clear();
  Add("large", "FH-LARGE", NF3REG, 3 * rs + 10);
  data_["FH-LARGE"] = std::string(3 * rs + 10, 'l');
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  std::vector<uint64_t> offsets;
  for (const Sent& s : Calls()) {
    if (s.proc == NFSPROC3_READ && s.fh == "FH-LARGE") offsets.push_back(s.offset);
  }
  std::sort(offsets.begin(), offsets.end());
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, rs, 2 * rs, 3 * rs}));
  EXPECT_EQ(pf_->stats().files, 1u);
  EXPECT_EQ(pf_->in_flight(), 0u);
  for (uint64_t at = 0; at < 3 * rs + 10; at += kBlock) {
    EXPECT_TRUE(rp_->HasBlockAt("FH-LARGE", at, ChangeId::FromFattr(objects_["FH-LARGE"]))) << at;
  }
}

// An upstream that reads less at once than the proxy asks (its rtmax not
// known yet): each short reply is followed by a fetch from the first block
// it left out, and the file is read whole all the same.
TEST_F(PrefetcherTest, ShortRepliesLeaveNoHoles) {
  PrefetchOptions o = Options();
  const uint64_t rs = rp_->read_size(exp_.id());
  ASSERT_GE(rs, 4 * kBlock);
  o.small_file_bytes = 8 * rs;
  Make(o);
  server_rtmax_ = rs / 4;
  root_.clear();
  const uint64_t size = 2 * rs + 10;
  Add("large", "FH-LARGE", NF3REG, size);
  data_["FH-LARGE"] = std::string(size, 'l');
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  for (uint64_t at = 0; at < size; at += kBlock) {
    EXPECT_TRUE(rp_->HasBlockAt("FH-LARGE", at, ChangeId::FromFattr(objects_["FH-LARGE"]))) << at;
  }
  EXPECT_EQ(pf_->stats().files, 1u);
  EXPECT_EQ(pf_->in_flight(), 0u);
}

// 8. ACCESS for every directory and file, READDIRPLUS for the directory, the
// data of the small file only, with the client's credential.
TEST_F(PrefetcherTest, ListingQueuesAccessListAndSmallFileData) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  std::multiset<ProcFh> want = {
      {NFSPROC3_ACCESS, "FH-SUB"}, {NFSPROC3_READDIRPLUS, "FH-SUB"}, {NFSPROC3_ACCESS, "FH-SMALL"},
      {NFSPROC3_READ, "FH-SMALL"}, {NFSPROC3_ACCESS, "FH-BIG"},
  };
  EXPECT_EQ(Asked(), want);
  for (const Sent& s : Calls()) {
    EXPECT_EQ(s.cred, user_.body) << "prefetch runs with the lister's credential";
    if (s.proc == NFSPROC3_ACCESS) {
      EXPECT_EQ(s.access, kAllAccess);
    }
    if (s.proc == NFSPROC3_READDIRPLUS) {
      EXPECT_EQ(s.cookie, 0u);
    }
    if (s.proc == NFSPROC3_READ) {
      EXPECT_EQ(s.offset, 0u);
      EXPECT_EQ(s.count, kBlock) << "the whole small file, in whole blocks";
    }
  }
  EXPECT_EQ(pf_->stats().access, 3u);
  EXPECT_EQ(pf_->stats().lists, 1u);
  EXPECT_EQ(pf_->stats().files, 1u);
  EXPECT_EQ(pf_->in_flight(), 5u);

  AnswerAll();
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->queued(), 0u);
  EXPECT_EQ(up_.calls.size(), 5u) << "an empty subdirectory adds nothing";
  EXPECT_EQ(pf_->stats().errors, 0u);
  // What was learned serves the client: the small file's data, with the
  // ACCESS evidence the prefetch brought for this credential.
  EXPECT_TRUE(meta_.HasAccess("FH-SMALL", CredKeyOf(user_), kAllAccess));
  EXPECT_FALSE(meta_.HasAccess("FH-SMALL", CredKeyOf(other_), ACCESS3_READ));
  READ3args a{};
  std::string small = "FH-SMALL";
  a.file = Fh(small);
  a.count = 1000;
  int replies = 0, forwards = 0;
  rp_->Serve(
      a, exp_, user_, [&](std::string) { replies++; }, [&] { forwards++; });
  Drain();
  EXPECT_EQ(replies, 1);
  EXPECT_EQ(forwards, 0);
  EXPECT_EQ(up_.calls.size(), 5u) << "served from the prefetched block";
}

// The upstream's queue full (scheduler.max_queued) refuses a call: the job
// waits at the head of the queue, with the rest behind it, and goes once
// the prefetcher resumes. (Each job was popped, refused and lost in turn:
// one refusal emptied the whole queue, and the walk's marks kept the jobs
// from being queued again.)
TEST_F(PrefetcherTest, ACallTheUpstreamsFullQueueRefusesIsSentLater) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  up_.set_refuse_with(ResourceExhausted("queue full"));
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), 0u);
  EXPECT_EQ(pf_->queued(), 5u) << "the ACCESS, list and data jobs were lost";
  EXPECT_GT(pf_->stats().deferred, 0u);
  up_.set_refuse_with(std::nullopt);
  pf_->Resume();
  Drain();
  std::multiset<ProcFh> want = {
      {NFSPROC3_ACCESS, "FH-SUB"}, {NFSPROC3_READDIRPLUS, "FH-SUB"}, {NFSPROC3_ACCESS, "FH-SMALL"},
      {NFSPROC3_READ, "FH-SMALL"}, {NFSPROC3_ACCESS, "FH-BIG"},
  };
  EXPECT_EQ(Asked(), want);
  AnswerAll();
  EXPECT_EQ(pf_->queued(), 0u);
}

// The same for a file's data: its fetch refused, the job waits (it was
// lost, and its mark kept it from being queued again), and goes once a
// call in flight finishes.
TEST_F(PrefetcherTest, AFileFetchTheUpstreamRefusesIsSentLater) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  up_.set_refuse_with(ResourceExhausted("queue full"), NFSPROC3_READ);
  List(*root, user_);
  Drain();
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-SMALL"}), 0u);
  EXPECT_EQ(pf_->queued(), 2u) << "the data job (and the one behind it) lost";
  up_.set_refuse_with(std::nullopt);
  AnswerAll();  // the calls in flight finish: the queue goes on
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-SMALL"}), 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-BIG"}), 1u);
  EXPECT_EQ(pf_->queued(), 0u);
}

// `nfsedge warm` (data_through_own_caller): file data goes through the
// prefetcher's own caller (the background class) like its listings, not the
// read path's (client data): no client waits for it.
TEST_F(PrefetcherTest, AWarmsFileDataGoesThroughItsOwnCaller) {
  FakeUpstream background(base_.get());
  PrefetchOptions o = Options();
  o.data_through_own_caller = true;
  pf_ = std::make_unique<Prefetcher>(
      prefetch_clock_, meta_, rp_.get(), background,
      [](const NfsProc&, const void*, RpcReply*, const Export&, const OpaqueAuth&) {}, o);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  size_t reads = 0;
  for (const FakeUpstream::Seen& c : background.calls) reads += c.proc == NFSPROC3_READ;
  EXPECT_EQ(reads, 1u) << "the small file's data was not sent through the warm's caller";
  EXPECT_EQ(up_.calls.size(), 0u) << "sent as client data";
  pf_.reset();  // before `background`, which holds its callbacks
}

// A symlink in a listing: its target is read with the lister's credential,
// once per credential, and then answers that credential's READLINK.
TEST_F(PrefetcherTest, ASymlinksTargetIsReadForTheListersCredential) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage(/*with_link=*/true);
  List(*root, user_);
  Drain();
  EXPECT_EQ(Asked().count({NFSPROC3_READLINK, "FH-LINK"}), 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-LINK"}), 0u) << "a link's mode means nothing";
  AnswerAll();
  EXPECT_EQ(pf_->stats().links, 1u);
  const ChangeId version = ChangeId::FromFattr(objects_["FH-LINK"]);
  EXPECT_TRUE(meta_.HasLink("FH-LINK", version, CredKeyOf(user_)));
  EXPECT_FALSE(meta_.HasLink("FH-LINK", version, CredKeyOf(other_)));
  std::string link = "FH-LINK";
  READLINK3args a{Fh(link)};
  std::optional<std::string> r =
      meta_.Answer(*FindNfsProc(NFSPROC3_READLINK), &a, exp_, CredKeyOf(user_));
  ASSERT_TRUE(r) << "answered from what the walk read";
  XdrValue<READLINK3res> res(Proc(xdr_READLINK3res));
  ASSERT_TRUE(res.Decode(*r));
  EXPECT_EQ(std::string(res->READLINK3res_u.resok.data), "small");
  // Listed again: nothing more for this credential; another reads its own.
  const size_t calls = up_.calls.size();
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), calls);
  List(*root, other_);
  AnswerAll();
  EXPECT_EQ(pf_->stats().links, 2u);
  EXPECT_TRUE(meta_.HasLink("FH-LINK", version, CredKeyOf(other_)));
  // Nothing to read when the link cache keeps nothing.
  CacheConfig none;
  none.max_link_bytes = 0;
  meta_.SetLimits(none);
  List(*root, SysCred(3000, 3000));
  AnswerAll();
  EXPECT_EQ(pf_->stats().links, 2u);
}

// A directory listed in several pages: the next page continues from the last
// cookie with the cookie verifier, until eof.
TEST_F(PrefetcherTest, NextPageUsesLastCookieAndVerifier) {
  Make(Options());
  std::vector<Entry> first = {EntryOf("f1", "FH-F1", NF3REG, 1 << 20),
                              EntryOf("f2", "FH-F2", NF3REG, 1 << 20)};
  const uint64_t last_cookie = first.back().cookie;
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(std::move(first), false, "VERF-SUB");
  pages_[{"FH-SUB", last_cookie}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("f3", "FH-F3", NF3REG, 1 << 20)}, true, "VERF-SUB");
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();

  std::vector<Sent> lists;
  for (const Sent& s : Calls()) {
    if (s.proc == NFSPROC3_READDIRPLUS) lists.push_back(s);
  }
  ASSERT_EQ(lists.size(), 2u) << "page one, then page two (eof): no more";
  EXPECT_EQ(lists[0].fh, "FH-SUB");
  EXPECT_EQ(lists[0].cookie, 0u);
  EXPECT_EQ(lists[1].fh, "FH-SUB");
  EXPECT_EQ(lists[1].cookie, last_cookie);
  EXPECT_EQ(lists[1].verf, "VERF-SUB");
  // The entries of both pages were walked.
  std::multiset<ProcFh> asked = Asked();
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F1"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F2"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-F3"}), 1u);
  EXPECT_EQ(pf_->stats().lists, 2u);
  // Every reply went through the learning path.
  size_t readdirplus_learned = 0;
  for (uint32_t p : learned_) readdirplus_learned += p == NFSPROC3_READDIRPLUS;
  EXPECT_EQ(readdirplus_learned, 2u);
}

// A server that answers a page "not at the end" without moving on (its last
// entry's cookie is the one asked from) would be asked the same page for as
// long as the walk lasts: the listing stops there, counted as an error.
TEST_F(PrefetcherTest, APageThatDoesNotMoveOnEndsTheListing) {
  Make(Options());
  std::vector<Entry> first = {EntryOf("f1", "FH-F1", NF3REG, 1 << 20)};
  const uint64_t cookie = first.back().cookie;
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(std::move(first), false, "VERF-SUB");
  std::vector<Entry> again = {EntryOf("f2", "FH-F2", NF3REG, 1 << 20)};
  again.back().cookie = cookie;  // the same cookie again, and not eof
  pages_[{"FH-SUB", cookie}] = std::make_unique<Page>(std::move(again), false, "VERF-SUB");
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  for (int i = 0; i < 100 && AnswerNext(); ++i) {
  }
  size_t lists = 0;
  for (const Sent& s : Calls()) lists += s.proc == NFSPROC3_READDIRPLUS && s.fh == "FH-SUB";
  EXPECT_EQ(lists, 2u) << "page one, the page that does not move on, and no more";
  EXPECT_EQ(pf_->stats().errors, 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F2"}), 1u) << "its entries were walked";
}

// Cookies that go round (page one leads to page two, which leads back to
// page one) stop at the 4096th page.
TEST_F(PrefetcherTest, CookiesGoingRoundStopAtThePageLimit) {
  Make(Options());
  std::vector<Entry> one = {EntryOf("f1", "FH-F1", NF3REG, 1 << 20)};
  std::vector<Entry> two = {EntryOf("f2", "FH-F2", NF3REG, 1 << 20)};
  const uint64_t c1 = one.back().cookie;
  const uint64_t c2 = two.back().cookie;
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(one, false, "VERF-SUB");   // to c1
  pages_[{"FH-SUB", c1}] = std::make_unique<Page>(two, false, "VERF-SUB");  // to c2
  pages_[{"FH-SUB", c2}] = std::make_unique<Page>(one, false, "VERF-SUB");  // to c1 again
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  for (int i = 0; i < 10000 && AnswerNext(); ++i) {
  }
  size_t lists = 0;
  for (const Sent& s : Calls()) lists += s.proc == NFSPROC3_READDIRPLUS && s.fh == "FH-SUB";
  EXPECT_EQ(lists, 4096u);
  EXPECT_EQ(pf_->stats().errors, 1u);
}

// At most max_in_flight calls are outstanding at any time, data fetches included.
TEST_F(PrefetcherTest, InFlightBound) {
  PrefetchOptions o = Options();
  o.max_in_flight = 2;
  Make(o);
  for (int i = 0; i < 3; ++i) {
    const std::string fh = "FH-S" + std::to_string(i);
    Add("s" + std::to_string(i), fh, NF3REG, 10);
    data_[fh] = std::string(10, static_cast<char>('a' + i));
  }
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), 2u);
  EXPECT_EQ(pf_->in_flight(), 2u);
  size_t max_outstanding = Outstanding();
  while (AnswerNext()) {
    max_outstanding = std::max(max_outstanding, Outstanding());
    EXPECT_LE(pf_->in_flight(), 2u);
  }
  EXPECT_EQ(max_outstanding, 2u);
  // Everything was sent in the end: 6 ACCESS, 1 READDIRPLUS, 4 small files.
  EXPECT_EQ(up_.calls.size(), 11u);
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->queued(), 0u);
}

// Directories are listed down to max_depth levels below the client's listing.
TEST_F(PrefetcherTest, DepthLimit) {
  PrefetchOptions o = Options();
  o.max_depth = 1;
  Make(o);
  pages_[{"FH-SUB", 0}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("deeper", "FH-DEEPER", NF3DIR, 4096)}, true);
  pages_[{"FH-DEEPER", 0}] = std::make_unique<Page>(
      std::vector<Entry>{EntryOf("deepest", "FH-DEEPEST", NF3REG, 1 << 20)}, true);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  std::multiset<ProcFh> asked = Asked();
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-SUB"}), 1u);
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-DEEPER"}), 1u) << "its entries are still asked";
  EXPECT_EQ(asked.count({NFSPROC3_READDIRPLUS, "FH-DEEPER"}), 0u) << "two levels below";
  EXPECT_EQ(asked.count({NFSPROC3_ACCESS, "FH-DEEPEST"}), 0u);
}

TEST_F(PrefetcherTest, DepthZeroListsNothing) {
  PrefetchOptions o = Options();
  o.max_depth = 0;
  Make(o);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READDIRPLUS, "FH-SUB"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SUB"}), 1u);
  EXPECT_EQ(pf_->stats().lists, 0u);
}

// Each object once per credential; another credential gets its own.
TEST_F(PrefetcherTest, SameObjectOncePerCredential) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  const size_t calls = up_.calls.size();
  const uint64_t queued = pf_->stats().queued;
  List(*root, user_);
  List(*root, user_, 3);  // the same objects met again deeper down
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), calls);
  EXPECT_EQ(pf_->stats().queued, queued);

  List(*root, other_);
  Drain();
  size_t others = 0;
  for (const Sent& s : Calls()) {
    if (s.cred != other_.body) continue;
    others++;
    EXPECT_NE(s.proc, static_cast<uint32_t>(NFSPROC3_READ)) << "the data is cached already";
  }
  EXPECT_EQ(others, 4u) << "ACCESS x3 and READDIRPLUS for the other credential";
}

// ACCESS already known for the credential (every bit) is not asked again.
TEST_F(PrefetcherTest, KnownAccessIsNotAsked) {
  Make(Options());
  const std::string big = "FH-BIG";
  ACCESS3args args{Fh(big), kAllAccess};
  ACCESS3res res{};
  res.status = NFS3_OK;
  res.ACCESS3res_u.resok.obj_attributes = PostOp(objects_["FH-BIG"]);
  res.ACCESS3res_u.resok.access = ACCESS3_READ;
  meta_.Learn(*FindNfsProc(NFSPROC3_ACCESS), &args, Xdr(Proc(xdr_ACCESS3res), res), exp_,
              CredKeyOf(user_));
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-BIG"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SMALL"}), 1u);
}

// Beyond max_queue, jobs are dropped and counted.
TEST_F(PrefetcherTest, QueueBoundDrops) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  o.max_queue = 3;
  o.small_file_bytes = 0;  // ACCESS only
  Make(o);
  root_.clear();
  for (int i = 0; i < 6; ++i) Add("f" + std::to_string(i), "FH-F" + std::to_string(i), NF3REG, 1);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(pf_->stats().dropped, 3u);
  EXPECT_EQ(pf_->stats().queued, 3u);
  EXPECT_EQ(up_.calls.size(), 1u);
  EXPECT_EQ(pf_->queued(), 2u);
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), 3u) << "only what was queued";
  EXPECT_EQ(pf_->stats().access, 3u);
}

// A job dropped for the queue bound was never prefetched: a later listing,
// once there is room, prefetches it ("a bounded set of what was already
// prefetched", prefetcher.h).
TEST_F(PrefetcherTest, DroppedJobIsPrefetchedLater) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  o.max_queue = 1;
  o.small_file_bytes = 0;
  Make(o);
  root_.clear();
  Add("f0", "FH-F0", NF3REG, 1);
  Add("f1", "FH-F1", NF3REG, 1);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  ASSERT_EQ(pf_->stats().dropped, 1u);
  ASSERT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F1"}), 0u);
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F0"}), 1u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-F1"}), 1u)
      << "the dropped job was remembered as prefetched";
}

// Calls without a usable reply are counted and free their slot.
TEST_F(PrefetcherTest, ErrorsFreeTheirSlot) {
  PrefetchOptions o = Options();
  o.max_in_flight = 1;
  Make(o);
  up_.set_fail_with(Timeout("test"));
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_EQ(up_.calls.size(), 5u) << "each failure lets the next job go";
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(pf_->stats().errors, 4u) << "ACCESS x3 and READDIRPLUS (the READ is ReadPath's)";
  EXPECT_TRUE(learned_.empty());
  up_.set_fail_with(std::nullopt);
  for (size_t i = 0; i < up_.calls.size(); ++i) answered_.insert(i);  // all failed already
}

// A walk that comes back to a directory listed before (a second tar of the
// tree): its listing is asked again, once, iff the cached one is no longer
// whole and fresh; the ACCESS and data jobs below it are not (ACCESS
// evidence answers again once fresh attributes show the same ctime).
TEST_F(PrefetcherTest, AListingNoLongerFreshIsListedAgain) {
  std::unique_ptr<Page> root = WalkedWithAFileInSub();
  auto lists = [&] { return Asked().count({NFSPROC3_READDIRPLUS, "FH-SUB"}); };
  ASSERT_EQ(lists(), 1u);
  ASSERT_TRUE(meta_.ListingFresh("FH-SUB"));
  const size_t calls = up_.calls.size();

  clock_.Advance(std::chrono::seconds(30));
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(up_.calls.size(), calls) << "fresh (lifetimes of 60 s): nothing again";

  clock_.Advance(std::chrono::seconds(40));
  EXPECT_FALSE(meta_.ListingFresh("FH-SUB"));
  List(*root, user_);
  List(*root, user_);  // met again at once: the listing on its way is enough
  Drain();
  EXPECT_EQ(lists(), 2u);
  AnswerAll();
  EXPECT_EQ(lists(), 2u);
  EXPECT_EQ(up_.calls.size(), calls + 1) << "only the listing";
  EXPECT_EQ(pf_->stats().relists, 1u);
  EXPECT_TRUE(meta_.ListingFresh("FH-SUB"));
}

// The cached listing goes stale through one entry's attributes: asked again.
// An export whose lifetimes are zero never has a fresh listing: asked again
// at most once a second, not at every listing of the parent.
TEST_F(PrefetcherTest, StaleEntryAttributesListAgainAtMostOnceASecond) {
  std::unique_ptr<Page> root = WalkedWithAFileInSub();
  meta_.Forget("FH-F");
  EXPECT_FALSE(meta_.ListingFresh("FH-SUB"));
  auto lists = [&] { return Asked().count({NFSPROC3_READDIRPLUS, "FH-SUB"}); };
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(lists(), 1u) << "queued less than a second ago";
  clock_.Advance(std::chrono::seconds(1));
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(lists(), 2u);
  EXPECT_TRUE(meta_.ListingFresh("FH-SUB"));
}

// A client READDIRPLUS of a page the prefetcher is fetching for the same
// credential waits for its reply (success or failure), once; any other
// page, directory or credential does not.
TEST_F(PrefetcherTest, AClientListingWaitsForThePageOnItsWay) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  int served = 0;
  EXPECT_TRUE(pf_->AwaitListing("FH-SUB", 0, user_, exp_, [&] { served++; }));
  EXPECT_TRUE(pf_->AwaitListing("FH-SUB", 0, user_, exp_, [&] { served++; }));
  EXPECT_FALSE(pf_->AwaitListing("FH-SUB", 0, other_, exp_, [&] { served += 100; }));
  EXPECT_FALSE(pf_->AwaitListing("FH-SUB", 7, user_, exp_, [&] { served += 100; }));
  EXPECT_FALSE(pf_->AwaitListing("FH-ROOT", 0, user_, exp_, [&] { served += 100; }));
  // Nor through an export that keeps no listings: the page would not be
  // stored, and the client's call would go upstream after it anyway.
  ExportConfig no_listings = MakeExportConfig();
  no_listings.acdirmin = no_listings.acdirmax = 0;
  const Export uncached(5, no_listings);
  EXPECT_FALSE(pf_->AwaitListing("FH-SUB", 0, user_, uncached, [&] { served += 100; }));
  EXPECT_EQ(pf_->stats().awaited, 2u);
  EXPECT_EQ(served, 0) << "not before the reply";
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc != NFSPROC3_READDIRPLUS) continue;
    READDIRPLUS3res res{};
    res.status = NFS3ERR_IO;  // a failure releases the waiters too
    answered_.insert(i);
    up_.Answer(i, Xdr(Proc(xdr_READDIRPLUS3res), res));
  }
  Drain();
  EXPECT_EQ(served, 2);
  EXPECT_FALSE(pf_->AwaitListing("FH-SUB", 0, user_, exp_, [&] { served += 100; }));
  AnswerAll();
  EXPECT_EQ(served, 2);
}

// A page still waiting in the scheduler (background calls queued behind
// bulk data) is not awaited: the client's own listing goes at once.
TEST_F(PrefetcherTest, AClientListingDoesNotWaitForAPageStillQueued) {
  Make(Options());
  bool queued = true;
  pf_->SetBackgroundWaiting([&queued] { return queued; });
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_FALSE(pf_->AwaitListing("FH-SUB", 0, user_, exp_, [] { ADD_FAILURE() << "kept"; }));
  queued = false;  // it left
  int served = 0;
  EXPECT_TRUE(pf_->AwaitListing("FH-SUB", 0, user_, exp_, [&] { served++; }));
  AnswerAll();
  EXPECT_EQ(served, 1);
}

// An NFS error to READDIRPLUS is counted; nothing below it is walked.
TEST_F(PrefetcherTest, ListingErrorIsCounted) {
  Make(Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  for (size_t i = 0; i < up_.calls.size(); ++i) {
    if (up_.calls[i].proc != NFSPROC3_READDIRPLUS) continue;
    READDIRPLUS3res res{};
    res.status = NFS3ERR_ACCES;
    answered_.insert(i);
    up_.Answer(i, Xdr(Proc(xdr_READDIRPLUS3res), res));
  }
  Drain();
  AnswerAll();
  EXPECT_EQ(pf_->stats().errors, 1u);
  EXPECT_EQ(pf_->in_flight(), 0u);
  EXPECT_EQ(up_.calls.size(), 5u);
}

TEST_F(PrefetcherTest, DisabledDoesNothing) {
  PrefetchOptions o = Options();
  o.enabled = false;
  Make(o);
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  Drain();
  EXPECT_TRUE(up_.calls.empty());
  EXPECT_EQ(pf_->stats().queued, 0u);
}

// Without a ReadPath (no data cache) there is no data prefetch.
TEST_F(PrefetcherTest, NoReadPathNoData) {
  pf_ = std::make_unique<Prefetcher>(
      clock_, meta_, nullptr, up_,
      [](const NfsProc&, const void*, RpcReply*, const Export&, const OpaqueAuth&) {}, Options());
  std::unique_ptr<Page> root = RootPage();
  List(*root, user_);
  AnswerAll();
  EXPECT_EQ(Asked().count({NFSPROC3_READ, "FH-SMALL"}), 0u);
  EXPECT_EQ(Asked().count({NFSPROC3_ACCESS, "FH-SMALL"}), 1u);
}

// Refresh-ahead (proxy/refresher.h): entries clients used, about to expire.
class RefreshAheadTest : public PrefetcherTest {
 protected:
  // FH-SMALL and FH-BIG (in FH-ROOT) and FH-LONE (alone in FH-SUB), learned
  // and used by clients, all handed out.
  void SetUp() override {
    std::unique_ptr<Page> page = RootPage();
    const std::string root = "FH-ROOT", sub = "FH-SUB";
    READDIRPLUS3args list{};
    list.dir = Fh(root);
    meta_.Learn(*FindNfsProc(NFSPROC3_READDIRPLUS), &list, page->Results(), exp_,
                CredKeyOf(user_));
    pages_[{"FH-ROOT", 0}] = std::move(page);
    objects_["FH-LONE"] = Attr(NF3REG, 5, 500);
    LOOKUP3args look{};
    look.what.dir = Fh(sub);
    look.what.name = const_cast<char*>("lone");
    LOOKUP3res found{};
    found.status = NFS3_OK;
    const std::string lone = "FH-LONE";
    found.LOOKUP3res_u.resok.object = Fh(lone);
    found.LOOKUP3res_u.resok.obj_attributes = PostOp(objects_["FH-LONE"]);
    found.LOOKUP3res_u.resok.dir_attributes = PostOp(objects_["FH-SUB"]);
    meta_.Learn(*FindNfsProc(NFSPROC3_LOOKUP), &look, Xdr(Proc(xdr_LOOKUP3res), found), exp_,
                CredKeyOf(user_));
    for (const char* fh : {"FH-SMALL", "FH-BIG", "FH-LONE"}) {
      ASSERT_TRUE(meta_.FreshAttributes(fh)) << fh;
    }
    ASSERT_EQ(meta_.ParentOf("FH-SMALL").value_or("none"), "FH-ROOT");
    ASSERT_EQ(meta_.ParentOf("FH-LONE").value_or("none"), "FH-SUB");
    for (const char* fh : {"FH-ROOT", "FH-SUB", "FH-SMALL", "FH-BIG", "FH-LONE"}) {
      handles_.Add(fh, 0, std::string(fh) == "FH-ROOT");
    }
    options_.window = std::chrono::hours(1);  // every used entry is due
    options_.period = std::chrono::milliseconds(1);
  }
  std::unique_ptr<Refresher> MakeRefresher() {
    return std::make_unique<Refresher>(base_.get(), meta_, handles_, exports_, up_, options_);
  }

  HandleRegistry handles_{100};
  ExportTable exports_{{MakeExportConfig()}};
  RefresherOptions options_;
};

// Entries that share a directory are revalidated by one READDIRPLUS of it,
// which brings them all; an entry alone in its directory by a GETATTR.
TEST_F(RefreshAheadTest, ListsADirectoryInsteadOfAGetattrPerEntry) {
  {
    std::unique_ptr<Refresher> r = MakeRefresher();
    r->Start();
    for (int i = 0; i < 2000 && up_.calls.size() < 2; ++i) {
      event_base_loop(base_.get(), EVLOOP_ONCE);
    }
    EXPECT_EQ(Asked(), (std::multiset<ProcFh>{{NFSPROC3_READDIRPLUS, "FH-ROOT"},
                                              {NFSPROC3_GETATTR, "FH-LONE"}}));
    EXPECT_EQ(r->listings(), 1u);
    // The answers refresh the entries: they are not asked again.
    for (size_t i = 0; i < up_.calls.size(); ++i) {
      answered_.insert(i);
      up_.Answer(i, Respond(i));
    }
    for (int i = 0; i < 50; ++i) event_base_loop(base_.get(), EVLOOP_ONCE);
    EXPECT_EQ(up_.calls.size(), 2u);
  }
  Drain();
}

// One call at a time: the entries the first round had no room for are
// refreshed in the rounds after it (they were dropped until they expired).
TEST_F(RefreshAheadTest, CandidatesWithoutRoomWaitForTheNextRound) {
  options_.max_in_flight = 1;
  {
    std::unique_ptr<Refresher> r = MakeRefresher();
    r->Start();
    for (int i = 0; i < 2000 && Asked().count({NFSPROC3_GETATTR, "FH-LONE"}) == 0; ++i) {
      event_base_loop(base_.get(), EVLOOP_ONCE);
      for (size_t c = 0; c < up_.calls.size(); ++c) {
        if (answered_.insert(c).second) up_.Answer(c, Respond(c));
      }
    }
    EXPECT_EQ(Asked().count({NFSPROC3_READDIRPLUS, "FH-ROOT"}), 1u);
    EXPECT_EQ(Asked().count({NFSPROC3_GETATTR, "FH-LONE"}), 1u);
    // Answered while the refresher lives.
    for (size_t c = 0; c < up_.calls.size(); ++c) {
      if (answered_.insert(c).second) up_.Answer(c, Respond(c));
    }
    for (int i = 0; i < 50; ++i) event_base_loop(base_.get(), EVLOOP_ONCE);
  }
  Drain();
}

}  // namespace
}  // namespace prefetcher_test
}  // namespace nfsedge
