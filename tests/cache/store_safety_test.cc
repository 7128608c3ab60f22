// The local persistent state under bad conditions: a disk tier read that
// completes after its file was dropped, a handle store whose tables are
// corrupt, the handle store's memory bound, and a store directory that
// holds the edge journal.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/disk_tier.h"
#include "cache/handle_store.h"
#include "cache/write_journal.h"
#include "tests/cache/failing_wal_fs.h"

namespace nfsedge {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kBlock = 4096;

// Closures posted from any thread wait in a queue until the test thread
// runs them, so that a test decides when a pool result reaches the owner.
class PostedWork {
 public:
  PostFunction Function() {
    return [this](std::function<void()> fn) {
      std::lock_guard<std::mutex> lock(mu_);
      work_.push_back(std::move(fn));
      arrived_.notify_all();
    };
  }

  // Returns true iff something was posted within a generous deadline.
  bool AwaitOne() {
    std::unique_lock<std::mutex> lock(mu_);
    return arrived_.wait_for(lock, std::chrono::seconds(20), [this] { return !work_.empty(); });
  }

  // Runs closures, waiting for more, until `until` holds. Returns false iff
  // it still does not after a generous deadline.
  bool Drain(const std::function<bool()>& until) {
    while (!until()) {
      if (!AwaitOne()) return false;
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        fn = std::move(work_.front());
        work_.pop_front();
      }
      fn();
    }
    return true;
  }

  void DrainAll() {
    for (;;) {
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (work_.empty()) return;
        fn = std::move(work_.front());
        work_.pop_front();
      }
      fn();
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable arrived_;
  std::deque<std::function<void()>> work_;
};

class StoreSafetyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/store_safety_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/store";
  }
  void TearDown() override {
    tier_.reset();
    posted_.DrainAll();
    fs::remove_all(root_);
  }

  void OpenTier() {
    DiskTierOptions o;
    o.dir = dir_;
    o.block_size = kBlock;
    o.max_bytes = 1 << 20;
    o.threads = 1;
    StatusOr<std::unique_ptr<DiskTier>> t = DiskTier::Open(o, posted_.Function());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tier_ = std::move(*t);
  }

  static ChangeId Version() {
    ChangeId v;
    v.size = 1 << 20;
    v.mtime = {500, 1};
    v.ctime = {500, 2};
    return v;
  }

  static Block Filled(char c) {
    Block b;
    b.version = Version();
    b.data.assign(kBlock, c);
    return b;
  }

  // Starts a read of block 0 of `fh` and waits until the pool has posted its
  // result (the result has not reached the caller yet).
  void StartReadAndAwaitResult(const std::string& fh, bool* called, std::optional<Block>* out) {
    tier_->Get(fh, 0, Version(), [called, out](std::optional<Block> b) {
      *called = true;
      *out = std::move(b);
    });
    ASSERT_FALSE(*called);
    ASSERT_TRUE(posted_.AwaitOne());
    ASSERT_FALSE(*called);
  }

  std::vector<fs::path> FilesNamed(std::string_view part) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename().string().find(part) != std::string::npos) out.push_back(e.path());
    }
    return out;
  }

  // Creates an edge journal in dir_ holding one record; returns its data.
  std::string MakeJournalWithOneRecord() {
    auto j = WriteJournal::Open(dir_, posted_.Function());
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    if (!j.ok()) return "";
    JournalRecord r;
    r.seq = (*j)->NextSeq();
    r.fh = "journaled-fh";
    r.export_path = "/e";
    r.offset = 8192;
    r.data = "bytes a client was told are stable";
    bool done = false;
    (*j)->Append(r, [&done](Status s) {
      EXPECT_TRUE(s.ok()) << s.ToString();
      done = true;
    });
    EXPECT_TRUE(posted_.Drain([&] { return done; }));
    j->reset();
    posted_.DrainAll();
    return r.data;
  }

  // Returns the data of the records the journal in dir_ holds.
  std::vector<std::string> JournalRecords() {
    auto j = WriteJournal::Open(dir_, posted_.Function());
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    std::vector<std::string> out;
    if (!j.ok()) return out;
    for (JournalRecord& r : (*j)->TakeRecovered()) out.push_back(std::move(r.data));
    j->reset();
    posted_.DrainAll();
    return out;
  }

  PostedWork posted_;
  std::string root_;
  std::string dir_;
  std::unique_ptr<DiskTier> tier_;
};

// nfsedge drop-cache PATH while a disk read of PATH is under way: the read's
// result must not bring the dropped block back to the caller (which would
// put it in the memory tier again).
TEST_F(StoreSafetyTest, DiskReadCompletingAfterDropFileIsAMiss) {
  OpenTier();
  tier_->Put("fh", 0, Filled('a'));
  bool called = false;
  std::optional<Block> got;
  StartReadAndAwaitResult("fh", &called, &got);
  tier_->DropFile("fh");
  ASSERT_TRUE(posted_.Drain([&] { return called; }));
  EXPECT_FALSE(got.has_value()) << "a block dropped while its read was under way was returned";
  EXPECT_EQ(tier_->stats().hits, 0u);
  EXPECT_EQ(tier_->stats().entries, 0u);
  EXPECT_FALSE(tier_->MayContain("fh", 0));
}

TEST_F(StoreSafetyTest, DiskReadCompletingAfterDropAllIsAMiss) {
  OpenTier();
  tier_->Put("fh", 0, Filled('b'));
  bool called = false;
  std::optional<Block> got;
  StartReadAndAwaitResult("fh", &called, &got);
  tier_->DropAll();
  ASSERT_TRUE(posted_.Drain([&] { return called; }));
  EXPECT_FALSE(got.has_value());
  // A read that nothing overtook still hits.
  tier_->Put("fh", 0, Filled('c'));
  called = false;
  StartReadAndAwaitResult("fh", &called, &got);
  ASSERT_TRUE(posted_.Drain([&] { return called; }));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->data[0], 'c');
  EXPECT_EQ(tier_->stats().hits, 1u);
}

// A handle store whose table data is corrupt is rebuilt empty (as a store
// that cannot be opened is), not an error that stops the proxy.
TEST_F(StoreSafetyTest, HandleStoreWithCorruptTablesIsRebuilt) {
  {
    auto store = HandleStore::Open(dir_, [](std::string_view, std::vector<StoredMembership>) {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < 800; i++) {
      std::string fh = "handle-" + std::to_string(100000 + i);
      fh.resize(60, 'x');
      (*store)->Put(fh, {StoredMembership{"/export", i == 0}});
    }
    (*store)->Flush();
  }
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());
    ASSERT_TRUE(db->Close().ok());
  }
  // Damage the first data block (the first handles' records); the
  // metadata key sorts last, in another block, and still reads.
  std::vector<fs::path> tables = FilesNamed(".sst");
  ASSERT_FALSE(tables.empty());
  for (const fs::path& t : tables) {
    std::fstream f(t, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.write("\x5a\xa5\x5a\xa5\x5a\xa5\x5a\xa5", 8);
  }

  size_t loaded = 0;
  auto store =
      HandleStore::Open(dir_, [&](std::string_view, std::vector<StoredMembership>) { loaded++; });
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->stats().rebuilt);
  EXPECT_EQ(loaded, 0u) << "handles of a store found corrupt were handed to the registry";
  (*store)->Put("fresh", {StoredMembership{"/export", false}});
  store->reset();
  std::vector<std::string> seen;
  auto again = HandleStore::Open(
      dir_, [&](std::string_view h, std::vector<StoredMembership>) { seen.emplace_back(h); });
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE((*again)->stats().rebuilt);
  EXPECT_EQ(seen, std::vector<std::string>{"fresh"});
}

// A write the disk refuses (an I/O error on RocksDB's log) loses that
// batch's records, not every later one: RocksDB refuses every write after
// a failed one, so the store is opened again for the next batch.
TEST_F(StoreSafetyTest, HandleStoreWritesAgainAfterADiskError) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  {
    auto store = HandleStore::Open(
        dir_, [](std::string_view, std::vector<StoredMembership>) {}, 1024, env.get());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    (*store)->Put("before", {StoredMembership{"/export", false}});
    (*store)->Flush();
    fs->failing = true;
    (*store)->Put("during", {StoredMembership{"/export", false}});
    (*store)->Flush();
    EXPECT_EQ((*store)->stats().errors, 1u);
    fs->failing = false;
    (*store)->Put("after", {StoredMembership{"/export", false}});
    (*store)->Flush();
    EXPECT_EQ((*store)->stats().errors, 1u) << "the store refused writes after the error";
  }
  std::vector<std::string> seen;
  auto again = HandleStore::Open(
      dir_, [&](std::string_view h, std::vector<StoredMembership>) { seen.emplace_back(h); });
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"after", "before"}));
}

// docs/robustness.md bounds the handle store's write buffers at 2 x 4 MiB.
TEST_F(StoreSafetyTest, HandleStoreWriteBuffersAreFourMiB) {
  {
    auto store = HandleStore::Open(dir_, [](std::string_view, std::vector<StoredMembership>) {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
  }
  std::vector<fs::path> options = FilesNamed("OPTIONS-");
  ASSERT_FALSE(options.empty());
  std::ifstream in(options.back());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("write_buffer_size=4194304"), std::string::npos);
  EXPECT_NE(text.find("max_write_buffer_number=2"), std::string::npos);
}

// cache.disk_dir or server.handle_store naming the edge journal's
// directory: the stores are caches and rebuild what they do not recognise,
// but the journal holds writes acknowledged as stable and must be left
// alone (an error, the proxy does not start).
TEST_F(StoreSafetyTest, DiskTierLeavesAnEdgeJournalAlone) {
  const std::string data = MakeJournalWithOneRecord();
  DiskTierOptions o;
  o.dir = dir_;
  o.block_size = kBlock;
  StatusOr<std::unique_ptr<DiskTier>> t = DiskTier::Open(o, posted_.Function());
  EXPECT_FALSE(t.ok()) << "the disk tier took over an edge journal";
  t = StatusOr<std::unique_ptr<DiskTier>>(IoError("closed"));
  EXPECT_EQ(JournalRecords(), std::vector<std::string>{data});
}

TEST_F(StoreSafetyTest, HandleStoreLeavesAnEdgeJournalAlone) {
  const std::string data = MakeJournalWithOneRecord();
  auto store = HandleStore::Open(dir_, [](std::string_view, std::vector<StoredMembership>) {});
  EXPECT_FALSE(store.ok()) << "the handle store took over an edge journal";
  store = StatusOr<std::unique_ptr<HandleStore>>(IoError("closed"));
  EXPECT_EQ(JournalRecords(), std::vector<std::string>{data});
}

}  // namespace
}  // namespace nfsedge
