// fsx_model_test: hermetic tests of nfsedge-fsx's exerciser: its model's POSIX
// semantics, determinism from the seed, that it finds injected faults (corrupt data, a
// wrong errno, a lost directory entry) and reports them replayably, and a run of the
// POSIX backend on a local directory.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>

#include "conformance/exerciser.h"
#include "conformance/mem_fs.h"
#include "conformance/model.h"
#include "conformance/posix_fs.h"
#include "conformance/prng.h"
#include "conformance/tree_walk.h"

namespace nfsedge::fsx {
namespace {

Result RunOn(std::vector<Fs*> clients, uint64_t seed, uint64_t steps, bool retry_stale = false) {
  Options o;
  o.seed = seed;
  o.steps = steps;
  o.verify_every = 1000;
  o.retry_stale = retry_stale;
  std::FILE* sink = std::fopen("/dev/null", "w");
  Exerciser ex(o, std::move(clients), sink);
  Result r = ex.Run();
  std::fclose(sink);
  return r;
}

TEST(PrngTest, SequenceIsFixedForASeed) {
  Prng a(42), b(42), c(43);
  uint64_t first = a.Next();
  EXPECT_EQ(first, b.Next());
  EXPECT_NE(first, c.Next());
  Prng d(1);
  // Pinned: a change here changes every seed's sequence and fingerprint.
  EXPECT_EQ(d.Next(), 0xb3f2af6d0fc710c5ULL);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(d.Below(7), 7u);
}

TEST(ModelTest, PosixSemantics) {
  Model m;
  uint64_t ino = 0;
  EXPECT_TRUE(m.Mkdir("d", 0755).success());
  EXPECT_TRUE(m.Mkdir("d/e", 0700).success());
  EXPECT_TRUE(m.Create("d/f", 0644, &ino).success());
  EXPECT_EQ(m.Create("d/f", 0644, &ino).ToString(), "EEXIST");
  EXPECT_EQ(m.Create("x/f", 0644, &ino).ToString(), "ENOENT");
  EXPECT_EQ(m.Create("d/f/g", 0644, &ino).ToString(), "ENOTDIR");
  EXPECT_EQ(m.Rmdir("d").ToString(), "EEXIST|ENOTEMPTY");
  EXPECT_EQ(m.Unlink("d").ToString(), "EPERM|EISDIR");
  EXPECT_EQ(m.Rename("d", "d/e/x").ToString(), "EINVAL");
  EXPECT_TRUE(m.Rename("d/f", "d/e/f").success());
  EXPECT_EQ(m.Rename("d/e/f", "d").ToString(), "EEXIST|EISDIR|EINVAL|ENOTEMPTY");
  EXPECT_TRUE(m.Link("d/e/f", "g").success());
  FsStat st;
  EXPECT_TRUE(m.Lstat("g", &st).success());
  EXPECT_EQ(st.nlink, 2u);
  EXPECT_TRUE(m.Lstat("d", &st).success());
  EXPECT_EQ(st.nlink, 3u);                        // ".", "..", and e's ".."
  EXPECT_TRUE(m.Rename("g", "d/e/f").success());  // Same file: nothing happens.
  EXPECT_NE(m.InodeOf("g"), 0u);
  EXPECT_EQ(m.Link("d", "h").ToString(), "EPERM|EISDIR|EINVAL");
  EXPECT_TRUE(m.Symlink("../nowhere", "s").success());
  std::string target;
  EXPECT_TRUE(m.Readlink("s", &target).success());
  EXPECT_EQ(target, "../nowhere");
  EXPECT_EQ(m.Readlink("g", &target).ToString(), "EINVAL");
  m.Write(ino, 10, "abc");
  EXPECT_EQ(m.Read(ino, 8, 10), std::string("\0\0abc", 5));
  EXPECT_TRUE(m.Utimes("g", 1234567890, 5000).success());
  EXPECT_TRUE(m.node(ino).mtime_known);
  m.Truncate(ino, 2);
  EXPECT_FALSE(m.node(ino).mtime_known);
}

TEST(ExerciserTest, SameSeedSameFingerprintDifferentSeedDifferent) {
  MemFs a, b, c;
  Result ra = RunOn({&a}, 5, 3000), rb = RunOn({&b}, 5, 3000), rc = RunOn({&c}, 6, 3000);
  ASSERT_TRUE(ra.ok) << ra.failure;
  ASSERT_TRUE(rb.ok) << rb.failure;
  ASSERT_TRUE(rc.ok) << rc.failure;
  EXPECT_EQ(ra.fingerprint, rb.fingerprint);
  EXPECT_NE(ra.fingerprint, rc.fingerprint);
  for (const char* op : {"create", "write", "read", "truncate", "append", "fsync", "rename", "link",
                         "unlink", "symlink", "readlink", "mkdir", "rmdir", "chmod", "utimes",
                         "readdir", "stat", "open", "close"}) {
    EXPECT_GT(ra.op_counts[op], 20u) << op;
  }
}

TEST(ExerciserTest, TwoClientsOnOneTree) {
  MemFs a;
  Result r = RunOn({&a, &a}, 9, 5000);
  EXPECT_TRUE(r.ok) << r.failure;
}

// Forwards to a MemFs, breaking one kind of call from the n-th on.
class FaultyFs : public MemFs {
 public:
  enum class Fault { kCorruptRead, kWrongErrno, kLoseName, kStaleOnce };
  FaultyFs(Fault fault, int after) : fault_(fault), after_(after) {}

  int64_t Pread(Handle h, uint64_t offset, size_t len, std::string* out) override {
    int64_t n = MemFs::Pread(h, offset, len, out);
    if (fault_ == Fault::kCorruptRead && n > 0 && ++calls_ > after_) (*out)[n / 2] ^= 0x20;
    return n;
  }
  int Mkdir(const std::string& path, uint32_t mode) override {
    int rc = MemFs::Mkdir(path, mode);
    if (fault_ == Fault::kWrongErrno && rc == -EEXIST && ++calls_ > after_) return -ENOENT;
    return rc;
  }
  int Rename(const std::string& from, const std::string& to) override {
    // Every 5th rename first fails with ESTALE, doing nothing.
    if (fault_ == Fault::kStaleOnce && ++calls_ % 5 == 0) return -ESTALE;
    return MemFs::Rename(from, to);
  }
  int ReadDir(const std::string& path, std::vector<std::string>* names) override {
    int rc = MemFs::ReadDir(path, names);
    if (fault_ == Fault::kLoseName && names->size() > 1 && ++calls_ > after_) names->pop_back();
    return rc;
  }

 private:
  const Fault fault_;
  const int after_;
  int calls_ = 0;
};

TEST(ExerciserTest, FindsEachInjectedFaultAndReportsItReplayably) {
  struct Case {
    FaultyFs::Fault fault;
    const char* message;
  } cases[] = {{FaultyFs::Fault::kCorruptRead, "bytes differ"},
               {FaultyFs::Fault::kWrongErrno, "returned ENOENT, the model expects EEXIST"},
               {FaultyFs::Fault::kLoseName, "missing"}};
  for (const Case& c : cases) {
    FaultyFs fs(c.fault, 3);
    Result r = RunOn({&fs}, 11, 20000);
    ASSERT_FALSE(r.ok) << c.message;
    EXPECT_NE(r.failure.find(c.message), std::string::npos) << r.failure;
    EXPECT_NE(r.failure.find("seed 11"), std::string::npos) << r.failure;
    EXPECT_NE(r.failure.find("last "), std::string::npos) << r.failure;
    if (r.failed_step != 0) {
      // Replaying to the failing step fails at the same step.
      FaultyFs again(c.fault, 3);
      Result replay = RunOn({&again}, 11, r.failed_step);
      EXPECT_FALSE(replay.ok);
      EXPECT_EQ(replay.failed_step, r.failed_step);
    }
  }
}

TEST(ExerciserTest, RepeatsEstaleOnlyWhenAskedTo) {
  FaultyFs strict(FaultyFs::Fault::kStaleOnce, 0), lenient(FaultyFs::Fault::kStaleOnce, 0);
  Result failed = RunOn({&strict}, 12, 3000);
  EXPECT_FALSE(failed.ok);
  EXPECT_NE(failed.failure.find("returned ESTALE"), std::string::npos) << failed.failure;
  MemFs mem;
  Result passed = RunOn({&lenient}, 12, 3000, /*retry_stale=*/true);
  EXPECT_TRUE(passed.ok) << passed.failure;
  EXPECT_EQ(passed.fingerprint, RunOn({&mem}, 12, 3000).fingerprint);
}

TEST(ExerciserTest, PosixBackendOnALocalDirectory) {
  char tmpl[] = "/tmp/nfsedge-fsx-unit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const mode_t old = ::umask(0);
  PosixFs fs(tmpl);
  MemFs mem;
  Result local = RunOn({&fs}, 3, 3000);
  Result model = RunOn({&mem}, 3, 3000);
  ::umask(old);
  EXPECT_TRUE(local.ok) << local.failure;
  EXPECT_EQ(local.fingerprint, model.fingerprint);
  std::string error;
  EXPECT_EQ(RemoveTree(fs, "", &error), 0) << error;
}

}  // namespace
}  // namespace nfsedge::fsx
