// The write path against a model of its clients and its upstream
// (write_path_test). Each run, from a seed, makes a few hundred random
// steps: client WRITEs (UNSTABLE, FILE_SYNC, and UNSTABLE without ACCESS
// evidence, which the proxy treats as stable) of a few small files by one
// or two writers, client COMMITs of a range or of the whole file, READs and
// SETATTRs held for buffered writes, time passing, and answers to the
// upstream calls in random order. The model upstream keeps each file's
// bytes as written (what a READ sees) and as stable (what survives its
// restart); it answers some WRITEs short, FILE_SYNC when asked UNSTABLE,
// or JUKEBOX, refuses some with NOSPC, and restarts, losing what it had not
// made stable and changing its write verifier. The write buffer is small
// (64 bytes a file, 128 in all), so writes wait for room too. Every reply
// is checked when it comes (docs/architecture.md, "Write path"):
//   - DESIGN rule 1: a write answered FILE_SYNC, or a write answered
//     UNSTABLE whose writer's COMMIT then returns the verifier it was
//     answered with, has its bytes stable upstream at that reply;
//   - rule 2: a writer whose COMMIT returns another verifier writes its
//     uncommitted bytes again, and when all is answered and committed the
//     upstream holds exactly the bytes written last (unless a client was
//     told of an upstream refusal);
//   - rule 3: the stable writes of a file are answered in arrival order;
//   - rule 4: a READ held for buffered writes is released only once the
//     upstream has every byte answered before it came, a SETATTR once they
//     are stable;
//   - rule 8: no call waits for ever (every WRITE is answered).
//
// Each scenario runs seeds 0 to kSeeds - 1; the environment variable
// NFSEDGE_MODEL_SEEDS=N runs seeds 0 to N - 1 instead, for a long run. A
// failure names its seed and step, and the same seed fails the same way
// again.
#include <rpc/xdr/nfs3.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

// Client writes start below kWriteStart and are at most kMaxLength bytes;
// the model keeps kStride bytes of each file.
constexpr uint64_t kWriteStart = 96;
constexpr uint64_t kMaxLength = 24;
constexpr size_t kStride = 160;
constexpr int kSteps = 400;
// Each write's bytes are its id (1 to kLastId), so a byte names the write
// that put it there, and a later write's id is larger.
constexpr int kLastId = 249;
// Seeds a scenario runs (about 3 s for the file on a 2-core machine).
constexpr uint32_t kSeeds = 350;



// The file handle a WRITE3args or COMMIT3args begins with.
std::string HandleOf(const std::string& args) {
  uint32_t n = 0;
  for (int k = 0; k < 4; ++k) n = (n << 8) | static_cast<uint8_t>(args[k]);
  return args.substr(4, n);
}


// What the runs of a test vary.
struct Scenario {
  int files = 1;
  bool two_writers = false;
  int unevidenced_pct = 0;  // UNSTABLE writes without ACCESS evidence
  int refused_pct = 0;      // upstream WRITEs refused with NOSPC
  bool restarts = false;    // the upstream restarts now and then
};

// A client WRITE and what its writer knows of it.
struct ClientWrite {
  int index;
  int file;
  int writer;
  uint64_t offset;
  std::string data;
  bool stable;  // FILE_SYNC, or without evidence
  bool answered = false;
  bool committed = false;      // answered FILE_SYNC, or by a COMMIT's verifier
  bool written_again = false;  // a COMMIT's verifier differed
  Verf verf{};
};

class WriteModelTest : public WritePathTest {
 protected:
  // Runs the seeds of `scenario`, stopping at the first that fails.
  void RunSeeds(const Scenario& scenario, uint32_t seeds) {
    SCOPED_TRACE(::testing::Message()
                 << "scenario: " << scenario.files << " file(s), " << (scenario.two_writers ? 2 : 1)
                 << " writer(s), " << scenario.unevidenced_pct << "% without evidence, "
                 << scenario.refused_pct << "% refused upstream, "
                 << (scenario.restarts ? "" : "no ") << "upstream restarts");
    scenario_ = scenario;
    const uint32_t count = SeedCount(seeds);
    for (uint32_t seed = 0; seed < count && !HasFailure(); ++seed) RunSeed(seed);
  }

 private:
  static std::string Handle(int file) { return "file-" + std::to_string(file); }
  static int FileOf(const std::string& args) { return std::stoi(HandleOf(args).substr(5)); }
  static OpaqueAuth Writer(int writer) { return Cred(writer == 0 ? "A" : "B"); }

  void RunSeed(uint32_t seed) {
    std::mt19937 rng(seed);
    auto pct = [&rng](int p) { return static_cast<int>(rng() % 100) < p; };
    wp_.reset();
    timers_.clear();
    up_.calls.clear();
    bg_.calls.clear();
    options_.write_size = 16;
    options_.max_transfer = 32;
    options_.max_file_bytes = 64;
    options_.max_bytes = 128;
    options_.lone_after = static_cast<int>(rng() % 3);
    Make();
    const size_t bytes = kStride * static_cast<size_t>(scenario_.files);
    stable_.assign(bytes, 0);
    current_.assign(bytes, 0);
    latest_.assign(bytes, 0);
    acked_.assign(bytes, 0);
    upstream_verf_ = Verf{'s', 'A'};
    writes_.clear();
    again_.clear();
    holds_.clear();
    last_stable_answered_.clear();
    told_error_ = false;
    int next_id = 1;

    for (int step = 0; step < kSteps && !HasFailure(); ++step) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", step " << step);
      WriteAgain();
      const int what = static_cast<int>(rng() % 100);
      const int file = static_cast<int>(rng() % scenario_.files);
      const int writer = scenario_.two_writers ? static_cast<int>(rng() % 2) : 0;
      if (what < 30 && next_id <= kLastId) {
        const uint64_t offset = rng() % kWriteStart;
        const std::string data(1 + rng() % kMaxLength, static_cast<char>(next_id++));
        const bool stable = pct(40);
        const bool evidence = !pct(scenario_.unevidenced_pct);
        Write(file, writer, offset, data, stable, evidence);
      } else if (what < 38) {
        const bool range = pct(50);
        const uint64_t offset = range ? rng() % kWriteStart : 0;
        const uint32_t count = range ? static_cast<uint32_t>(rng() % 40) : 0;
        Commit(file, writer, offset, count);
      } else if (what < 44) {
        HoldFor(file, /*stable=*/pct(50));
      } else if (what < 46 && scenario_.restarts) {
        current_ = stable_;
        upstream_verf_[1]++;
      } else if (what < 60) {
        Advance(std::chrono::milliseconds(rng() % 60));
      } else {
        AnswerOneCall(rng, /*faults=*/true);
      }
    }

    // Everything answered, without faults; every writer commits until none
    // has a write left to commit.
    for (int round = 0; round < 60 && !HasFailure(); ++round) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", settling, round " << round);
      for (int k = 0; k < 200; ++k) {
        WriteAgain();
        Advance(std::chrono::milliseconds(60));
        if (!AnswerOneCall(rng, /*faults=*/false) && timers_.empty() && again_.empty()) break;
      }
      const bool all_answered = std::all_of(writes_.begin(), writes_.end(),
                                            [](const ClientWrite& w) { return w.answered; });
      const bool to_commit = std::any_of(writes_.begin(), writes_.end(), [](const ClientWrite& w) {
        return w.answered && !w.committed && !w.written_again;
      });
      if (all_answered && !to_commit) break;
      if (!all_answered) continue;
      for (int f = 0; f < scenario_.files; ++f) {
        Commit(f, 0, 0, 0);
        if (scenario_.two_writers) Commit(f, 1, 0, 0);
      }
    }
    if (HasFailure()) return;

    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", once all is answered");
    for (const ClientWrite& w : writes_) {
      ASSERT_TRUE(w.answered) << Describe(w) << " was never answered";
    }
    // A client told of a refusal knows its bytes may be missing.
    if (told_error_) return;
    for (size_t b = 0; b < stable_.size(); ++b) {
      ASSERT_EQ(static_cast<int>(stable_[b]), static_cast<int>(latest_[b]))
          << "file " << b / kStride << " byte " << b % kStride
          << ": the upstream's stable bytes are those of write id " << int{stable_[b]}
          << ", the last write there was id " << int{latest_[b]} << " (0: none)";
    }
  }

  std::string Describe(const ClientWrite& w) const {
    return (::testing::Message() << "write #" << w.index << " (id "
                                 << int{static_cast<uint8_t>(w.data[0])} << ", file " << w.file
                                 << ", writer " << w.writer << ", bytes [" << w.offset << ", "
                                 << w.offset + w.data.size() << "), "
                                 << (w.stable ? "stable" : "unstable") << ")")
        .GetString();
  }

  void Write(int file, int writer, uint64_t offset, const std::string& data, bool stable,
             bool evidence) {
    const size_t i = writes_.size();
    writes_.push_back(
        ClientWrite{static_cast<int>(i), file, writer, offset, data, stable || !evidence});
    for (size_t k = 0; k < data.size(); ++k) {
      latest_[file * kStride + offset + k] = static_cast<uint8_t>(data[k]);
    }
    SendWrite(
        Handle(file), offset, writes_.back().data, stable ? FILE_SYNC : UNSTABLE, Writer(writer),
        evidence, exp_, [this, i](std::string r) { OnWriteReply(i, DecodeWriteReply(r)); },
        [] { ADD_FAILURE() << "a WRITE was forwarded"; });
  }

  void OnWriteReply(size_t i, const ClientReply& r) {
    ClientWrite& w = writes_[i];
    ASSERT_FALSE(w.answered) << Describe(w) << " was answered twice";
    w.answered = true;
    if (r.status != NFS3_OK) {
      told_error_ = true;
      return;
    }
    if (w.stable) {
      ASSERT_EQ(r.committed, FILE_SYNC) << Describe(w) << " was not answered FILE_SYNC";
      auto last = last_stable_answered_.find(w.file);
      EXPECT_TRUE(last == last_stable_answered_.end() || last->second < w.index)
          << Describe(w) << " was answered after stable write #" << last->second
          << ", which came later (DESIGN rule 3)";
      last_stable_answered_[w.file] = w.index;
    }
    if (r.committed == FILE_SYNC) {
      ExpectStable(w, "its FILE_SYNC reply");
      w.committed = true;
    } else {
      w.verf = r.verf;
    }
    for (size_t k = 0; k < w.data.size(); ++k) {
      uint8_t& acked = acked_[w.file * kStride + w.offset + k];
      acked = std::max(acked, static_cast<uint8_t>(w.data[k]));
    }
  }

  // DESIGN rule 1: every byte of `w` (or of a later write over it) is
  // stable upstream when `what` comes.
  void ExpectStable(const ClientWrite& w, const char* what) {
    if (HasFailure()) return;  // one failure is enough
    for (size_t k = 0; k < w.data.size(); ++k) {
      const uint8_t up = stable_[w.file * kStride + w.offset + k];
      ASSERT_GE(int{up}, int{static_cast<uint8_t>(w.data[k])})
          << what << " to " << Describe(w) << " came before byte " << w.offset + k
          << " was stable upstream (the upstream's stable byte is of write id " << int{up}
          << ") (DESIGN rule 1)";
    }
  }

  void Commit(int file, int writer, uint64_t offset, uint32_t count) {
    // The writes this COMMIT tells the writer about: its own, answered
    // UNSTABLE before it, in its range.
    std::vector<size_t> covered;
    const uint64_t end = count == 0 ? UINT64_MAX : offset + count;
    for (const ClientWrite& w : writes_) {
      if (w.writer == writer && w.file == file && w.answered && !w.committed && !w.written_again &&
          w.offset >= offset && w.offset + w.data.size() <= end) {
        covered.push_back(static_cast<size_t>(w.index));
      }
    }
    SendCommit(
        Handle(file), offset, count, Writer(writer), exp_,
        [this, covered](std::string r) { OnCommitReply(covered, DecodeCommitReply(r)); },
        [] { ADD_FAILURE() << "a COMMIT was forwarded"; });
  }

  void OnCommitReply(const std::vector<size_t>& covered, const ClientReply& c) {
    if (c.status != NFS3_OK) {
      told_error_ = true;
      return;
    }
    for (size_t i : covered) {
      ClientWrite& w = writes_[i];
      if (w.committed || w.written_again) continue;
      if (w.verf == c.verf) {
        ExpectStable(w, "a COMMIT reply with its verifier");
        w.committed = true;
      } else {
        // DESIGN rule 2: the writer sends its bytes again (as they are now
        // in its cache), at its next step.
        w.written_again = true;
        again_.push_back(i);
      }
    }
  }

  // The writes the writers must send again, as UNSTABLE writes of what
  // their bytes hold now.
  void WriteAgain() {
    std::vector<size_t> again;
    again.swap(again_);
    for (size_t i : again) {
      const ClientWrite w = writes_[i];
      std::string data(w.data.size(), '\0');
      for (size_t k = 0; k < data.size(); ++k) {
        data[k] = static_cast<char>(latest_[w.file * kStride + w.offset + k]);
      }
      Write(w.file, w.writer, w.offset, data, /*stable=*/false, /*evidence=*/true);
    }
  }

  // A READ (or, `stable`, a SETATTR) of `file` held until the upstream has
  // the bytes answered before it (DESIGN rule 4).
  void HoldFor(int file, bool stable) {
    const std::string fh = Handle(file);
    std::vector<uint8_t> acked(acked_.begin() + file * kStride,
                               acked_.begin() + (file + 1) * kStride);
    const uint64_t at = wp_->last_stamp();
    auto check = [this, acked = std::move(acked), stable, file] {
      // What the upstream had before a restart, or before a refusal, is
      // not known here.
      if ((!stable && scenario_.restarts) || scenario_.refused_pct > 0 || HasFailure()) return;
      const std::vector<uint8_t>& up = stable ? stable_ : current_;
      for (size_t k = 0; k < kStride; ++k) {
        ASSERT_GE(int{up[file * kStride + k]}, int{acked[k]})
            << (stable ? "a SETATTR" : "a READ") << " of file " << file
            << " was released before byte " << k << " of write id " << int{acked[k]} << " was "
            << (stable ? "stable " : "") << "upstream (DESIGN rule 4)";
      }
    };
    auto again = std::make_shared<std::function<void()>>();
    *again = [this, fh, stable, at, check, weak = std::weak_ptr<std::function<void()>>(again)] {
      if (auto self = weak.lock(); self && wp_->Hold(fh, stable, *self, at)) return;
      check();
    };
    holds_.push_back(again);
    if (!wp_->Hold(fh, stable, *again)) check();
  }

  // Answers one of the upstream calls waiting, picked at random; with
  // `faults`, now and then short, with JUKEBOX, with NOSPC. Returns false
  // iff none was waiting.
  bool AnswerOneCall(std::mt19937& rng, bool faults) {
    std::vector<std::pair<HeldUpstream*, size_t>> waiting;
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (size_t i = 0; i < u->calls.size(); ++i) {
        if (!u->calls[i].answered) waiting.emplace_back(u, i);
      }
    }
    if (waiting.empty()) return false;
    auto pct = [&rng](int p) { return static_cast<int>(rng() % 100) < p; };
    auto [u, i] = waiting[rng() % waiting.size()];
    const HeldUpstream::Held& call = u->calls[i];
    if (call.proc == NFSPROC3_FSINFO) {
      u->Answer(i, FsinfoResults());
      return true;
    }
    if (call.proc != NFSPROC3_WRITE && call.proc != NFSPROC3_COMMIT) {
      ADD_FAILURE() << "upstream call of procedure " << call.proc;
      u->calls[i].answered = true;
      return true;
    }
    const size_t base = static_cast<size_t>(FileOf(call.args)) * kStride;
    if (call.proc == NFSPROC3_COMMIT) {
      if (faults && pct(5)) {
        u->Answer(i, CommitFail(NFS3ERR_JUKEBOX));
        return true;
      }
      std::copy(current_.begin() + base, current_.begin() + base + kStride, stable_.begin() + base);
      u->Answer(i, CommitOk(upstream_verf_, Attr(kWriteStart, 6)));
      return true;
    }
    const SentWrite w = DecodeWriteArgs(call.args);
    if (faults && pct(5)) {
      u->Answer(i, WriteFail(NFS3ERR_JUKEBOX));
      return true;
    }
    if (faults && pct(scenario_.refused_pct)) {
      u->Answer(i, WriteFail(NFS3ERR_NOSPC));
      return true;
    }
    size_t taken = w.data.size();
    if (faults && taken > 1 && pct(8)) taken = 1 + rng() % (taken - 1);
    stable_how committed = w.stable;
    if (committed == UNSTABLE && pct(10)) committed = FILE_SYNC;
    for (size_t k = 0; k < taken; ++k) {
      const size_t at = base + w.offset + k;
      current_[at] = static_cast<uint8_t>(w.data[k]);
      if (committed != UNSTABLE) stable_[at] = current_[at];
    }
    u->Answer(i, WriteOk(static_cast<uint32_t>(taken), committed, upstream_verf_, Attr(kWriteStart, 5)));
    return true;
  }

  Scenario scenario_;
  // The model upstream: its bytes as written and as stable, its verifier.
  std::vector<uint8_t> current_, stable_;
  Verf upstream_verf_{};
  // The clients: every write, the last written byte and the largest
  // acknowledged one at each place, the writes to send again.
  std::vector<ClientWrite> writes_;
  std::vector<uint8_t> latest_, acked_;
  std::vector<size_t> again_;
  std::map<int, int> last_stable_answered_;  // by file: the index of the last
  bool told_error_ = false;
  std::vector<std::shared_ptr<std::function<void()>>> holds_;
};

TEST_F(WriteModelTest, EveryReplyKeepsTheStabilityRules) { RunSeeds(Scenario{}, kSeeds); }

TEST_F(WriteModelTest, DataLostByAnUpstreamRestartIsWrittenAgain) {
  RunSeeds(Scenario{.restarts = true}, kSeeds);
}

TEST_F(WriteModelTest, TwoWritersWithAndWithoutEvidenceKeepTheRules) {
  RunSeeds(Scenario{.two_writers = true, .unevidenced_pct = 20}, kSeeds);
}

TEST_F(WriteModelTest, WritesWithoutEvidenceKeepTheRulesAcrossUpstreamRestarts) {
  RunSeeds(Scenario{.unevidenced_pct = 20, .restarts = true}, kSeeds);
}

TEST_F(WriteModelTest, DataIsWrittenOrItsWriterToldOfTheRefusal) {
  RunSeeds(Scenario{.unevidenced_pct = 10, .refused_pct = 3, .restarts = true}, kSeeds);
  RunSeeds(Scenario{.two_writers = true, .refused_pct = 1}, kSeeds);
}

TEST_F(WriteModelTest, FilesSharingATightBufferKeepTheRules) {
  RunSeeds(Scenario{.files = 3, .two_writers = true, .unevidenced_pct = 10}, kSeeds);
  RunSeeds(Scenario{.files = 3, .unevidenced_pct = 10, .restarts = true}, kSeeds);
}

}  // namespace
}  // namespace nfsedge::write_path_test
