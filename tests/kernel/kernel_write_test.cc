// kernel_write_test: the write path of nfsedge (write-behind of UNSTABLE writes, gathering
// of FILE_SYNC writes; proxy/write_path.h) under the real Linux 6.1 kernel NFS client, in
// a User-Mode Linux guest (uml_client.sh), with nfsedge in front of nfs-ganesha and the
// export's `write_behind = true`. Each test is one guest run on a fresh testbed:
//
//   BufferedWritesWithFsync  dd bs=1M conv=fsync (and an unaligned bs=100000): UNSTABLE
//                            WRITEs answered from the proxy's buffer, then COMMIT.
//   FileSyncWritesSyncMount  a `sync` mount (busybox dd has no oflag=sync; the kernel then
//                            sends every write() as one FILE_SYNC WRITE): one writer, then
//                            four at once on disjoint ranges of one file (gathering).
//   DirectWrites             dd oflag=direct, one writer, then four at once on disjoint
//                            ranges of one file (skipped if the guest's dd lacks it).
//   ParallelBufferedWriters  four dd conv=fsync on different files and four on disjoint
//                            ranges (seek=) of one file, all at once.
//
// The data is pseudo-random, made on the host and handed to the guest as /in. After the
// writes the guest drops its page cache and prints the md5sum of every file, then mounts
// the export a second time with `nosharecache` (a new superblock: nothing cached) and
// prints them again. The test checks both lists, and the files on ganesha's disk (read
// directly, while nfsedge still runs), against the md5 of what was written; then it stops
// nfsedge and checks its "stats write" log line: the proxy buffered (write-behind) or
// answered stable writes itself, and gathered several FILE_SYNC writes into one upstream
// syncing call where writers ran at once.
//
// Every test binary of tests/kernel shares main() and the guest setup (kernel/uml_guest.h):
// without a guest (no linux.uml, no root...) every test skips with the reason.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "harness/files.h"
#include "harness/testbed.h"
#include "kernel/guest_workload.h"
#include "kernel/uml_guest.h"
#include "harness/required.h"

namespace nfsedge::kernel_test {
namespace {

using harness::ExitStatus;

// The proxy's last "stats write key=N ..." log line, from "stats write", or "".
std::string LastWriteStats(const std::string& log) {
  const size_t at = log.rfind("stats write ");
  return at == std::string::npos ? "" : log.substr(at, log.find('\n', at) - at);
}

// The key=N fields of a "stats write" line.
using Counters = std::map<std::string, uint64_t>;
Counters ParseCounters(const std::string& line) {
  Counters counters;
  std::istringstream fields(line);
  std::string field;
  while (fields >> field) {
    const size_t eq = field.find('=');
    if (eq != std::string::npos) {
      counters[field.substr(0, eq)] = std::strtoull(field.c_str() + eq + 1, nullptr, 10);
    }
  }
  return counters;
}

// One guest run: what it gets as /in, what it does, what the files must hold after it,
// and what the proxy's counters must show.
struct WriteCase {
  std::string mount_options;                   // extra mount options, "" = default
  std::map<std::string, std::string> inputs;   // /in/<name> -> content
  std::string commands;                        // busybox sh, cwd = the mount
  std::map<std::string, std::string> files;    // path in the export -> expected content
  std::function<void(const Counters&)> check;  // EXPECTs on the proxy's counters
};

// `commands`, then the md5sums of `files` after dropping the page cache ("== dropped")
// and through a second mount sharing nothing with the first ("== remounted").
std::string GuestScript(const WriteCase& c) {
  std::string names;
  for (const auto& [name, content] : c.files) names += " " + name;
  return "set -e\n"
         ". /run.env\n"  // SERVER, NFS_PORT, MNT_PORT, EXPORT, EXTRA of uml_client.sh
         "echo '== write'\n" +
         c.commands +
         "echo 3 > /proc/sys/vm/drop_caches\n"
         "echo '== dropped'\n"
         "md5sum" +
         names +
         "\n"
         "mkdir -p /r\n"
         "mount -t nfs -o vers=3,proto=tcp,nolock,port=$NFS_PORT,mountport=$MNT_PORT,"
         "mountproto=tcp,addr=$SERVER,mountaddr=$SERVER$EXTRA,nosharecache "
         "\"$SERVER:$EXPORT\" /r\n"
         "echo '== remounted'\n"
         "(cd /r && md5sum" +
         names +
         ")\n"
         "umount /r\n"
         "echo '== done'\n";
}

// The dd commands of `writers` writers, each copying its 1/writers share of /in/<in> into
// the same range of `out` (with `dd_args`, which must keep the file: conv=notrunc).
std::vector<std::string> DisjointWriters(const std::string& in, const std::string& out, size_t size,
                                         int writers, size_t block, const std::string& dd_args) {
  const size_t blocks = size / block / writers;
  std::vector<std::string> commands;
  for (int i = 0; i < writers; ++i) {
    const std::string at = std::to_string(i * blocks);
    commands.push_back("dd if=/in/" + in + " of=" + out + " bs=" + std::to_string(block) +
                       " count=" + std::to_string(blocks) + " skip=" + at + " seek=" + at + " " +
                       dd_args + " status=none");
  }
  return commands;
}

// Runs `commands` at once: each in the background, starting when /tmp/go appears (so that
// their writes overlap rather than follow the order of the processes' start), then waits
// for each; the script fails if one does.
std::string Together(const std::vector<std::string>& commands) {
  std::string s = "rm -f /tmp/go; pids=\n";
  for (const std::string& c : commands) {
    s += "(while [ ! -e /tmp/go ]; do usleep 1000; done; " + c + ") & pids=\"$pids $!\"\n";
  }
  return s + "usleep 200000; touch /tmp/go\nfor p in $pids; do wait $p; done\n";
}

// UNSTABLE writes answered from the proxy's buffer, and client COMMITs answered by the
// proxy once that data was stable upstream.
void ExpectWriteBehind(const Counters& c) {
  EXPECT_GT(c.at("buffered"), 0u) << "no UNSTABLE write was answered from the buffer";
  EXPECT_GT(c.at("client_commits"), 0u) << "no client COMMIT was answered by the proxy";
}

// Stable writes answered after a syncing call vs those calls: fewer calls than writes
// means some call served several writes (gathering).
void ExpectGathered(const Counters& c) {
  EXPECT_GT(c.at("stable"), 0u) << "no FILE_SYNC write was answered by the proxy";
  EXPECT_LT(c.at("batches"), c.at("stable"))
      << "every stable write had its own upstream syncing call: nothing was gathered";
}

// The writers at once on one file in FileSyncWritesSyncMount and DirectWrites: four, with
// 32 writes of this size each.
constexpr size_t kGatherBlock = 32768;

class KernelWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Env().skip_reason.empty()) NFSEDGE_SKIP_OR_FAIL(Env().skip_reason);
    ASSERT_TRUE(Env().error.empty()) << Env().error;
  }

  // Starts ganesha (on 127.0.0.1: the guest cannot bypass the proxy) and nfsedge with
  // write-behind on, runs `c` in a guest mounting nfsedge, and checks the results.
  void Run(const WriteCase& c) {
    harness::TempDir dir("kernel-write");
    ASSERT_TRUE(dir.ok());
    const std::string export_dir = dir.Sub("export");
    const std::string in_dir = dir.Sub("in");
    ASSERT_TRUE(harness::MakeDirs(export_dir, 0777).ok());
    ASSERT_TRUE(harness::MakeDirs(in_dir).ok());
    ASSERT_EQ(WriteFiles(in_dir, c.inputs), "");

    harness::Testbed::Options o = BedOptions("kernel-write", export_dir, "127.0.0.1", true);
    o.proxy.exports[0].extra_toml = "write_behind = true\n";
    auto bed = harness::Testbed::Start(o);
    ASSERT_TRUE(bed.ok()) << bed.status().message();

    auto run =
        RunScript(GuestArgs(Target::kProxy, export_dir, in_dir, c.mount_options, GuestScript(c)),
                  dir.Sub("guest.log"));
    ASSERT_TRUE(run.ok()) << run.status().message() << "\n" << (*bed)->LogTails();
    if (run->exit.exited && run->exit.code == kCannotRun) {
      NFSEDGE_SKIP_OR_FAIL(CannotRunReason(run->log));
    }
    const std::string output = GuestOutput(run->log);
    if (output.find("== no oflag=direct\n") != std::string::npos) {
      NFSEDGE_SKIP_OR_FAIL("the guest's dd has no oflag=direct");
    }
    std::printf("[ timing   ] %s: guest run %.2f s\n",
                ::testing::UnitTest::GetInstance()->current_test_info()->name(), run->seconds);

    const std::string context = "--- uml_client.sh output ---\n" + run->log + (*bed)->LogTails();
    EXPECT_TRUE(run->exit.success()) << Explain(run->exit) << "\n" << context;
    EXPECT_NE(output.find("\n== done\n"), std::string::npos)
        << "guest script did not reach '== done'\n"
        << context;
    std::map<std::string, std::string> md5s;
    for (const auto& [name, content] : c.files) md5s[name] = Md5Hex(content);
    std::vector<std::string> problems = CheckMd5s(output, "dropped", md5s);
    for (const std::string& p : CheckMd5s(output, "remounted", md5s)) problems.push_back(p);
    EXPECT_TRUE(problems.empty()) << "in the guest:\n" << Join(problems) << context;
    // Read while nfsedge runs: what the guest's fsync/COMMIT or FILE_SYNC writes made
    // stable must be upstream already, not only flushed at the proxy's exit.
    problems = CheckFiles(export_dir, c.files);
    EXPECT_TRUE(problems.empty()) << "on ganesha's disk (" << export_dir << "):\n"
                                  << Join(problems) << context;

    EXPECT_TRUE((*bed)->proxy()->IsRunning()) << "nfsedge died during the run\n" << context;
    const std::string tails = (*bed)->LogTails();
    const ExitStatus proxy_exit = (*bed)->Stop();
    EXPECT_TRUE(proxy_exit.success())
        << "nfsedge did not shut down cleanly: " << proxy_exit.ToString() << "\n"
        << tails;
    const std::string stats = LastWriteStats(harness::ReadFile((*bed)->proxy()->log_path()));
    ASSERT_FALSE(stats.empty()) << "no 'stats write' line in nfsedge's log\n" << tails;
    std::printf("[ counters ] %s\n", stats.c_str());
    const Counters counters = ParseCounters(stats);
    for (const char* key : {"stable", "buffered", "client_commits", "batches"}) {
      ASSERT_TRUE(counters.count(key)) << "no " << key << "= in the 'stats write' line";
    }
    c.check(counters);
  }
};

constexpr uint64_t kSeed = 0x77726974652d6b;  // "write-k"

TEST_F(KernelWriteTest, BufferedWritesWithFsync) {
  const std::string a = PseudoRandomBytes(kSeed + 1, 4 << 20);
  const std::string b = PseudoRandomBytes(kSeed + 2, 1500000);
  Run({.mount_options = "",
       .inputs = {{"a", a}, {"b", b}},
       .commands = "dd if=/in/a of=a bs=1M count=4 conv=fsync status=none\n"
                   "dd if=/in/b of=b bs=100000 conv=fsync status=none\n",
       .files = {{"a", a}, {"b", b}},
       .check = ExpectWriteBehind});
}

TEST_F(KernelWriteTest, FileSyncWritesSyncMount) {
  constexpr size_t kBlock = 65536;
  const std::string s = PseudoRandomBytes(kSeed + 3, 32 * kBlock);
  const std::string g = PseudoRandomBytes(kSeed + 4, 4 * 32 * kGatherBlock);
  Run({.mount_options = "sync",
       .inputs = {{"s", s}, {"g", g}},
       .commands = "dd if=/in/s of=s bs=65536 status=none\n" +
                   Together(DisjointWriters("g", "g", g.size(), 4, kGatherBlock, "conv=notrunc")),
       .files = {{"s", s}, {"g", g}},
       .check = [](const Counters& c) {
         // One writer: 32 write() calls, each one FILE_SYNC WRITE.
         EXPECT_GE(c.at("stable"), 32u);
         ExpectGathered(c);
       }});
}

TEST_F(KernelWriteTest, DirectWrites) {
  constexpr size_t kBlock = 65536;
  const std::string d = PseudoRandomBytes(kSeed + 5, 32 * kBlock);
  const std::string g = PseudoRandomBytes(kSeed + 6, 4 * 32 * kGatherBlock);
  Run({.mount_options = "",
       .inputs = {{"d", d}, {"g", g}},
       // Asked of dd itself, not of a write through the mount: a write the
       // proxy fails must fail the test, not skip it.
       .commands = "if ! dd --help 2>&1 | grep -q 'oflag=.*direct'; then\n"
                   "  echo '== no oflag=direct'; exit 0\n"
                   "fi\n"
                   "dd if=/in/d of=d bs=65536 oflag=direct status=none\n" +
                   Together(DisjointWriters("g", "g", g.size(), 4, kGatherBlock,
                                            "conv=notrunc oflag=direct")),
       .files = {{"d", d}, {"g", g}},
       .check = [](const Counters& c) {
         // One writer: 32 write() calls, each one FILE_SYNC WRITE (O_DIRECT, <= wsize).
         EXPECT_GE(c.at("stable"), 32u);
         ExpectGathered(c);
       }});
}

TEST_F(KernelWriteTest, ParallelBufferedWriters) {
  // Each writer's data is more than one WRITE (the kernel's wsize is at most 1 MiB): its
  // fsync sends UNSTABLE WRITEs and a COMMIT (a single WRITE would go FILE_SYNC).
  constexpr size_t kSize = 3 << 20;
  std::map<std::string, std::string> inputs, files;
  std::vector<std::string> writers;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "p" + std::to_string(i);
    inputs[name] = files[name] = PseudoRandomBytes(kSeed + 10 + i, kSize);
    writers.push_back("dd if=/in/" + name + " of=" + name + " bs=65536 conv=fsync status=none");
  }
  inputs["shared"] = files["shared"] = PseudoRandomBytes(kSeed + 20, 2 * kSize);
  for (const std::string& w :
       DisjointWriters("shared", "shared", 2 * kSize, 4, 65536, "conv=notrunc,fsync")) {
    writers.push_back(w);
  }
  const std::string commands = Together(writers);
  Run({.mount_options = "",
       .inputs = inputs,
       .commands = commands,
       .files = files,
       .check = ExpectWriteBehind});
}

}  // namespace
}  // namespace nfsedge::kernel_test

int main(int argc, char** argv) { return nfsedge::kernel_test::GuestTestMain(argc, argv); }
