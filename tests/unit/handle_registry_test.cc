#include "cache/handle_registry.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace nfsedge {
namespace {

TEST(HandleRegistry, FindsWhatWasAdded) {
  HandleRegistry r(10);
  r.Add("fh-a", 1);
  r.Add(std::string("\0\1\2", 3), 2);
  EXPECT_EQ(r.Find("fh-a"), 1u);
  EXPECT_EQ(r.Find(std::string("\0\1\2", 3)), 2u);
  EXPECT_FALSE(r.Find("fh-b"));
  EXPECT_FALSE(r.Find(std::string("\0\1", 2)));
}

TEST(HandleRegistry, AHandleBelongsToEveryExportItWasHandedOutFor) {
  HandleRegistry r(10);
  r.Add("fh", 1);
  r.Add("fh", 3, /*root=*/true);
  std::optional<ExportSet> set = r.FindAll("fh");
  ASSERT_TRUE(set);
  EXPECT_TRUE(set->Has(1));
  EXPECT_TRUE(set->Has(3));
  EXPECT_FALSE(set->Has(0));
  EXPECT_FALSE(set->Has(2));
  EXPECT_FALSE(set->IsRoot(1));
  EXPECT_TRUE(set->IsRoot(3));
  EXPECT_EQ(r.Find("fh"), 1u);
  EXPECT_EQ(r.size(), 1u);
}

TEST(HandleRegistry, BoundedWithLeastRecentlyUsedEviction) {
  HandleRegistry r(3);
  r.Add("a", 0);
  r.Add("b", 0);
  r.Add("c", 0);
  EXPECT_TRUE(r.Find("a"));  // a is now most recently used
  r.Add("d", 0);             // evicts b
  EXPECT_EQ(r.size(), 3u);
  EXPECT_FALSE(r.Find("b"));
  EXPECT_TRUE(r.Find("a"));
  EXPECT_TRUE(r.Find("c"));
  EXPECT_TRUE(r.Find("d"));
  EXPECT_EQ(r.evictions(), 1u);
}

// A directory MNT answered below an export is kept like an export's root:
// its client cannot look its own mount point up again.
TEST(HandleRegistry, AMountPointIsNeverEvicted) {
  HandleRegistry r(2);
  r.Add("root", 0, /*root=*/true);
  r.Add("sub", 0, /*root=*/false, /*mounted=*/true);
  r.Add("a", 0);
  r.Add("b", 0);
  EXPECT_TRUE(r.Find("root"));
  std::optional<ExportSet> sub = r.FindAll("sub");
  ASSERT_TRUE(sub);
  EXPECT_TRUE(sub->mounted);
  EXPECT_FALSE(sub->IsRoot(0)) << "'..' still leaves a mount point below the export's root";
  EXPECT_FALSE(r.Find("a"));
  EXPECT_TRUE(r.Find("b"));
  // Found again by a LOOKUP: still a mount point.
  r.Add("sub", 0);
  EXPECT_TRUE(r.FindAll("sub")->mounted);
}

// Mount points are kept whatever the limit, but only the kMaxMountPoints
// most recent: clients mounting ever new directories cannot grow the
// registry without bound.
TEST(HandleRegistry, OnlyTheMostRecentMountPointsAreKept) {
  HandleRegistry r(10);
  for (size_t i = 0; i <= kMaxMountPoints; ++i) {
    r.Add("mp-" + std::to_string(i), 0, /*root=*/false, /*mounted=*/true);
  }
  EXPECT_FALSE(r.FindAll("mp-0") && r.FindAll("mp-0")->mounted) << "the oldest lost its mark";
  EXPECT_TRUE(r.FindAll("mp-1")->mounted);
  for (int i = 0; i < 20; ++i) r.Add("other-" + std::to_string(i), 0);
  EXPECT_FALSE(r.FindAll("mp-0")) << "then evicted like any handle";
  EXPECT_TRUE(r.FindAll(std::string("mp-") + std::to_string(kMaxMountPoints)));
}

class PersistentRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsedge-handles-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/store";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // A registry over dir_ with exports `paths`; fails the test if it cannot open.
  std::unique_ptr<HandleRegistry> Open(std::vector<std::string> paths, size_t max = 100) {
    auto r = std::make_unique<HandleRegistry>(max);
    Status s = r->Persist(dir_, std::move(paths));
    EXPECT_TRUE(s.ok()) << s.ToString();
    return r;
  }
  // Opens dir_ with RocksDB directly.
  std::unique_ptr<rocksdb::DB> RawDb() {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir_, &db);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return std::unique_ptr<rocksdb::DB>(db);
  }

  std::string root_, dir_;
};

TEST_F(PersistentRegistryTest, HandlesSurviveReopen) {
  const std::string binary("\0\x01\xff" "fh", 5);
  {
    auto r = Open({"/a", "/b"});
    r->Add("root-a", 0, /*root=*/true);
    r->Add(binary, 1);
    r->Add(binary, 0);
    r->Add("only-b", 1);
    r->Add("mounted-b", 1, /*root=*/false, /*mounted=*/true);
  }
  auto r = Open({"/a", "/b"});
  EXPECT_EQ(r->size(), 4u);
  EXPECT_EQ(r->store()->stats().loaded, 4u);
  EXPECT_TRUE(r->FindAll("mounted-b")->mounted);
  EXPECT_FALSE(r->FindAll("only-b")->mounted);
  EXPECT_FALSE(r->store()->stats().rebuilt);
  std::optional<ExportSet> root = r->FindAll("root-a");
  ASSERT_TRUE(root);
  EXPECT_TRUE(root->Has(0) && root->IsRoot(0));
  EXPECT_FALSE(root->Has(1));
  std::optional<ExportSet> both = r->FindAll(binary);
  ASSERT_TRUE(both);
  EXPECT_TRUE(both->Has(0) && both->Has(1));
  EXPECT_FALSE(both->IsRoot(0) || both->IsRoot(1));
  EXPECT_EQ(r->Find("only-b"), 1u);
  EXPECT_FALSE(r->Find("never"));
}

// The records of an export's root and of a mount point are never dropped
// for a full queue (here one that holds nothing): lost, a restart would not
// know the root as such, and ".." of it would be let through.
TEST_F(PersistentRegistryTest, ARootsRecordIsNeverDroppedForAFullQueue) {
  {
    StatusOr<std::unique_ptr<HandleStore>> store =
        HandleStore::Open(dir_, [](std::string_view, std::vector<StoredMembership>) {},
                          /*max_queued=*/0);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    (*store)->Put("root-a", {StoredMembership{"/a", /*root=*/true, false}});
    (*store)->Put("mounted-a", {StoredMembership{"/a", false, /*mounted=*/true}});
    (*store)->Put("plain", {StoredMembership{"/a", false, false}});
    (*store)->Flush();
    EXPECT_EQ((*store)->stats().dropped, 1u);
  }
  auto r = Open({"/a"});
  std::optional<ExportSet> root = r->FindAll("root-a");
  ASSERT_TRUE(root);
  EXPECT_TRUE(root->IsRoot(0));
  ASSERT_TRUE(r->FindAll("mounted-a"));
  EXPECT_TRUE(r->FindAll("mounted-a")->mounted);
  EXPECT_FALSE(r->FindAll("plain"));
}

// An export's key in the store is its path and its upstream path: with
// paths of up to 1024 bytes each (all the config takes), its handles come
// back after a restart. (A key over 1024 bytes read back as malformed: the
// export's handles were dropped at every start.)
TEST_F(PersistentRegistryTest, HandlesOfAnExportWithLongPathsSurviveReopen) {
  std::string long_path;
  while (long_path.size() < 1000) long_path += "/a-rather-long-directory-name";
  const std::string key = long_path + "\n" + long_path;  // path, upstream_path
  { Open({key})->Add("deep-fh", 0); }
  auto r = Open({key});
  EXPECT_EQ(r->store()->stats().loaded, 1u);
  EXPECT_EQ(r->Find("deep-fh"), 0u);
}

// The root MNT last answered is the export's known root; from a store
// holding two roots of one export (its upstream directory made anew), none
// is, until a MNT tells which.
TEST_F(PersistentRegistryTest, AKnownRootIsTheLastMountedOrAnUnambiguousStoredOne) {
  {
    auto r = Open({"/a", "/b"});
    r->Add("root-a", 0, /*root=*/true);
    EXPECT_EQ(r->RootOf(0).value_or(""), "root-a");
    r->Add("root-a2", 0, /*root=*/true);
    EXPECT_EQ(r->RootOf(0).value_or(""), "root-a2");
    r->Add("root-b", 1, /*root=*/true);
    EXPECT_FALSE(r->RootOf(2));
  }
  auto r = Open({"/a", "/b"});
  EXPECT_FALSE(r->RootOf(0)) << "two stored roots of /a: which is the upstream's now?";
  EXPECT_EQ(r->RootOf(1).value_or(""), "root-b");
}

TEST_F(PersistentRegistryTest, ExportsAreMatchedByPathAcrossConfigChanges) {
  {
    auto r = Open({"/a", "/b", "/gone"});
    r->Add("in-a", 0);
    r->Add("in-b", 1);
    r->Add("in-gone", 2);
    r->Add("a-and-gone", 0);
    r->Add("a-and-gone", 2);
  }
  {
    // Exports reordered, one removed, one added.
    auto r = Open({"/new", "/b", "/a"});
    EXPECT_EQ(r->Find("in-a"), 2u);
    EXPECT_EQ(r->Find("in-b"), 1u);
    EXPECT_FALSE(r->Find("in-gone"));
    std::optional<ExportSet> s = r->FindAll("a-and-gone");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->exports, uint64_t{1} << 2);
  }
  // The forgotten handle is deleted from the store, even if its export returns.
  auto r = Open({"/a", "/b", "/gone"});
  EXPECT_FALSE(r->Find("in-gone"));
  EXPECT_EQ(r->size(), 3u);
}

TEST_F(PersistentRegistryTest, EvictedHandlesLeaveTheStore) {
  {
    auto r = Open({"/a"}, 2);
    r->Add("one", 0);
    r->Add("two", 0);
    r->Add("three", 0);  // evicts "one"
  }
  auto r = Open({"/a"}, 10);
  EXPECT_FALSE(r->Find("one"));
  EXPECT_TRUE(r->Find("two"));
  EXPECT_TRUE(r->Find("three"));
}

TEST_F(PersistentRegistryTest, ForeignStoreIsRebuiltWithALogLine) {
  {
    auto db = RawDb();
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "hsomething", "not ours").ok());
    ASSERT_TRUE(db->Close().ok());
  }
  testing::internal::CaptureStderr();
  auto r = Open({"/a"});
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r->store()->stats().rebuilt);
  EXPECT_EQ(r->size(), 0u);
  EXPECT_NE(log.find("foreign RocksDB store"), std::string::npos) << log;
  EXPECT_NE(log.find("rebuilding it empty"), std::string::npos) << log;
  // And it is usable afterwards.
  r->Add("fh", 0);
  r.reset();
  EXPECT_TRUE(Open({"/a"})->Find("fh"));
}

TEST_F(PersistentRegistryTest, CorruptStoreIsRebuiltWithALogLine) {
  {
    auto r = Open({"/a"});
    r->Add("fh", 0);
  }
  {
    std::ofstream current(dir_ + "/CURRENT", std::ios::trunc);
    current << "garbage without newline";
  }
  testing::internal::CaptureStderr();
  auto r = Open({"/a"});
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(r->store()->stats().rebuilt);
  EXPECT_FALSE(r->Find("fh"));
  EXPECT_NE(log.find("cannot be opened"), std::string::npos) << log;
  EXPECT_NE(log.find("rebuilding it empty"), std::string::npos) << log;
}

TEST_F(PersistentRegistryTest, MalformedRecordsAreDropped) {
  {
    auto r = Open({"/a"});
    r->Add("good", 0);
  }
  {
    auto db = RawDb();
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "hbad", std::string("\x01\x02", 2)).ok());
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "hbad2", "").ok());
    ASSERT_TRUE(db->Close().ok());
  }
  auto r = Open({"/a"});
  EXPECT_TRUE(r->Find("good"));
  EXPECT_FALSE(r->Find("bad"));
  EXPECT_FALSE(r->Find("bad2"));
  EXPECT_EQ(r->store()->stats().malformed, 2u);
  EXPECT_FALSE(r->store()->stats().rebuilt);
}

TEST_F(PersistentRegistryTest, UnusableDirectoryIsAnError) {
  std::ofstream(root_ + "/file") << "x";
  HandleRegistry r(10);
  Status s = r.Persist(root_ + "/file", {"/a"});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ot a directory"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("handle store"), std::string::npos) << s.ToString();
}

TEST(HandleStoreFormat, RoundTripsAndRejectsMalformedValues) {
  std::vector<StoredMembership> in = {{"/a", true}, {"/b/c", false}, {"/d", false, true}};
  std::string v = HandleStore::EncodeValue(in);
  std::vector<StoredMembership> out;
  ASSERT_TRUE(HandleStore::DecodeValue(v, &out));
  EXPECT_EQ(out, in);
  EXPECT_FALSE(HandleStore::DecodeValue(v.substr(0, v.size() - 1), &out));
  EXPECT_FALSE(HandleStore::DecodeValue(v + "x", &out));
  EXPECT_FALSE(HandleStore::DecodeValue("", &out));
  std::string bad_flags = v;
  bad_flags[1] = 4;
  EXPECT_FALSE(HandleStore::DecodeValue(bad_flags, &out));
  EXPECT_FALSE(HandleStore::DecodeValue(HandleStore::EncodeValue({}), &out)) << "no export";
}

}  // namespace
}  // namespace nfsedge
