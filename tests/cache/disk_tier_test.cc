#include "cache/disk_tier.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "cache/cache_key.h"
#include "tests/cache/failing_wal_fs.h"

namespace nfsedge {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kBlockSize = 4096;

// The owner's event loop, played by the test thread: closures posted from any
// thread are queued and run by RunUntil(). Hold() makes posts from other
// threads (the pool) wait, so that a test can keep the pool busy.
class TestLoop {
 public:
  PostFunction Poster() {
    return [this](std::function<void()> fn) { Post(std::move(fn)); };
  }

  void Post(std::function<void()> fn) {
    std::unique_lock<std::mutex> l(mu_);
    if (hold_ && std::this_thread::get_id() != owner_) {
      held_++;
      cv_.notify_all();
      cv_.wait(l, [this] { return !hold_; });
    }
    queue_.push_back(std::move(fn));
    cv_.notify_all();
  }

  // Runs posted closures until `done` holds. Returns false iff it does not
  // within a generous deadline.
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        if (!cv_.wait_until(l, deadline, [this] { return !queue_.empty(); })) return false;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
    return true;
  }

  // Runs what is queued now.
  void RunPending() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
      }
      fn();
    }
  }

  void Hold() {
    std::unique_lock<std::mutex> l(mu_);
    hold_ = true;
  }
  // Returns true iff a pool thread is waiting in Post() within the deadline.
  bool WaitHeld() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(20), [this] { return held_ > 0; });
  }
  void Release() {
    std::unique_lock<std::mutex> l(mu_);
    hold_ = false;
    cv_.notify_all();
  }

 private:
  const std::thread::id owner_ = std::this_thread::get_id();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool hold_ = false;
  int held_ = 0;
};

ChangeId Version(uint32_t mtime) {
  ChangeId v;
  v.size = 1 << 20;
  v.mtime = {mtime, 7};
  v.ctime = {mtime, 9};
  return v;
}

const ChangeId kV1 = Version(100);
const ChangeId kV2 = Version(200);

Block Full(const ChangeId& v, char fill) {
  Block b;
  b.version = v;
  b.data.assign(kBlockSize, fill);
  return b;
}

class DiskTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/disk_tier_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/store";
  }

  void TearDown() override {
    tier_.reset();
    loop_.RunPending();
    fs::remove_all(root_);
  }

  DiskTierOptions Options() {
    DiskTierOptions o;
    o.dir = dir_;
    o.block_size = kBlockSize;
    o.max_bytes = 1 << 20;
    return o;
  }

  void Open(const DiskTierOptions& o) {
    tier_.reset();
    StatusOr<std::unique_ptr<DiskTier>> t = DiskTier::Open(o, loop_.Poster());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tier_ = std::move(*t);
  }
  void Open() { Open(Options()); }

  // Closes the tier (its pool finishes its work) and runs what it posted.
  void Close() {
    tier_.reset();
    loop_.RunPending();
  }

  std::optional<Block> Get(std::string_view handle, uint64_t index, const ChangeId& v) {
    bool called = false;
    std::optional<Block> out;
    tier_->Get(handle, index, v, [&](std::optional<Block> b) {
      called = true;
      out = std::move(b);
    });
    EXPECT_TRUE(loop_.RunUntil([&] { return called; }));
    return out;
  }

  // Runs `fn` on the raw RocksDB store in dir_ (the tier must be closed).
  void WithRawDb(const std::function<void(rocksdb::DB*)>& fn, bool create = false) {
    rocksdb::Options o;
    o.create_if_missing = create;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir_, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    fn(db.get());
    ASSERT_TRUE(db->Close().ok());
  }

  // With the only pool thread kept busy (it blocks posting a Get's result),
  // puts of blocks 1, 2 and 3 queue behind it: the third is dropped, the
  // first two are stored once the thread goes on, and the third fits again.
  void ThirdQueuedPutIsDropped(DiskTierOptions o) {
    o.threads = 1;
    Open(o);
    DiskTier& tier = *tier_;
    tier.Put("fh", 0, Full(kV1, '0'));
    loop_.Hold();
    bool got = false;
    tier.Get("fh", 0, kV1, [&](std::optional<Block> b) { got = b.has_value(); });
    ASSERT_TRUE(loop_.WaitHeld());
    tier.Put("fh", 1, Full(kV1, '1'));
    tier.Put("fh", 2, Full(kV1, '2'));
    tier.Put("fh", 3, Full(kV1, '3'));  // two already wait
    EXPECT_EQ(tier.stats().dropped_puts, 1u);
    EXPECT_EQ(tier.stats().puts, 3u);
    EXPECT_FALSE(tier.MayContain("fh", 3));
    loop_.Release();
    ASSERT_TRUE(loop_.RunUntil([&] { return got; }));
    EXPECT_TRUE(Get("fh", 1, kV1));
    EXPECT_TRUE(Get("fh", 2, kV1));
    tier.Put("fh", 3, Full(kV1, '3'));  // room again
    EXPECT_TRUE(Get("fh", 3, kV1));
    EXPECT_EQ(tier.stats().dropped_puts, 1u);
  }

  TestLoop loop_;
  std::string root_;
  std::string dir_;
  std::unique_ptr<DiskTier> tier_;
};

TEST_F(DiskTierTest, RoundTrip) {
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  Block partial;
  partial.version = kV1;
  partial.data = "tail";
  partial.eof = true;
  tier_->Put("fh", 0, Full(kV1, 'a'));
  tier_->Put("fh", 1, partial);
  EXPECT_TRUE(tier_->MayContain("fh", 0));
  EXPECT_TRUE(tier_->MayContain("fh", 1));
  EXPECT_FALSE(tier_->MayContain("fh", 2));
  EXPECT_FALSE(tier_->MayContain("other", 0));

  std::optional<Block> b = Get("fh", 0, kV1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->data, std::string(kBlockSize, 'a'));
  EXPECT_FALSE(b->eof);
  EXPECT_EQ(b->version, kV1);
  b = Get("fh", 1, kV1);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->data, "tail");
  EXPECT_TRUE(b->eof);

  EXPECT_FALSE(Get("fh", 2, kV1));
  EXPECT_EQ(tier_->stats().hits, 2u);
  EXPECT_EQ(tier_->stats().misses, 1u);
  EXPECT_EQ(tier_->stats().puts, 2u);
  EXPECT_EQ(tier_->stats().entries, 2u);
  EXPECT_GT(tier_->stats().bytes, kBlockSize + 4u);
  EXPECT_EQ(tier_->stats().errors, 0u);
}

TEST_F(DiskTierTest, OtherVersionIsAMissAndIsDeleted) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_FALSE(Get("fh", 0, kV2));
  EXPECT_EQ(tier_->stats().stale, 1u);
  EXPECT_EQ(tier_->stats().hits, 0u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
  EXPECT_EQ(tier_->stats().entries, 0u);
  EXPECT_FALSE(Get("fh", 0, kV1));  // deleted, not kept for the old version
  Close();
  Open();
  EXPECT_FALSE(tier_->MayContain("fh", 0));
}

TEST_F(DiskTierTest, SameVersionIsNotWrittenTwiceAndBadShapesAreRejected) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  tier_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_EQ(tier_->stats().puts, 1u);
  EXPECT_EQ(tier_->stats().unchanged, 1u);
  tier_->Put("fh", 0, Full(kV2, 'b'));  // a new version replaces
  EXPECT_EQ(tier_->stats().puts, 2u);
  EXPECT_EQ(tier_->stats().entries, 1u);
  std::optional<Block> b = Get("fh", 0, kV2);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->data[0], 'b');

  Block short_not_eof;
  short_not_eof.version = kV1;
  short_not_eof.data = "abc";
  tier_->Put("fh", 1, short_not_eof);
  Block too_long = Full(kV1, 'x');
  too_long.data.push_back('x');
  too_long.eof = true;
  tier_->Put("fh", 2, too_long);
  // Nor a block whose bytes are not proved to be of its version (kept in
  // memory for the READs waiting on its fetch only).
  Block unconfirmed = Full(kV1, 'u');
  unconfirmed.unconfirmed = true;
  tier_->Put("fh", 3, unconfirmed);
  EXPECT_EQ(tier_->stats().rejected, 3u);
  EXPECT_FALSE(tier_->MayContain("fh", 1));
  EXPECT_FALSE(tier_->MayContain("fh", 2));
  EXPECT_FALSE(tier_->MayContain("fh", 3));
}

TEST_F(DiskTierTest, RestartFindsTheBlocksAndTheirOrder) {
  Open();
  tier_->Put("a", 0, Full(kV1, '0'));
  tier_->Put("a", 1, Full(kV1, '1'));
  tier_->Put("b", 0, Full(kV2, 'b'));
  ASSERT_TRUE(Get("a", 0, kV1));  // now a/1 is the least recently used
  const uint64_t bytes = tier_->stats().bytes;
  const uint64_t charge = bytes / 3;
  Close();

  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  EXPECT_EQ(tier_->stats().entries, 3u);
  EXPECT_EQ(tier_->stats().bytes, bytes);
  EXPECT_TRUE(tier_->MayContain("a", 1));
  std::optional<Block> b = Get("b", 0, kV2);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->data, std::string(kBlockSize, 'b'));
  Close();

  // Room for two: the least recently used before the restart goes.
  DiskTierOptions o = Options();
  o.max_bytes = 2 * charge;
  Open(o);
  EXPECT_EQ(tier_->stats().entries, 2u);
  EXPECT_EQ(tier_->stats().evictions, 1u);
  EXPECT_FALSE(tier_->MayContain("a", 1));
  EXPECT_TRUE(tier_->MayContain("a", 0));
  EXPECT_TRUE(tier_->MayContain("b", 0));
  ASSERT_TRUE(Get("a", 0, kV1));
}

// A file's blocks dropped for a write are deleted with a synced write: a
// crash of the machine must not bring them back under a version the write
// did not change. Evictions are not synced (one sync per block would cost
// a full tier dearly; an evicted block that comes back is still valid).
TEST_F(DiskTierTest, ADroppedFileIsDeletedDurably) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  DiskTierOptions o = Options();
  o.env = env.get();
  o.max_bytes = 4 * kBlockSize;
  Open(o);
  for (uint64_t i = 0; i < 12; i++) tier_->Put("fh", i, Full(kV1, 'a'));
  EXPECT_GT(tier_->stats().evictions, 0u);
  ASSERT_TRUE(Get("fh", 11, kV1));  // the pool has run the puts and deletions before it
  const int before = fs->log_syncs.load();
  tier_->DropFile("fh");
  Close();
  EXPECT_GT(fs->log_syncs.load(), before) << "the dropped file's deletion was not synced";
  Open(o);
  const int after_open = fs->log_syncs.load();
  for (uint64_t i = 0; i < 12; i++) tier_->Put("fh", i, Full(kV1, 'a'));
  ASSERT_TRUE(Get("fh", 11, kV1));
  EXPECT_GT(tier_->stats().evictions, 0u);
  EXPECT_EQ(fs->log_syncs.load(), after_open) << "evictions were synced";
  Close();  // before `env` goes
}

TEST_F(DiskTierTest, SizeLimitIsKept) {
  Open();
  tier_->Put("probe", 0, Full(kV1, 'p'));
  const uint64_t charge = tier_->stats().bytes;
  Close();
  fs::remove_all(dir_);

  DiskTierOptions o = Options();
  o.max_bytes = 5 * charge + charge / 2;
  Open(o);
  for (uint64_t i = 0; i < 20; i++) {
    tier_->Put("fh", i, Full(kV1, static_cast<char>('a' + i)));
    EXPECT_LE(tier_->stats().bytes, o.max_bytes);
  }
  EXPECT_EQ(tier_->stats().entries, 5u);
  EXPECT_EQ(tier_->stats().evictions, 15u);
  for (uint64_t i = 0; i < 15; i++) EXPECT_FALSE(tier_->MayContain("fh", i)) << i;
  for (uint64_t i = 15; i < 20; i++) {
    std::optional<Block> b = Get("fh", i, kV1);
    ASSERT_TRUE(b) << i;
    EXPECT_EQ(b->data[0], static_cast<char>('a' + i));
  }
  Close();
  // The evicted blocks were deleted from the store, not only forgotten.
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 3), &v).IsNotFound());
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 17), &v).ok());
  });
  Open(o);
  EXPECT_EQ(tier_->stats().entries, 5u);
}

// Each block costs memory in the index whatever its size: a tree of tiny
// files (one short EOF block each) is held to max_bytes / 4 KiB entries.
TEST_F(DiskTierTest, TinyBlocksAreChargedEnoughToBoundTheIndex) {
  DiskTierOptions o = Options();
  o.max_bytes = 64 << 10;
  Open(o);
  for (int i = 0; i < 1000; i++) {
    Block b;
    b.version = kV1;
    b.data = "x";
    b.eof = true;
    tier_->Put("file-" + std::to_string(i), 0, std::move(b));
    EXPECT_LE(tier_->stats().entries, o.max_bytes / 4096) << i;
  }
  EXPECT_GT(tier_->stats().entries, 0u);
}

TEST_F(DiskTierTest, SetMaxBytesEvictsDownToALowerBoundAndLetsAHigherOneFill) {
  Open();
  tier_->Put("probe", 0, Full(kV1, 'p'));
  const uint64_t charge = tier_->stats().bytes;
  tier_->DropAll();
  for (uint64_t i = 0; i < 10; i++) tier_->Put("fh", i, Full(kV1, 'a'));
  ASSERT_EQ(tier_->stats().entries, 10u);
  const uint64_t evicted = tier_->stats().evictions;

  tier_->SetMaxBytes(3 * charge);  // the three most recently used stay
  EXPECT_EQ(tier_->stats().entries, 3u);
  EXPECT_LE(tier_->stats().bytes, 3 * charge);
  EXPECT_EQ(tier_->stats().evictions, evicted + 7);
  for (uint64_t i = 0; i < 7; i++) EXPECT_FALSE(tier_->MayContain("fh", i)) << i;
  for (uint64_t i = 7; i < 10; i++) EXPECT_TRUE(tier_->MayContain("fh", i)) << i;
  tier_->Put("fh", 10, Full(kV1, 'a'));
  EXPECT_EQ(tier_->stats().entries, 3u) << "the lower bound holds for later puts";

  tier_->SetMaxBytes(6 * charge);  // growth evicts nothing, then fills
  EXPECT_EQ(tier_->stats().entries, 3u);
  for (uint64_t i = 11; i < 20; i++) tier_->Put("fh", i, Full(kV1, 'a'));
  EXPECT_EQ(tier_->stats().entries, 6u);
  Close();
  // The blocks evicted by the new bound were deleted from the store.
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 2), &v).IsNotFound());
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 19), &v).ok());
  });
}

TEST_F(DiskTierTest, DropFileDeletesOnlyThatFile) {
  Open();
  for (uint64_t i = 0; i < 10; i++) tier_->Put("gone", i, Full(kV1, 'g'));
  tier_->Put("kept", 0, Full(kV1, 'k'));
  // Handles that share a prefix with the dropped one.
  tier_->Put("gon", 0, Full(kV1, 'x'));
  tier_->Put("gone2", 0, Full(kV1, 'y'));
  tier_->DropFile("gone");
  for (uint64_t i = 0; i < 10; i++) EXPECT_FALSE(tier_->MayContain("gone", i));
  EXPECT_EQ(tier_->stats().entries, 3u);
  EXPECT_FALSE(Get("gone", 0, kV1));
  EXPECT_TRUE(Get("kept", 0, kV1));
  EXPECT_TRUE(Get("gon", 0, kV1));
  EXPECT_TRUE(Get("gone2", 0, kV1));
  Close();
  Open();
  EXPECT_EQ(tier_->stats().entries, 3u);
  EXPECT_FALSE(tier_->MayContain("gone", 0));
  EXPECT_TRUE(Get("kept", 0, kV1));
}

TEST_F(DiskTierTest, PutsBeyondTheQueueBoundAreDropped) {
  DiskTierOptions o = Options();
  o.max_queued = 2;
  ThirdQueuedPutIsDropped(o);
}

// The queue is bounded in bytes too: each put waiting holds a copy of its
// block, outside the memory tier's bound.
TEST_F(DiskTierTest, PutsBeyondTheQueuesBytesAreDropped) {
  DiskTierOptions o = Options();
  o.max_queued = 100;
  o.max_queued_bytes = 2 * kBlockSize;
  ThirdQueuedPutIsDropped(o);
}

// A deletion that failed (a full disk) leaves a marker: the store may hold
// blocks its index dropped, which a restart would find again. The next
// open rebuilds it empty and removes the marker.
TEST_F(DiskTierTest, AStoreMarkedAfterAFailedDeletionIsRebuilt) {
  Open();
  tier_->Put("fh", 0, Full(kV1, '0'));
  ASSERT_TRUE(Get("fh", 0, kV1));
  Close();
  const std::filesystem::path marker = std::filesystem::path(dir_) / "NFSEDGE-REBUILD";
  { std::ofstream(marker.string()).put('\n'); }
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
  EXPECT_FALSE(std::filesystem::exists(marker));
  tier_->Put("fh", 1, Full(kV1, '1'));
  Close();
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 0u) << "rebuilt once";
  EXPECT_TRUE(tier_->MayContain("fh", 1));
}

// After a failed write RocksDB refuses every later one. The tier opens the
// store again at the next write (here while the disk still fails, then
// once it works), and keeps blocks again without a restart.
TEST_F(DiskTierTest, AStoreThatRefusedAWriteIsOpenedAgainByTheNextWrite) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  DiskTierOptions o = Options();
  o.env = env.get();
  o.threads = 1;  // the work below in call order
  o.reopen_delay = std::chrono::milliseconds(0);
  Open(o);
  tier_->Put("a", 0, Full(kV1, 'a'));
  ASSERT_TRUE(Get("a", 0, kV1));
  fs->failing = true;
  tier_->DropFile("a");  // its log write fails
  fs->failing_open = true;
  tier_->Put("b", 0, Full(kV1, 'b'));  // cannot open the store again yet
  EXPECT_FALSE(Get("b", 0, kV1));
  EXPECT_GT(fs->refused_opens.load(), 0);
  EXPECT_EQ(tier_->stats().reopened, 0u);
  EXPECT_GT(tier_->stats().errors, 0u);
  fs->failing_open = false;
  fs->failing = false;
  tier_->Put("c", 0, Full(kV1, 'c'));
  std::optional<Block> c = Get("c", 0, kV1);
  ASSERT_TRUE(c) << "the store refuses writes until a restart";
  EXPECT_EQ(c->data, std::string(kBlockSize, 'c'));
  EXPECT_EQ(tier_->stats().reopened, 1u);
  Close();  // before `env` goes
}

TEST_F(DiskTierTest, AlteredValueIsAMissAndIsDeleted) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  tier_->Put("fh", 1, Full(kV1, 'b'));
  Close();
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 0), &v).ok());
    v[100] ^= 0x01;  // one bit in the data
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), BlockKey("fh", 0), v).ok());
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 1), &v).ok());
    v.resize(v.size() / 2);  // a torn value
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), BlockKey("fh", 1), v).ok());
  });
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  EXPECT_TRUE(tier_->MayContain("fh", 0));
  EXPECT_FALSE(Get("fh", 0, kV1));
  EXPECT_FALSE(Get("fh", 1, kV1));
  EXPECT_EQ(tier_->stats().corrupt, 2u);
  EXPECT_EQ(tier_->stats().misses, 2u);
  EXPECT_EQ(tier_->stats().hits, 0u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
  EXPECT_EQ(tier_->stats().entries, 0u);
  Close();
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 0), &v).IsNotFound());
  });
}

// A value's checksum covers its key: another block's intact value, found
// under this block's key (same file and version), is not served as it.
TEST_F(DiskTierTest, AValueUnderAnotherBlocksKeyIsAMiss) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  tier_->Put("fh", 1, Full(kV1, 'b'));
  tier_->Put("other", 0, Full(kV1, 'c'));
  Close();
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), BlockKey("fh", 1), &v).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), BlockKey("fh", 0), v).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), BlockKey("other", 0), v).ok());
  });
  Open();
  EXPECT_FALSE(Get("fh", 0, kV1)) << "block 1's bytes served as block 0's";
  EXPECT_FALSE(Get("other", 0, kV1)) << "another file's bytes served";
  EXPECT_TRUE(Get("fh", 1, kV1));
  EXPECT_EQ(tier_->stats().corrupt, 2u);
}

// Overwrites the store's metadata value (docs/cache-format.md).
void WriteMeta(rocksdb::DB* db, uint32_t version, uint32_t block_size) {
  std::string meta = "nfsedge-block-store";
  AppendU32(&meta, version);
  AppendU32(&meta, block_size);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), std::string("\xff") + "nfsedge.meta", meta).ok());
}

TEST_F(DiskTierTest, OtherFormatVersionIsRebuilt) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  Close();
  WithRawDb([](rocksdb::DB* db) { WriteMeta(db, 2, kBlockSize); });
  Open();  // the same metadata, rewritten: still trusted
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  EXPECT_TRUE(tier_->MayContain("fh", 0));
  Close();
  // Version 1's block checksums did not cover the key.
  WithRawDb([](rocksdb::DB* db) { WriteMeta(db, 1, kBlockSize); });
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  EXPECT_EQ(tier_->stats().entries, 0u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
  tier_->Put("fh", 0, Full(kV2, 'b'));
  EXPECT_TRUE(Get("fh", 0, kV2));
  Close();
  Open();  // the rebuilt store is a good one
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  EXPECT_EQ(tier_->stats().entries, 1u);
}

TEST_F(DiskTierTest, OtherBlockSizeIsRebuilt) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  Close();
  DiskTierOptions o = Options();
  o.block_size = 2 * kBlockSize;
  Open(o);
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
}

TEST_F(DiskTierTest, ForeignRocksDbIsRebuilt) {
  WithRawDb(
      [](rocksdb::DB* db) {
        ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "someone", "else's data").ok());
      },
      /*create=*/true);
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  tier_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_TRUE(Get("fh", 0, kV1));
  Close();
  WithRawDb([](rocksdb::DB* db) {
    std::string v;
    EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "someone", &v).IsNotFound());
  });
}

TEST_F(DiskTierTest, GarbageFilesAreRebuiltAround) {
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/CURRENT") << "not a manifest name";
  std::ofstream(dir_ + "/notes.txt") << "left alone";
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  tier_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_TRUE(Get("fh", 0, kV1));
  EXPECT_TRUE(fs::exists(dir_ + "/notes.txt"));
  Close();

  // Files but no store at all.
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  std::ofstream(dir_ + "/000001.sst") << "garbage";
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 1u);
  tier_->Put("fh", 0, Full(kV1, 'a'));
  EXPECT_TRUE(Get("fh", 0, kV1));
}

TEST_F(DiskTierTest, UnusableDirectoryIsAnError) {
  std::ofstream(root_ + "/file") << "x";
  DiskTierOptions o = Options();
  o.dir = root_ + "/file";
  EXPECT_FALSE(DiskTier::Open(o, loop_.Poster()).ok());
  o.dir = root_ + "/file/below";
  EXPECT_FALSE(DiskTier::Open(o, loop_.Poster()).ok());
}

TEST_F(DiskTierTest, StoreInUseIsAnErrorAndIsLeftAlone) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  StatusOr<std::unique_ptr<DiskTier>> second = DiskTier::Open(Options(), loop_.Poster());
  EXPECT_FALSE(second.ok());
  EXPECT_TRUE(Get("fh", 0, kV1));
  Close();
  Open();
  EXPECT_EQ(tier_->stats().rebuilt, 0u);
  EXPECT_TRUE(Get("fh", 0, kV1));
}

TEST_F(DiskTierTest, InvalidOptionsAreRefused) {
  DiskTierOptions o = Options();
  o.block_size = 3000;
  EXPECT_EQ(DiskTier::Open(o, loop_.Poster()).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.threads = 0;
  EXPECT_EQ(DiskTier::Open(o, loop_.Poster()).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.dir.clear();
  EXPECT_EQ(DiskTier::Open(o, loop_.Poster()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(DiskTierTest, CallbacksStillArriveAfterTheTierIsGone) {
  Open();
  tier_->Put("fh", 0, Full(kV1, 'a'));
  std::optional<Block> got;
  bool called = false;
  tier_->Get("fh", 0, kV1, [&](std::optional<Block> b) {
    called = true;
    got = std::move(b);
  });
  tier_.reset();  // the pool finishes the read; its result is posted
  ASSERT_TRUE(loop_.RunUntil([&] { return called; }));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data[0], 'a');
}

}  // namespace
}  // namespace nfsedge
