// proxy_data_test: the data cache through nfsedge in front of a real ganesha.
// Data read through the proxy always equals the file on the upstream (every
// byte compared), in every read size and alignment, at and across EOF;
// cached data is used (the proxy's counters say so) and is tied to the
// file's version: a change behind the proxy's back (same size, shorter,
// longer) is seen within the export's lifetime, a write through the proxy at
// once; a credential without read permission never gets cached data; after
// a proxy restart the disk tier serves the blocks again once the file is
// revalidated, and a corrupt or foreign disk tier is rebuilt, never trusted.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <thread>

#include "harness/files.h"
#include "integration_env.h"

namespace nfsedge::itest {
namespace {

using namespace harness;  // NOLINT: test file, harness types throughout.
using std::chrono::steady_clock;

constexpr int kLifetimeSeconds = 2;
constexpr uint32_t kBlock = 64 << 10;

std::string Content(uint64_t seed, size_t size) {
  std::mt19937_64 rng(seed);
  std::string s(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    uint64_t v = rng();
    for (size_t k = 0; k < 8 && i + k < size; ++k) s[i + k] = static_cast<char>(v >> (8 * k));
  }
  return s;
}

// Returns the value of `key=N` in the last line of `log` that has it, or -1.
int64_t Counter(const std::string& log, const std::string& key) {
  std::regex re("[ ;]" + key + "=([0-9]+)");
  int64_t v = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator();
       ++it) {
    v = std::stoll((*it)[1]);
  }
  return v;
}

// Reads the file `fh` from offset 0 to its end in READs of `chunk` bytes,
// as a client does, while it may change from `before` to `after` behind the
// proxy. A read of several calls may span the change, but each READ is
// answered from one version: its bytes and its end-of-file flag are those
// of `before` or of `after` at its offset. Once a READ has shown only the
// new version (*newer), no later READ shows the old one. Returns the bytes
// read.
std::string ReadAcrossChange(RawNfs& c, const std::string& fh, const std::string& before,
                             const std::string& after, bool* newer, uint32_t chunk = 32768) {
  std::string got;
  for (uint64_t off = 0;; off += chunk) {
    ReadResult r = c.Read(fh, off, chunk);
    if (!r.ok()) {
      ADD_FAILURE() << "READ at " << off << ": " << r.StatusString();
      break;
    }
    auto is = [&](const std::string& v) {
      const std::string piece = off < v.size() ? v.substr(off, chunk) : std::string();
      return r.data == piece && r.eof == (off + chunk >= v.size());
    };
    const bool old_version = is(before), new_version = is(after);
    if (!old_version && !new_version) {
      ADD_FAILURE() << "READ at " << off << " (" << r.count << " bytes, eof " << r.eof
                    << ") is neither the old nor the new version";
      break;
    }
    if (*newer && !new_version) {
      ADD_FAILURE() << "READ at " << off << " shows the old version after the new one";
      break;
    }
    if (new_version && !old_version) *newer = true;
    got += r.data;
    if (r.eof || r.data.empty()) break;
  }
  return got;
}

class DataTest : public ::testing::Test {
 protected:
  void SetUp() override { NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK(); }

  // Starts ganesha and nfsedge with exports "timed" (lifetime 2 s) and
  // "nocache" (lifetime 0); `disk_dir` non-empty adds the disk tier.
  void StartBed(const std::string& disk_dir = "") {
    bed_.reset();
    Testbed::Options o;
    o.name = "data";
    for (const char* name : {"timed", "nocache"}) {
      o.ganesha.exports.emplace_back();
      o.ganesha.exports.back().path = name;
      ProxyExport e;
      e.path = std::string("/") + name;
      e.upstream_path = name;
      o.proxy.exports.push_back(e);
    }
    const std::string t = std::to_string(kLifetimeSeconds);
    o.proxy.exports[0].extra_toml = "acregmin = " + t + "\nacregmax = " + t +
                                    "\nacdirmin = " + t + "\nacdirmax = " + t + "\n";
    o.proxy.exports[1].extra_toml = "acregmin = 0\nacregmax = 0\nacdirmin = 0\nacdirmax = 0\n";
    o.proxy.extra_toml = "[cache]\nrefresh_ahead_ms = 0\nblock_size = \"64K\"\n";
    if (!disk_dir.empty()) o.proxy.extra_toml += "disk_dir = \"" + disk_dir + "\"\n";
    auto tb = Testbed::Start(o);
    ASSERT_TRUE(tb.ok()) << tb.status().message();
    bed_ = std::move(tb).value();
  }
  void TearDown() override {
    if (bed_) PrintLogsOnFailure(*this, bed_.get());
  }

  std::string Disk(int i) { return bed_->ganesha().export_path(i); }
  std::unique_ptr<RawNfs> Client(uint32_t uid = 0, uint32_t gid = 0) {
    return ConnectOrFail("127.0.0.1", bed_->proxy()->nfs_port(), Credential{uid, gid, {}, "t"});
  }
  // Mounts export `i`, looks up `name` and asks ACCESS as a client does at
  // open; returns the file's handle.
  std::string Open(RawNfs& c, int i, const std::string& name) {
    static const char* kPaths[] = {"/timed", "/nocache"};
    MntResult m = c.Mnt(kPaths[i]);
    EXPECT_TRUE(m.ok());
    LookupResult f = c.Lookup(m.fh, name);
    EXPECT_TRUE(f.ok()) << name << ": " << f.StatusString();
    EXPECT_TRUE(c.Access(f.fh, 0x3f).ok());
    return f.fh;
  }
  // Stops the proxy and returns its log (with the counters it logs at exit).
  std::string StopProxyLog() {
    ExitStatus exit = bed_->proxy()->Stop();
    EXPECT_TRUE(exit.success());
    return bed_->proxy()->LogTail(30);
  }

  std::unique_ptr<Testbed> bed_;
};

TEST_F(DataTest, EveryReadEqualsTheUpstreamFileAndRepeatsComeFromCache) {
  StartBed();
  const std::vector<size_t> sizes = {0, 1, kBlock - 1, kBlock, kBlock + 1, 3 * kBlock + 4321,
                                     (3u << 20) + 123};
  for (size_t s : sizes) {
    ASSERT_TRUE(WriteFile(Disk(0) + "/f" + std::to_string(s), Content(s, s)).ok());
  }
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::mt19937_64 rng(7);
  int reads = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t s : sizes) {
      const std::string want = Content(s, s);
      std::string fh = Open(*c, 0, "f" + std::to_string(s));
      // Whole file in several read sizes, then random unaligned ranges,
      // some across EOF and some beyond it.
      for (uint32_t chunk : {4096u, 32768u, 1u << 20}) {
        ReadResult r = c->ReadAll(fh, 0, s + 10, chunk);
        ASSERT_TRUE(r.ok()) << r.StatusString();
        ASSERT_EQ(r.data, want) << "size " << s << " chunk " << chunk;
        ++reads;
      }
      for (int k = 0; k < 20; ++k) {
        uint64_t off = rng() % (s + 100);
        uint32_t count = 1 + static_cast<uint32_t>(rng() % (200 << 10));
        ReadResult r = c->Read(fh, off, count);
        ASSERT_TRUE(r.ok()) << r.StatusString();
        std::string expect = off < s ? want.substr(off, count) : "";
        ASSERT_EQ(r.count, expect.size()) << "size " << s << " at " << off << "+" << count;
        ASSERT_EQ(r.data, expect) << "size " << s << " at " << off << "+" << count;
        EXPECT_EQ(r.eof, off + count >= s) << "size " << s << " at " << off << "+" << count;
        ++reads;
      }
    }
  }
  std::string log = StopProxyLog();
  EXPECT_GT(Counter(log, "served"), 0) << log;
  EXPECT_GT(Counter(log, "memory_hits"), reads / 4) << log;
  EXPECT_EQ(Counter(log, "fetch_errors"), 0) << log;
  // The read-ahead cursor pool in the same line: streams were tracked, each
  // file's restart from offset 0 was a jump of a sequential stream.
  EXPECT_GT(Counter(log, "new_cursors"), 0) << log;
  EXPECT_GT(Counter(log, "slowdowns"), 0) << log;
  EXPECT_GT(Counter(log, "advised"), 0) << log;
  EXPECT_GT(Counter(log, "cursors"), 0) << log;
  EXPECT_EQ(Counter(log, "cursor_evictions"), 0) << "the pool holds every stream\n" << log;
}

TEST_F(DataTest, ChangeBehindTheProxyIsSeenWithinTheLifetime) {
  StartBed();
  const size_t size = 5 * kBlock + 17;
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(1, size)).ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, 0, "f");
  ASSERT_EQ(c->ReadAll(fh, 0, size).data, Content(1, size));
  // Same size, other bytes, and then a shorter file: each must show within
  // the lifetime (plus slack), never a READ of mixed versions.
  for (auto [seed, len] : {std::pair<uint64_t, size_t>{2, size}, {3, size / 3}}) {
    ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(seed, len)).ok());
    auto changed = steady_clock::now();
    const std::string before = seed == 2 ? Content(1, size) : Content(2, size);
    const std::string after = Content(seed, len);
    std::string got;
    bool newer = false;
    while (steady_clock::now() - changed < std::chrono::seconds(kLifetimeSeconds + 3)) {
      got = ReadAcrossChange(*c, fh, before, after, &newer);
      if (::testing::Test::HasFailure() || got == after) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ASSERT_FALSE(::testing::Test::HasFailure());
    EXPECT_EQ(got, after) << "still stale after the lifetime";
  }
}

// A file that grows behind the proxy's back (appended to at the head
// office), from the middle of a block and then past whole blocks: within the
// lifetime every read sees the new length and bytes; until then each READ
// sees the old version or the new, never a mix, and never wrong bytes past
// the old end.
TEST_F(DataTest, FileGrowingBehindTheProxyIsSeenWithinTheLifetime) {
  StartBed();
  const std::string grown = Content(4, 7 * kBlock + 5);
  size_t size = 3 * kBlock + 100;  // the last block is partial, with EOF
  const std::string path = Disk(0) + "/f";
  ASSERT_TRUE(WriteFile(path, grown.substr(0, size)).ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, 0, "f");
  ASSERT_EQ(c->ReadAll(fh, 0, grown.size() + 100, 32768).data, grown.substr(0, size));
  for (size_t len : {size_t{5 * kBlock}, grown.size()}) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::app);
      out << grown.substr(size, len - size);
      out.close();
      ASSERT_TRUE(out) << "cannot append to " << path;
    }
    const auto changed = steady_clock::now();
    std::string got;
    bool newer = false;
    while (steady_clock::now() - changed < std::chrono::seconds(kLifetimeSeconds + 3)) {
      got = ReadAcrossChange(*c, fh, grown.substr(0, size), grown.substr(0, len), &newer);
      ASSERT_FALSE(::testing::Test::HasFailure());
      if (got == grown.substr(0, len)) break;
      ReadResult beyond = c->Read(fh, size, 4096);
      ASSERT_TRUE(beyond.ok()) << beyond.StatusString();
      ASSERT_EQ(beyond.data, grown.substr(size, beyond.count)) << "wrong bytes past the old end";
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(got.size(), len) << "still the old length after the lifetime";
    EXPECT_EQ(got, grown.substr(0, len)) << "the grown file read wrong";
    ReadResult added = c->Read(fh, size, static_cast<uint32_t>(len - size));
    ASSERT_TRUE(added.ok()) << added.StatusString();
    EXPECT_EQ(added.data, grown.substr(size, len - size)) << "the added part alone";
    EXPECT_TRUE(added.eof);
    size = len;
  }
}

TEST_F(DataTest, LifetimeZeroAlwaysReadsTheUpstream) {
  StartBed();
  ASSERT_TRUE(WriteFile(Disk(1) + "/f", Content(1, 100000)).ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  std::string fh = Open(*c, 1, "f");
  ASSERT_EQ(c->ReadAll(fh, 0, 200000).data, Content(1, 100000));
  ASSERT_TRUE(WriteFile(Disk(1) + "/f", Content(2, 100000)).ok());
  EXPECT_EQ(c->ReadAll(fh, 0, 200000).data, Content(2, 100000));
}

TEST_F(DataTest, WriteThroughTheProxyIsReadBackAtOnce) {
  StartBed();
  const size_t size = 4 * kBlock;
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(1, size)).ok());
  auto a = Client();
  auto b = Client();
  ASSERT_TRUE(a && b);
  std::string fa = Open(*a, 0, "f");
  std::string fb = Open(*b, 0, "f");
  std::string want = Content(1, size);
  ASSERT_EQ(b->ReadAll(fb, 0, size).data, want);  // cached now
  for (auto [off, len] : {std::pair<uint64_t, size_t>{100, 10}, {kBlock - 3, 9}, {size - 1, 5}}) {
    std::string patch = Content(off, len);
    ASSERT_TRUE(a->Write(fa, off, patch, Stable::kFileSync).ok());
    if (want.size() < off + len) want.resize(off + len);
    want.replace(off, len, patch);
    EXPECT_EQ(b->ReadAll(fb, 0, size + 100, 32768).data, want) << "after write at " << off;
    EXPECT_EQ(a->ReadAll(fa, 0, size + 100).data, want) << "after write at " << off;
  }
}

// DESIGN rule 6: a user the upstream refuses never gets the blocks another
// user's reads cached.
TEST_F(DataTest, CachedDataIsNotGivenToAUserWithoutReadPermission) {
  StartBed();
  const std::string path = Disk(0) + "/secret";
  ASSERT_TRUE(WriteFile(path, Content(9, 3 * kBlock)).ok());
  ASSERT_EQ(chown(path.c_str(), 1001, 1001), 0);
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  auto owner = Client(1001, 1001);
  auto other = Client(1002, 1002);
  ASSERT_TRUE(owner && other);
  std::string fo = Open(*owner, 0, "secret");
  std::string fx = Open(*other, 0, "secret");
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(owner->ReadAll(fo, 0, 3 * kBlock).data, Content(9, 3 * kBlock));
    ReadResult r = other->Read(fx, 0, 4096);
    EXPECT_EQ(r.status, kNfs3ErrAcces) << "pass " << i << ": " << r.StatusString();
    EXPECT_TRUE(r.data.empty());
  }
}

TEST_F(DataTest, DiskTierServesBlocksAgainAfterARestart) {
  StartBed("/run/nfsedge-data-test-cache");
  const size_t size = (2u << 20) + 999;
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(5, size)).ok());
  {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->ReadAll(Open(*c, 0, "f"), 0, size).data, Content(5, size));
  }
  std::string first = StopProxyLog();
  ASSERT_GT(Counter(first, "fetch_bytes") + Counter(first, "readahead_bytes"), 0) << first;

  // Same disk directory, new proxy process: memory is empty, the handle
  // registry too (the client mounts again). The blocks come from disk once
  // fresh attributes (here from the LOOKUP) show the file unchanged.
  ASSERT_TRUE(bed_->RestartProxy().ok());
  {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->ReadAll(Open(*c, 0, "f"), 0, size, 65536).data, Content(5, size));
  }
  std::string second = StopProxyLog();
  EXPECT_GT(Counter(second, "disk_hits"), 0) << second;
  EXPECT_EQ(Counter(second, "fetch_bytes"), 0) << "every block should come from disk\n" << second;
  EXPECT_EQ(Counter(second, "readahead_bytes"), 0) << second;

  // A file changed while the proxy was down: the disk blocks are not used.
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(6, size)).ok());
  ASSERT_TRUE(bed_->RestartProxy().ok());
  auto c = Client();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ReadAll(Open(*c, 0, "f"), 0, size).data, Content(6, size));
}

// A disk tier directory that is not a usable store when the proxy starts
// (the store's files overwritten with garbage; then files of something else)
// is detected and rebuilt empty: the proxy starts, says so in its log, never
// serves a block from it, and every read is right.
TEST_F(DataTest, CorruptOrForeignDiskTierIsRebuiltNotTrusted) {
  namespace fs = std::filesystem;
  const std::string dir = "/run/nfsedge-data-test-corrupt";
  std::error_code ec;
  fs::remove_all(dir, ec);
  StartBed(dir);
  const size_t size = (1u << 20) + 777;
  ASSERT_TRUE(WriteFile(Disk(0) + "/f", Content(7, size)).ok());
  auto read_file = [&] {
    auto c = Client();
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->ReadAll(Open(*c, 0, "f"), 0, size + 100, 65536).data, Content(7, size));
  };
  read_file();
  std::string log = StopProxyLog();
  ASSERT_GT(Counter(log, "puts"), 0) << "blocks went to the disk tier\n" << log;
  auto rebuilds = [&] {
    std::string all = bed_->proxy()->LogTail(1 << 20);
    size_t n = 0;
    for (size_t at = all.find("rebuilding it empty"); at != std::string::npos;
         at = all.find("rebuilding it empty", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_EQ(rebuilds(), 0u) << "a new directory is not rebuilt";

  // Garbage over every file of the store, each at least as long as before.
  std::mt19937_64 rng(3);
  int overwritten = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string junk(std::max<uintmax_t>(e.file_size(), 64), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    ASSERT_TRUE(WriteFile(e.path().string(), junk).ok());
    ++overwritten;
  }
  ASSERT_GT(overwritten, 1);
  ASSERT_TRUE(bed_->RestartProxy().ok()) << "the proxy starts on a corrupt disk tier";
  read_file();
  log = StopProxyLog();
  EXPECT_EQ(rebuilds(), 1u) << "the corrupt store is logged and rebuilt";
  EXPECT_EQ(Counter(log, "disk_hits"), 0) << log;
  EXPECT_GT(Counter(log, "puts"), 0) << "the rebuilt store is used\n" << log;

  // Files of something else, no store.
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  ASSERT_TRUE(WriteFile(dir + "/notes.txt", "not a block store\n").ok());
  ASSERT_TRUE(bed_->RestartProxy().ok()) << "the proxy starts on a foreign directory";
  read_file();
  log = StopProxyLog();
  EXPECT_EQ(rebuilds(), 2u) << "the foreign directory is logged and rebuilt";
  EXPECT_EQ(Counter(log, "disk_hits"), 0) << log;

  // The rebuilt store is a good one: a restart uses it without rebuilding.
  ASSERT_TRUE(bed_->RestartProxy().ok());
  read_file();
  log = StopProxyLog();
  EXPECT_EQ(rebuilds(), 2u) << "a good store is not rebuilt";
  EXPECT_GT(Counter(log, "disk_hits"), 0) << log;
}

}  // namespace
}  // namespace nfsedge::itest
