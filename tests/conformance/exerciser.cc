#include "conformance/exerciser.h"

#include <cerrno>
#include <cinttypes>
#include <functional>

#include "conformance/tree_walk.h"

namespace nfsedge::fsx {

// Weights: data calls dominate, as in fsx; every namespace call stays frequent enough
// to meet every error case in a few thousand steps.
const Exerciser::OpDesc Exerciser::kOps[] = {
    {"create", 8, &Exerciser::OpCreate},     {"open", 3, &Exerciser::OpOpen},
    {"close", 3, &Exerciser::OpClose},       {"write", 16, &Exerciser::OpWrite},
    {"read", 14, &Exerciser::OpRead},        {"truncate", 6, &Exerciser::OpTruncate},
    {"append", 6, &Exerciser::OpAppend},     {"fsync", 3, &Exerciser::OpFsync},
    {"rename", 8, &Exerciser::OpRename},     {"link", 4, &Exerciser::OpLink},
    {"unlink", 7, &Exerciser::OpUnlink},     {"symlink", 3, &Exerciser::OpSymlink},
    {"readlink", 3, &Exerciser::OpReadlink}, {"mkdir", 4, &Exerciser::OpMkdir},
    {"rmdir", 4, &Exerciser::OpRmdir},       {"chmod", 3, &Exerciser::OpChmod},
    {"utimes", 4, &Exerciser::OpUtimes},     {"readdir", 5, &Exerciser::OpReaddir},
    {"stat", 10, &Exerciser::OpStat},
};

Exerciser::Exerciser(const Options& options, std::vector<Fs*> clients, std::FILE* out)
    : options_(options),
      clients_(std::move(clients)),
      names_(NamePool(options.extra_names)),
      out_(out),
      rng_(options.seed) {}

Result Exerciser::Run() {
  unsigned total_weight = 0;
  for (const OpDesc& op : kOps) total_weight += op.weight;

  current_ = "#0 c0 mkdir '" + options_.workdir + "' (the working directory)";
  int rc = clients_[0]->Mkdir(options_.workdir, 0755);
  if (rc != 0) {
    result_.setup_failed = true;
    result_.failure = "cannot create the working directory '" + options_.workdir + "' through " +
                      clients_[0]->Describe() + ": " + ErrnoName(rc) +
                      (rc == -EEXIST ? " (remove it, or choose another --dir)" : "");
    return result_;
  }
  Note("-> OK");
  history_.push_back(current_);

  for (step_ = 1; step_ <= options_.steps && !failed_; ++step_) {
    client_ = clients_.size() > 1 ? rng_.Below(clients_.size()) : 0;
    unsigned pick = static_cast<unsigned>(rng_.Below(total_weight));
    const OpDesc* op = &kOps[0];
    for (const OpDesc& candidate : kOps) {
      if (pick < candidate.weight) {
        op = &candidate;
        break;
      }
      pick -= candidate.weight;
    }
    current_ = "#" + std::to_string(step_) + " c" + std::to_string(client_) + " " + op->name;
    (this->*op->run)();
    ++result_.op_counts[op->name];
    if (options_.verbose) std::fprintf(out_, "%s\n", current_.c_str());
    history_.push_back(current_);
    while (history_.size() > options_.history) history_.pop_front();
    if (failed_) break;
    result_.steps_done = step_;
    if (options_.verify_every != 0 && step_ % options_.verify_every == 0) {
      Verify("periodic check");
    }
    if (options_.progress_every != 0 && step_ % options_.progress_every == 0) {
      std::fprintf(out_,
                   "nfsedge-fsx: seed %" PRIu64 " step %" PRIu64 "/%" PRIu64 " (%zu inodes)\n",
                   options_.seed, step_, options_.steps, model_.inode_count());
      std::fflush(out_);
    }
  }
  if (!failed_) {
    step_ = 0;  // The final check is no step.
    Verify("final check");
  }
  if (failed_) return result_;
  result_.ok = true;
  result_.fingerprint = Fingerprint(model_.Canonical());
  if (options_.dump_history) {
    std::fprintf(out_, "last %zu operations (oldest first):\n%s", history_.size(),
                 History().c_str());
  }
  return result_;
}

void Exerciser::Note(const std::string& text) { current_ += " " + text; }

bool Exerciser::Check(const std::string& call, const ErrSet& want, int64_t got) {
  if (want.Matches(got)) {
    if (got < 0) Note("-> " + ErrnoName(static_cast<int>(got)));
    return true;
  }
  Fail(call + " returned " + (got >= 0 ? std::string("OK") : ErrnoName(static_cast<int>(got))) +
       ", the model expects " + want.ToString());
  return false;
}

void Exerciser::Fail(const std::string& what) {
  if (failed_) return;
  failed_ = true;
  Note("-> DIFFERENCE");
  result_.failed_step = step_;
  std::string where =
      step_ == 0 ? std::string("in the final check") : "at step " + std::to_string(step_);
  std::string report = "DIFFERENCE " + where + " (seed " + std::to_string(options_.seed) +
                       ", client " + std::to_string(client_) + " " + clients_[client_]->Describe() +
                       "): " + what + "\n";
  std::string history = History();
  size_t count = history_.size();
  if (history_.empty() || history_.back() != current_) {
    history += "  " + current_ + "\n";
    ++count;
  }
  report += "last " + std::to_string(count) + " operations (oldest first):\n" + history;
  result_.failure = report;
}

std::string Exerciser::History() const {
  std::string out;
  for (const std::string& line : history_) out += "  " + line + "\n";
  return out;
}

void Exerciser::CloseAt(size_t index) {
  Open o = open_[index];
  open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(index));
  int rc = clients_[o.client]->Close(o.h);
  Note("[close h" + std::to_string(o.h) + "@c" + std::to_string(o.client) + "]");
  if (rc != 0) {
    Fail("close of handle " + std::to_string(o.h) + " (client " + std::to_string(o.client) +
         ") returned " + ErrnoName(rc));
  }
}

void Exerciser::Claim(uint64_t ino) {
  for (size_t i = open_.size(); i-- > 0;) {
    if (open_[i].ino == ino && open_[i].client != client_) CloseAt(i);
  }
}

void Exerciser::CloseAll(uint64_t ino) {
  for (size_t i = open_.size(); i-- > 0;) {
    if (open_[i].ino == ino) CloseAt(i);
  }
}

void Exerciser::Reserve() {
  while (!open_.empty() && open_.size() >= options_.max_open) CloseAt(0);
}

Exerciser::Open* Exerciser::HandleFor(uint64_t ino, const std::string& path) {
  Claim(ino);
  for (Open& o : open_) {
    if (o.ino == ino && o.client == client_) return &o;
  }
  Reserve();
  if (failed_) return nullptr;
  Handle h = 0;
  int rc = Again([&] { return fs().Open(W(path), &h); });
  if (!Check("open '" + path + "'", ErrSet(), rc)) return nullptr;
  open_.push_back(Open{client_, h, ino});
  Note("[open h" + std::to_string(h) + "]");
  return &open_.back();
}

int Exerciser::Again(const std::function<int()>& call) {
  int rc = call();
  for (int i = 0; i < 3 && rc == -ESTALE && options_.retry_stale; ++i) {
    // Reading the whole tree through this client (lstat of every name) makes it
    // revalidate, and drop, the handles the other client made stale.
    Note("(ESTALE: tree re-read, again)");
    std::string text, error;
    (void)CanonicalTree(fs(), options_.workdir, &text, &error);
    rc = call();
  }
  return rc;
}

void Exerciser::Verify(const char* when) {
  while (!open_.empty() && !failed_) CloseAt(open_.size() - 1);
  if (failed_) return;
  const std::string want = model_.Canonical();
  for (size_t c = 0; c < clients_.size(); ++c) {
    client_ = c;
    current_ = std::string("== ") + when + " through client " + std::to_string(c);
    std::string got, error;
    int rc = Again([&] { return CanonicalTree(*clients_[c], options_.workdir, &got, &error); });
    if (rc != 0) {
      Fail(std::string(when) + ": reading the tree back failed: " + error);
      return;
    }
    if (got != want) {
      Fail(std::string(when) + ": the tree differs from the model at " +
           FirstDifference(want, got));
      return;
    }
  }
}

}  // namespace nfsedge::fsx
