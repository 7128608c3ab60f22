// WriteJournal on a real RocksDB in a temporary directory, its callbacks
// posted to a real event loop: records come back after a reopen in order,
// removed ones do not, the verifier stays, a directory that is not a
// journal of this format stops the open, and a failed disk write does not
// stop the journal for good.
#include "cache/write_journal.h"

#include <event2/event.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>

#include "rpc/loop_poster.h"
#include "tests/cache/failing_wal_fs.h"

namespace nfsedge {
namespace {

namespace fs = std::filesystem;

class WriteJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsedge-journal-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/journal";
    base_ = event_base_new();
    auto p = LoopPoster::Create(base_);
    ASSERT_TRUE(p.ok());
    poster_ = std::move(*p);
  }
  void TearDown() override {
    journal_.reset();
    RunLoop();
    poster_.reset();
    event_base_free(base_);
    fs::remove_all(root_);
  }

  StatusOr<std::unique_ptr<WriteJournal>> Open() {
    return WriteJournal::Open(dir_, poster_->AsFunction());
  }
  void Reopen() {
    journal_.reset();
    RunLoop();
    auto j = Open();
    ASSERT_TRUE(j.ok()) << j.status().message();
    journal_ = std::move(*j);
  }
  void RunLoop() { event_base_loop(base_, EVLOOP_NONBLOCK); }
  // Runs the loop until `done` holds (or a generous deadline).
  bool RunUntil(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      event_base_loop(base_, EVLOOP_ONCE);
    }
    return true;
  }
  JournalRecord Record(const std::string& data, uint64_t offset) {
    JournalRecord r;
    r.seq = journal_->NextSeq();
    r.fh = "handle-1";
    r.export_path = "/export";
    r.cred.flavor = 1;
    r.cred.body = std::string("\0\1cred", 6);
    r.offset = offset;
    r.data = data;
    return r;
  }
  // Appends and waits until the journal says it is on disk.
  void AppendDurably(JournalRecord r) {
    bool done = false;
    Status st;
    journal_->Append(std::move(r), [&](Status s) {
      st = s;
      done = true;
    });
    ASSERT_TRUE(RunUntil([&] { return done; }));
    ASSERT_TRUE(st.ok()) << st.message();
  }

  std::string root_, dir_;
  event_base* base_ = nullptr;
  std::unique_ptr<LoopPoster> poster_;
  std::unique_ptr<WriteJournal> journal_;
};

TEST_F(WriteJournalTest, RecordsComeBackInOrderWithTheSameVerifier) {
  Reopen();
  const auto verifier = journal_->verifier();
  EXPECT_NE(verifier, (std::array<char, 8>{}));
  EXPECT_TRUE(journal_->TakeRecovered().empty());
  AppendDurably(Record("first", 0));
  AppendDurably(Record(std::string(100000, 'x'), 4096));
  AppendDurably(Record(std::string("with\0nul", 8), 7));
  EXPECT_EQ(journal_->stats().records, 3u);

  Reopen();
  EXPECT_EQ(journal_->verifier(), verifier) << "clients must see no verifier change";
  std::vector<JournalRecord> r = journal_->TakeRecovered();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].seq, 1u);
  EXPECT_EQ(r[0].data, "first");
  EXPECT_EQ(r[1].seq, 2u);
  EXPECT_EQ(r[1].offset, 4096u);
  EXPECT_EQ(r[1].data, std::string(100000, 'x'));
  EXPECT_EQ(r[2].data, std::string("with\0nul", 8));
  EXPECT_EQ(r[2].fh, "handle-1");
  EXPECT_EQ(r[2].export_path, "/export");
  EXPECT_EQ(r[2].cred.flavor, 1u);
  EXPECT_EQ(r[2].cred.body, std::string("\0\1cred", 6));
  EXPECT_EQ(journal_->NextSeq(), 4u) << "new records go after the old ones";
  EXPECT_EQ(journal_->stats().recovered, 3u);
}

// A new verifier (data answered from the journal was lost) is the one a
// restart finds: the clients that lost data see the change even then.
TEST_F(WriteJournalTest, AChangedVerifierIsKeptAcrossARestart) {
  Reopen();
  const auto first = journal_->verifier();
  journal_->ChangeVerifier();
  const auto second = journal_->verifier();
  EXPECT_NE(second, first);
  bool synced = false;
  journal_->Sync([&](Status s) {
    EXPECT_TRUE(s.ok()) << s.message();
    synced = true;
  });
  ASSERT_TRUE(RunUntil([&] { return synced; }));
  Reopen();
  EXPECT_EQ(journal_->verifier(), second);
}

TEST_F(WriteJournalTest, RemovedRecordsDoNotComeBack) {
  Reopen();
  AppendDurably(Record("a", 0));
  AppendDurably(Record("bb", 1));
  journal_->Remove(1, nullptr);
  bool synced = false;
  journal_->Sync([&](Status s) {
    EXPECT_TRUE(s.ok());
    synced = true;
  });
  ASSERT_TRUE(RunUntil([&] { return synced; }));
  EXPECT_EQ(journal_->stats().records, 1u);
  EXPECT_EQ(journal_->stats().bytes, 2u);
  Reopen();
  std::vector<JournalRecord> r = journal_->TakeRecovered();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].data, "bb");
}

TEST_F(WriteJournalTest, ForeignDatabaseIsRefusedAndLeftAlone) {
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "someone", "else's").ok());
  }
  auto j = Open();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("not nfsedge's journal"), std::string::npos)
      << j.status().message();
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string v;
  EXPECT_TRUE(db->Get(rocksdb::ReadOptions(), "someone", &v).ok()) << "nothing deleted";
}

TEST_F(WriteJournalTest, OtherFormatIsRefused) {
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "m", "nfsedge-write-journal 9xxxxxxxx").ok());
  }
  auto j = Open();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("another format"), std::string::npos)
      << j.status().message();
}

TEST_F(WriteJournalTest, UnreadableRecordStopsTheOpen) {
  Reopen();
  AppendDurably(Record("ok", 0));
  journal_.reset();
  RunLoop();
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), dir_, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    std::string key("r\0\0\0\0\0\0\0\2", 9);
    ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), key, "\x07garbage").ok());
  }
  auto j = Open();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("record 2 is unreadable"), std::string::npos)
      << j.status().message();
}

// A record whose bytes would end past the largest offset (a crafted or
// damaged store that still decodes) is unreadable too, not replayed at
// an offset wrapped around to the file's start.
TEST_F(WriteJournalTest, ARecordEndingPastTheLargestOffsetStopsTheOpen) {
  Reopen();
  AppendDurably(Record("ok", 0));
  AppendDurably(Record("wraps", UINT64_MAX - 2));
  journal_.reset();
  RunLoop();
  auto j = Open();
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("record 2 is unreadable"), std::string::npos)
      << j.status().message();
}

// A journal on a disk of its own that is not mounted at a start: its
// directory is an empty mount point. The marker beside it says a journal
// was made there: the start stops (a new, empty journal would lose what
// the old one acknowledged, and be hidden by it once the disk is back),
// until the marker is removed on purpose.
TEST_F(WriteJournalTest, AnEmptyDirectoryWhereAJournalWasMadeIsNotMadeAnew) {
  Reopen();
  AppendDurably(Record("acknowledged", 0));
  const auto verifier = journal_->verifier();
  journal_.reset();
  RunLoop();
  const std::string marker = dir_ + ".nfsedge-journal";
  ASSERT_TRUE(fs::exists(marker));
  fs::rename(dir_, root_ + "/unmounted");
  fs::create_directory(dir_);  // the mount point

  auto j = Open();
  ASSERT_FALSE(j.ok()) << "a new journal was made in the empty mount point";
  EXPECT_NE(j.status().message().find("not mounted"), std::string::npos) << j.status().message();
  EXPECT_TRUE(fs::is_empty(dir_));

  // The disk is back: the journal and its record are found.
  fs::remove(dir_);
  fs::rename(root_ + "/unmounted", dir_);
  Reopen();
  EXPECT_EQ(journal_->verifier(), verifier);
  EXPECT_EQ(journal_->TakeRecovered().size(), 1u);

  // Removed on purpose: a new journal, with a new verifier.
  journal_.reset();
  RunLoop();
  fs::remove_all(dir_);
  fs::remove(marker);
  Reopen();
  EXPECT_NE(journal_->verifier(), verifier);
  EXPECT_TRUE(journal_->TakeRecovered().empty());
  EXPECT_TRUE(fs::exists(marker));
}

// The root of a file system made for the journal holds lost+found only: a
// new journal is made there (it was refused: the directory is not empty).
TEST_F(WriteJournalTest, ANewFileSystemsRootIsMadeAJournal) {
  fs::create_directories(dir_ + "/lost+found");
  Reopen();
  AppendDurably(Record("first", 0));
  Reopen();
  EXPECT_EQ(journal_->TakeRecovered().size(), 1u);
}

// A record damaged in the middle of RocksDB's write-ahead log (a bit flip,
// a disk that said it had written what it had not) stops the open: with
// RocksDB's default recovery the journal opened with the records before the
// damage only, and every acknowledged write after it was gone unsaid.
TEST_F(WriteJournalTest, ADamagedLogRecordStopsTheOpen) {
  Reopen();
  AppendDurably(Record("first", 0));
  AppendDurably(Record(std::string(100000, 'x'), 4096));
  AppendDurably(Record("third", 200000));
  journal_.reset();
  RunLoop();
  std::string log;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().extension() == ".log" && e.file_size() > 100000) log = e.path();
  }
  ASSERT_FALSE(log.empty()) << "no write-ahead log holding the records in " << dir_;
  std::string bytes;
  {
    std::ifstream in(log, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = bytes.find(std::string(1000, 'x'));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 500] = 'y';
  {
    std::ofstream out(log, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto j = Open();
  ASSERT_FALSE(j.ok()) << "opened with " << (*j)->TakeRecovered().size()
                       << " of the 3 acknowledged records";
  EXPECT_NE(j.status().message().find("may hold acknowledged writes"), std::string::npos)
      << j.status().message();
}

// A disk write that fails (an I/O error on the write-ahead log) puts
// RocksDB in a state where it refuses every later write. The journal closes
// and opens it again: once the disk works again, appends are taken again,
// and a removal lost with the failed batch reaches the disk (else its
// record would be replayed at the next start over newer data).
TEST_F(WriteJournalTest, AFailedDiskWriteDoesNotStopTheJournalForGood) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  auto j = WriteJournal::Open(dir_, poster_->AsFunction(), env.get());
  ASSERT_TRUE(j.ok()) << j.status().message();
  journal_ = std::move(*j);
  AppendDurably(Record("a", 0));
  fs->failing = true;
  bool removal_failed = false;
  journal_->Remove(1, [&](Status s) { removal_failed = !s.ok(); });
  bool failed = false;
  journal_->Append(Record("b", 1), [&](Status s) {
    EXPECT_FALSE(s.ok());
    failed = true;
  });
  ASSERT_TRUE(RunUntil([&] { return failed; }));
  EXPECT_TRUE(removal_failed) << "the removal's callback is told its batch failed";
  fs->failing = false;
  AppendDurably(Record("c", 2));
  journal_.reset();
  RunLoop();
  Reopen();
  std::vector<JournalRecord> r = journal_->TakeRecovered();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].data, "c");
}

// A journal directory lost with the disk's error (a file system gone,
// leaving an empty mount point) is not made anew when the journal opens its
// database again: an empty journal would take writes under the old verifier
// and be refused at the next start as not nfsedge's.
TEST_F(WriteJournalTest, AJournalLostWithADiskErrorIsNotMadeAnew) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  ASSERT_FALSE(std::filesystem::exists(dir_)) << "a new journal";
  auto j = WriteJournal::Open(dir_, poster_->AsFunction(), env.get());
  ASSERT_TRUE(j.ok()) << j.status().message();
  journal_ = std::move(*j);
  AppendDurably(Record("a", 0));
  fs->failing = true;
  bool failed = false;
  journal_->Append(Record("b", 1), [&](Status s) { failed = !s.ok(); });
  ASSERT_TRUE(RunUntil([&] { return failed; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // closed meanwhile
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    std::filesystem::remove_all(e.path());
  }
  fs->failing = false;
  bool done = false, ok = true;
  journal_->Append(Record("c", 2), [&](Status s) {
    done = true;
    ok = s.ok();
  });
  ASSERT_TRUE(RunUntil([&] { return done; }));
  EXPECT_FALSE(ok) << "an append taken by a journal made anew in the emptied directory";
}

// A batch that fails while the journal stops is not tried again; nor is
// any batch after it written: with the failed batch's removal of an older
// record lost and a newer record's removal written, a restart would replay
// the older record over the newer data. (The disk fails, the database
// cannot be opened again; it comes back just as the proxy stops.)
TEST_F(WriteJournalTest, NothingIsWrittenAfterABatchDroppedAtStop) {
  auto fs = std::make_shared<FailingWalFs>(rocksdb::FileSystem::Default());
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  {
    auto j = WriteJournal::Open(dir_, poster_->AsFunction(), env.get());
    ASSERT_TRUE(j.ok()) << j.status().message();
    journal_ = std::move(*j);
  }
  AppendDurably(Record("old", 0));
  AppendDurably(Record("new", 0));
  fs->failing = true;
  fs->failing_open = true;
  bool failed = false;
  journal_->Remove(1, [&](Status s) { failed = !s.ok(); });
  ASSERT_TRUE(RunUntil([&] { return failed; }));
  // The writer closes the database and fails to open it again, 100 ms
  // apart (a file refused after the failure was told: an attempt to open
  // it again); meanwhile the disk comes back, the newer record's removal
  // is queued, and the journal stops.
  const int refused = fs->refused_opens.load();
  for (int i = 0; i < 1000 && fs->refused_opens.load() <= refused; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(fs->refused_opens.load(), refused) << "the writer never tried to open it again";
  fs->failing = false;
  fs->failing_open = false;
  journal_->Remove(2, nullptr);
  journal_.reset();
  RunLoop();
  Reopen();
  std::vector<JournalRecord> r = journal_->TakeRecovered();
  const bool old_left = std::any_of(r.begin(), r.end(), [](const auto& x) { return x.seq == 1; });
  const bool new_left = std::any_of(r.begin(), r.end(), [](const auto& x) { return x.seq == 2; });
  EXPECT_TRUE(!old_left || new_left) << "record 1 left on disk, record 2 (newer) removed";
}

}  // namespace
}  // namespace nfsedge
