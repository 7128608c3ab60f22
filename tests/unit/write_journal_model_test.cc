// The edge journal against a model of its disk, its clients and the
// upstream, with a crash of the proxy (write_path_test). Each run, from a
// seed, makes random steps on a write_back export: client WRITEs (UNSTABLE,
// FILE_SYNC, and without ACCESS evidence) and COMMITs by one or two
// writers, the journal's disk taking what is queued as one batch (or
// refusing the batch: its appends fail, its removals and verifier changes
// go again), time passing, and answers to the upstream calls in random
// order (short, JUKEBOX, NOSPC; the upstream restarts now and then). Then
// the proxy dies at that point: each upstream call it was waiting for
// reaches the upstream or not, and only what the disk took is left. A new
// write path replays the journal's records in order (as Daemon::
// StartWritePath does: Recover, then FlushAll), and once it has settled:
//   - DESIGN rule 1 with the journal in the chain (docs/architecture.md,
//     "Edge journal"): every byte of a write answered FILE_SYNC, or
//     answered UNSTABLE and then covered by a COMMIT that returned its
//     verifier, is stable upstream, and no older record was replayed over
//     it;
//   - the journal is empty and nothing is left buffered.
// One loss the architecture documents is not counted: a write whose own
// append the disk refused (answered once stable upstream), where a record
// older than it is still on disk at the crash and is replayed over it.
//
// Each scenario runs seeds 0 to kSeeds - 1; the environment variable
// NFSEDGE_MODEL_SEEDS=N runs seeds 0 to N - 1 instead, for a long run. A
// failure names its seed and step, and the same seed fails the same way
// again.
#include <rpc/xdr/nfs3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cache/write_journal.h"
#include "write_path_fixture.h"

namespace nfsedge::write_path_test {
namespace {

// Client writes start below kWriteStart and are at most kMaxLength bytes;
// the model keeps kFileBytes of the one file.
constexpr uint64_t kWriteStart = 96;
constexpr uint64_t kMaxLength = 24;
constexpr size_t kFileBytes = 160;
// Each write's bytes are its id (1 to kLastId), so a byte names the write
// that put it there, and a later write's id is larger.
constexpr int kLastId = 249;
// Seeds a scenario runs (about 3 s for the file on a 2-core machine).
constexpr uint32_t kSeeds = 900;




// A journal whose disk takes everything queued at once when the test says
// (one batch, as the journal's writer thread does), or refuses it all.
class ModelJournal : public JournalSink {
 public:
  const std::array<char, 8>& verifier() const override { return verf_; }
  uint64_t NextSeq() override { return next_seq_++; }
  void Append(JournalRecord r, std::function<void(Status)> done) override {
    live_.insert(r.seq);
    seq_of_id[static_cast<uint8_t>(r.data[0])] = r.seq;
    queue_.push_back(Queued{kPut, std::move(r), 0, std::move(done), {}});
  }
  void Sync(std::function<void(Status)> done) override {
    queue_.push_back(Queued{kSync, {}, 0, std::move(done), {}});
  }
  void Remove(uint64_t seq, std::function<void(Status)> done) override {
    if (!live_.erase(seq)) {
      if (done) Sync(std::move(done));
      return;
    }
    queue_.push_back(Queued{kDelete, {}, seq, std::move(done), {}});
  }
  void ChangeVerifier() override {
    verf_[7]++;
    queue_.push_back(Queued{kVerifier, {}, 0, {}, verf_});
  }

  // The disk takes (`ok`) or refuses every queued operation as one batch.
  // A refused batch fails its appends; its removals and verifier changes
  // go again, first, with the next one.
  void Batch(bool ok) {
    std::deque<Queued> batch;
    batch.swap(queue_);
    std::vector<std::function<void(Status)>> dones;
    std::deque<Queued> again;
    for (Queued& q : batch) {
      if (ok) {
        if (q.kind == kPut) disk[q.record.seq] = q.record;
        if (q.kind == kDelete) disk.erase(q.seq);
        if (q.kind == kVerifier) disk_verf = q.verf;
      } else if (q.kind == kPut) {
        refused_ids.insert(static_cast<uint8_t>(q.record.data[0]));
      } else if (q.kind == kDelete || q.kind == kVerifier) {
        again.push_back(Queued{q.kind, {}, q.seq, {}, q.verf});
      }
      if (q.done) dones.push_back(std::move(q.done));
    }
    queue_.insert(queue_.begin(), again.begin(), again.end());
    const Status s = ok ? Status::Ok() : Status(StatusCode::kIoError, "disk");
    for (auto& done : dones) done(s);
  }
  bool idle() const { return queue_.empty(); }

  // What a restart finds: the records and verifier on disk.
  void Reopen(const std::map<uint64_t, JournalRecord>& records, const std::array<char, 8>& verf) {
    disk = records;
    disk_verf = verf_ = verf;
    for (const auto& [seq, r] : records) {
      live_.insert(seq);
      next_seq_ = seq + 1;
    }
  }

  std::map<uint64_t, JournalRecord> disk;  // by sequence number
  std::array<char, 8> disk_verf{'j', 'o', 'u', 'r', 'n', 'a', 'l', 0};
  std::set<uint8_t> refused_ids;          // writes whose append the disk refused
  std::map<uint8_t, uint64_t> seq_of_id;  // each write's record

 private:
  enum Kind { kPut, kDelete, kSync, kVerifier };
  struct Queued {
    Kind kind;
    JournalRecord record;
    uint64_t seq;
    std::function<void(Status)> done;
    std::array<char, 8> verf;
  };
  std::deque<Queued> queue_;
  std::set<uint64_t> live_;  // appended, not removed
  std::array<char, 8> verf_{'j', 'o', 'u', 'r', 'n', 'a', 'l', 0};
  uint64_t next_seq_ = 1;
};

// What the runs of a test vary.
struct Scenario {
  bool two_writers = false;
  int unevidenced_pct = 0;   // UNSTABLE writes without ACCESS evidence
  int disk_refused_pct = 0;  // journal batches the disk refuses
  int refused_pct = 0;       // upstream WRITEs refused with NOSPC
  bool restarts = false;     // the upstream restarts now and then
};

// A client WRITE and what its writer knows of it.
struct ClientWrite {
  int index;
  int writer;
  uint64_t offset;
  std::string data;
  bool answered = false;
  bool durable = false;       // answered FILE_SYNC, or by a COMMIT's verifier
  bool verf_changed = false;  // a COMMIT's verifier differed
  Verf verf{};
};

class WriteJournalModelTest : public WritePathTest {
 protected:
  WriteJournalModelTest() : back_(7, WriteBackExport()) {}
  // The write path goes before the journal it writes to.
  ~WriteJournalModelTest() override { wp_.reset(); }

  // Runs the seeds of `scenario`, stopping at the first that fails.
  void RunSeeds(const Scenario& scenario, uint32_t seeds) {
    SCOPED_TRACE(::testing::Message()
                 << "scenario: " << (scenario.two_writers ? 2 : 1) << " writer(s), "
                 << scenario.unevidenced_pct << "% without evidence, " << scenario.disk_refused_pct
                 << "% of journal batches refused, " << scenario.refused_pct
                 << "% refused upstream, " << (scenario.restarts ? "" : "no ")
                 << "upstream restarts");
    scenario_ = scenario;
    const uint32_t count = SeedCount(seeds);
    for (uint32_t seed = 0; seed < count && !HasFailure(); ++seed) RunSeed(seed);
  }

 private:
  static ExportConfig WriteBackExport() {
    ExportConfig c = MakeExport(5);
    c.write_back = true;
    return c;
  }
  static OpaqueAuth Writer(int writer) { return Cred(writer == 0 ? "A" : "B"); }

  void RunSeed(uint32_t seed) {
    std::mt19937 rng(seed);
    auto pct = [&rng](int p) { return static_cast<int>(rng() % 100) < p; };
    wp_.reset();
    timers_.clear();
    up_.calls.clear();
    bg_.calls.clear();
    journal_ = std::make_unique<ModelJournal>();
    options_.journal = journal_.get();
    options_.write_size = 16;
    options_.max_transfer = 32;
    options_.max_file_bytes = 64;
    options_.max_bytes = 128;
    options_.lone_after = static_cast<int>(rng() % 3);
    options_.journal_give_up = Duration::zero();  // kept until the upstream takes it
    Make();
    current_.assign(kFileBytes, 0);
    stable_.assign(kFileBytes, 0);
    upstream_verf_ = Verf{'s', 'A'};
    writes_.clear();
    int next_id = 1;

    const int steps = 50 + static_cast<int>(rng() % 350);
    for (int step = 0; step < steps && !HasFailure(); ++step) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", step " << step);
      const int what = static_cast<int>(rng() % 100);
      const int writer = scenario_.two_writers ? static_cast<int>(rng() % 2) : 0;
      if (what < 30 && next_id <= kLastId) {
        const uint64_t offset = rng() % kWriteStart;
        const std::string data(1 + rng() % kMaxLength, static_cast<char>(next_id++));
        const bool stable = pct(40);
        const bool evidence = !pct(scenario_.unevidenced_pct);
        Write(writer, offset, data, stable, evidence);
      } else if (what < 38) {
        Commit(writer);
      } else if (what < 50) {
        journal_->Batch(!pct(scenario_.disk_refused_pct));
      } else if (what < 52 && scenario_.restarts) {
        current_ = stable_;
        upstream_verf_[1]++;
      } else if (what < 62) {
        Advance(std::chrono::milliseconds(rng() % 60));
      } else {
        AnswerOneCall(rng, /*faults=*/true);
      }
    }
    if (HasFailure()) return;

    SCOPED_TRACE(::testing::Message() << "seed " << seed << ", crash after step " << steps - 1);
    // The proxy dies: each upstream call it waits for reached the upstream
    // or not; its queued journal work is lost, the disk stays.
    for (HeldUpstream* u : {&up_, &bg_}) {
      for (size_t i = 0; i < u->calls.size(); ++i) {
        if (!u->calls[i].answered && pct(50)) Execute(u->calls[i]);
      }
    }
    const std::vector<uint8_t> durable = DurableAtCrash();
    const std::map<uint64_t, JournalRecord> disk = journal_->disk;
    const std::array<char, 8> disk_verf = journal_->disk_verf;
    wp_.reset();
    timers_.clear();
    up_.calls.clear();
    bg_.calls.clear();

    // The restart: the records found go back in order and are sent at once.
    journal_ = std::make_unique<ModelJournal>();
    journal_->Reopen(disk, disk_verf);
    options_.journal = journal_.get();
    Make(/*learned=*/false);
    for (const auto& [seq, r] : disk) wp_->Recover(r, back_);
    wp_->FlushAll();
    for (int k = 0; k < 2000 && !HasFailure(); ++k) {
      Advance(std::chrono::milliseconds(60));
      journal_->Batch(true);
      if (!AnswerOneCall(rng, /*faults=*/false) && timers_.empty() && journal_->idle()) break;
    }
    if (HasFailure()) return;
    EXPECT_EQ(wp_->stats().buffered_bytes, 0u) << "bytes left buffered after the replay";
    EXPECT_TRUE(journal_->disk.empty())
        << journal_->disk.size() << " records left in the journal after the replay";
    for (size_t b = 0; b < kFileBytes; ++b) {
      ASSERT_GE(int{stable_[b]}, int{durable[b]})
          << "byte " << b << " of write id " << int{durable[b]}
          << ", answered as durable, is lost after the crash: the upstream's stable byte is of "
             "write id "
          << int{stable_[b]} << " (DESIGN rule 1)";
    }
  }

  // By byte, the latest write answered as durable, except the documented
  // loss: a write whose own append the disk refused, where a record older
  // than its own is on disk.
  std::vector<uint8_t> DurableAtCrash() const {
    std::vector<uint8_t> durable(kFileBytes, 0);
    for (const ClientWrite& w : writes_) {
      if (!w.durable) continue;
      const uint8_t id = static_cast<uint8_t>(w.data[0]);
      const bool refused = journal_->refused_ids.contains(id);
      const uint64_t seq = journal_->seq_of_id.at(id);
      for (uint64_t b = w.offset; b < w.offset + w.data.size(); ++b) {
        const bool replayed_over =
            refused &&
            std::any_of(journal_->disk.begin(), journal_->disk.end(), [seq, b](const auto& entry) {
              const JournalRecord& r = entry.second;
              return r.seq < seq && r.offset <= b && b < r.offset + r.data.size();
            });
        if (!replayed_over) durable[b] = std::max(durable[b], id);
      }
    }
    return durable;
  }

  std::string Describe(const ClientWrite& w) const {
    return (::testing::Message() << "write #" << w.index << " (id "
                                 << int{static_cast<uint8_t>(w.data[0])} << ", writer " << w.writer
                                 << ", bytes [" << w.offset << ", " << w.offset + w.data.size()
                                 << "))")
        .GetString();
  }

  void Write(int writer, uint64_t offset, const std::string& data, bool stable, bool evidence) {
    const size_t i = writes_.size();
    writes_.push_back(ClientWrite{static_cast<int>(i), writer, offset, data});
    SendWrite(
        fh_, offset, writes_.back().data, stable ? FILE_SYNC : UNSTABLE, Writer(writer), evidence,
        back_, [this, i](std::string r) { OnWriteReply(i, DecodeWriteReply(r)); },
        [] { ADD_FAILURE() << "a WRITE was forwarded"; });
  }

  void OnWriteReply(size_t i, const ClientReply& r) {
    ClientWrite& w = writes_[i];
    ASSERT_FALSE(w.answered) << Describe(w) << " was answered twice";
    w.answered = true;
    if (r.status != NFS3_OK) return;  // not durable
    if (r.committed == FILE_SYNC) {
      w.durable = true;
    } else {
      w.verf = r.verf;
    }
  }

  void Commit(int writer) {
    // The writes this COMMIT tells the writer about: its own, answered
    // UNSTABLE before it.
    std::vector<size_t> covered;
    for (const ClientWrite& w : writes_) {
      if (w.writer == writer && w.answered && !w.durable && !w.verf_changed) {
        covered.push_back(static_cast<size_t>(w.index));
      }
    }
    SendCommit(
        fh_, 0, 0, Writer(writer), back_,
        [this, covered](std::string r) {
          const ClientReply c = DecodeCommitReply(r);
          if (c.status != NFS3_OK) return;
          for (size_t i : covered) {
            ClientWrite& w = writes_[i];
            if (w.durable || w.verf_changed) continue;
            // Another verifier: the writer would send it again, as a new
            // write; this one is not durable.
            (w.verf == c.verf ? w.durable : w.verf_changed) = true;
          }
        },
        [] { ADD_FAILURE() << "a COMMIT was forwarded"; });
  }

  // The upstream carries out `call`, whose reply the crash loses.
  void Execute(HeldUpstream::Held& call) {
    call.answered = true;
    if (call.proc == NFSPROC3_WRITE) {
      const SentWrite w = DecodeWriteArgs(call.args);
      for (size_t k = 0; k < w.data.size(); ++k) {
        current_[w.offset + k] = static_cast<uint8_t>(w.data[k]);
        if (w.stable != UNSTABLE) stable_[w.offset + k] = current_[w.offset + k];
      }
    } else if (call.proc == NFSPROC3_COMMIT) {
      stable_ = current_;
    }
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
    } else if (call.proc == NFSPROC3_COMMIT) {
      if (faults && pct(5)) {
        u->Answer(i, CommitFail(NFS3ERR_JUKEBOX));
        return true;
      }
      stable_ = current_;
      u->Answer(i, CommitOk(upstream_verf_, Attr(kWriteStart, 6)));
    } else if (call.proc == NFSPROC3_WRITE) {
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
        current_[w.offset + k] = static_cast<uint8_t>(w.data[k]);
        if (committed != UNSTABLE) stable_[w.offset + k] = current_[w.offset + k];
      }
      u->Answer(i, WriteOk(static_cast<uint32_t>(taken), committed, upstream_verf_, Attr(kWriteStart, 5)));
    } else {
      ADD_FAILURE() << "upstream call of procedure " << call.proc;
      u->calls[i].answered = true;
    }
    return true;
  }

  Export back_;
  Scenario scenario_;
  std::unique_ptr<ModelJournal> journal_;
  // The model upstream: the file's bytes as written and as stable, its
  // verifier.
  std::vector<uint8_t> current_, stable_;
  Verf upstream_verf_{};
  std::vector<ClientWrite> writes_;
};

TEST_F(WriteJournalModelTest, WritesAnsweredDurableSurviveACrash) { RunSeeds(Scenario{}, kSeeds); }

TEST_F(WriteJournalModelTest, TwoWritersWithAndWithoutEvidenceSurviveACrash) {
  RunSeeds(Scenario{.two_writers = true, .unevidenced_pct = 20}, kSeeds);
}

TEST_F(WriteJournalModelTest, RefusedJournalBatchesLoseNothingAnsweredDurable) {
  RunSeeds(Scenario{.disk_refused_pct = 15}, kSeeds);
  RunSeeds(Scenario{.two_writers = true, .unevidenced_pct = 20, .disk_refused_pct = 15}, kSeeds);
}

TEST_F(WriteJournalModelTest, UpstreamRestartsAndRefusalsLoseNothingAnsweredDurable) {
  RunSeeds(Scenario{.restarts = true}, kSeeds);
  RunSeeds(Scenario{.two_writers = true,
                    .unevidenced_pct = 20,
                    .disk_refused_pct = 10,
                    .refused_pct = 4,
                    .restarts = true},
           kSeeds);
}

}  // namespace
}  // namespace nfsedge::write_path_test
