// treewalk: builds a deterministic tree in the upstream's export, then walks
// it through one mount the way `tar c` on a Linux client does: per directory
// READDIRPLUS (all pages); per entry LOOKUP, GETATTR (stat), ACCESS (open),
// then READ to EOF for a file or the same walk for a directory. One call at a
// time. The first walk is cold, the second (same mount) warm, the third
// "expired": the same walk again once every cached attribute has outlived
// its lifetime (kExpireWait after the warm walk; nfsedge's default acregmin
// is 3 s, and the directories' listings need their entries' attributes), as
// a second tar of the tree some time later.

#include <chrono>
#include <set>
#include <thread>

#include "content.h"
#include "tree.h"
#include "workload.h"

namespace nfsedge::bench {
namespace {

// The pause before the "expired" walk: past the files' attribute lifetime
// (acregmin, 3 s: the tree is seconds old) and the refresh-ahead of what the
// warm walk used (a window of 1 s before expiry, once).
constexpr auto kExpireWait = std::chrono::seconds(10);

// READDIRPLUS sizes: maxcount like a Linux client's dtsize, dircount 1/8 of it.
constexpr uint32_t kDirMaxcount = 32768;
constexpr uint32_t kDirDircount = kDirMaxcount / 8;

using Callback = NfsConnection::Callback;

class Walker {
 public:
  Walker(Session& session, const TreeSpec& spec, uint64_t seed)
      : s_(session), spec_(spec), seed_(seed) {}

  // Walks the tree whose root directory is `fh`; checks it against the spec.
  Status Walk(const std::string& fh) {
    files_ = 0;
    dirs_ = 1;
    bytes_ = 0;
    seen_.clear();
    Status st = WalkDir(fh, "");
    if (!st.ok()) return st;
    if (files_ != spec_.files.size() || dirs_ != spec_.dirs.size() || bytes_ != spec_.total_bytes) {
      return Status::Error("walk found " + std::to_string(files_) + " files, " +
                           std::to_string(dirs_) + " directories, " + std::to_string(bytes_) +
                           " bytes; the tree has " + std::to_string(spec_.files.size()) + ", " +
                           std::to_string(spec_.dirs.size()) + ", " +
                           std::to_string(spec_.total_bytes));
    }
    return Status::OK();
  }

 private:
  StatusOr<std::vector<harness::DirEntry>> ReadDirectory(const std::string& fh) {
    std::vector<harness::DirEntry> all;
    uint64_t cookie = 0;
    std::string verf(8, '\0');
    for (int page = 0; page < 100000; ++page) {
      auto r = s_.Call({"READDIRPLUS", [&](NfsConnection& c, Callback cb) {
                          return c.Readdirplus(fh, cookie, verf, kDirDircount, kDirMaxcount,
                                               std::move(cb));
                        }});
      if (!r.ok()) return r.status();
      for (harness::DirEntry& e : r->entries) all.push_back(std::move(e));
      if (r->eof) return all;
      if (r->entries.empty()) return Status::Error("READDIRPLUS: no entries and no EOF");
      cookie = all.back().cookie;
      verf = r->cookieverf;
    }
    return Status::Error("READDIRPLUS: too many pages");
  }

  Status WalkDir(const std::string& fh, const std::string& rel) {
    auto entries = ReadDirectory(fh);
    if (!entries.ok()) return entries.status();
    for (const harness::DirEntry& e : *entries) {
      if (e.name == "." || e.name == "..") continue;
      const std::string path = rel.empty() ? e.name : rel + "/" + e.name;
      auto lookup = s_.Lookup(fh, e.name);
      if (!lookup.ok()) return lookup.status();
      const std::string child = lookup->fh;
      auto attr = s_.Call({"GETATTR", [&](NfsConnection& c, Callback cb) {
                             return c.Getattr(child, std::move(cb));
                           }});
      if (!attr.ok()) return attr.status();
      if (!attr->attr) return Status::Error("GETATTR " + path + ": no attributes");
      auto access = s_.Call({"ACCESS", [&](NfsConnection& c, Callback cb) {
                               return c.Access(child, harness::kAccessAll, std::move(cb));
                             }});
      if (!access.ok()) return access.status();
      if (!seen_.insert(path).second) return Status::Error("entry listed twice: " + path);
      if (attr->attr->type == static_cast<uint32_t>(harness::FileType::kDir)) {
        ++dirs_;
        Status st = WalkDir(child, path);
        if (!st.ok()) return st;
      } else {
        Status st = ReadFile(child, path, attr->attr->size);
        if (!st.ok()) return st;
      }
    }
    return Status::OK();
  }

  Status ReadFile(const std::string& fh, const std::string& path, uint64_t size) {
    auto it = spec_.files.find(path);
    if (it == spec_.files.end()) return Status::Error("unexpected file " + path);
    if (it->second != size) {
      return Status::Error(path + ": size " + std::to_string(size) + ", expected " +
                           std::to_string(it->second));
    }
    ++files_;
    const uint64_t seed = SeedFor(seed_, path);
    uint64_t offset = 0;
    bool eof = false;
    while (offset < size && !eof) {
      auto r = s_.Call({"READ",
                        [&](NfsConnection& c, Callback cb) {
                          return c.Read(fh, offset, s_.rsize(), std::move(cb));
                        },
                        [&](const NfsReply& r) {
                          if (r.count == 0 && !r.eof) return Status::Error(path + ": empty READ");
                          if (FirstMismatch(seed, offset, r.data, r.count) >= 0) {
                            return Status::Error(path + ": wrong data near offset " +
                                                 std::to_string(offset));
                          }
                          return Status::OK();
                        }});
      if (!r.ok()) return r.status();
      offset += r->count;
      eof = r->eof;
    }
    if (offset != size) return Status::Error(path + ": read " + std::to_string(offset) + " bytes");
    bytes_ += offset;
    return Status::OK();
  }

  Session& s_;
  const TreeSpec& spec_;
  const uint64_t seed_;
  size_t files_ = 0, dirs_ = 0;
  uint64_t bytes_ = 0;
  std::set<std::string> seen_;
};

TreeSpec SpecFor(const WorkloadContext& ctx) {
  return MakeTree(ctx.seed, ctx.sizes.tree_files, ctx.sizes.tree_dirs);
}

}  // namespace

Status PrepareTreewalk(const WorkloadContext& ctx) {
  return WriteTree(SpecFor(ctx), ctx.local_dir + "/tree", ctx.seed);
}

Status RunTreewalk(const WorkloadContext& ctx, WorkloadReport* report) {
  const TreeSpec spec = SpecFor(ctx);
  auto session = Session::Mount(ctx.mount);
  if (!session.ok()) return session.status();
  Session& s = **session;
  PhaseRecorder phases(ctx, s, report);
  auto root = s.LookupPath(ctx.run_dir + "/tree");
  if (!root.ok()) return root.status();
  auto mounted = phases.End("mount", false);
  if (!mounted.ok()) return mounted.status();

  Walker walker(s, spec, ctx.seed);
  for (const char* name : {"cold", "warm", "expired"}) {
    if (std::string_view(name) == "expired") std::this_thread::sleep_for(kExpireWait);
    phases.Begin();
    Status st = walker.Walk(*root);
    if (!st.ok()) return Status::Error(std::string(name) + " walk: " + st.message());
    auto phase = phases.End(name);
    if (!phase.ok()) return phase.status();
    PhaseResult& p = **phase;
    p.metrics.push_back({"walk time", p.seconds, "s", false});
    p.metrics.push_back(
        {"calls/s", p.client_calls.Total() / std::max(p.seconds, 1e-9), "calls/s", true});
  }
  report->verified = true;
  report->verification = std::to_string(spec.files.size()) + " files (" +
                         std::to_string(spec.total_bytes) + " bytes) in " +
                         std::to_string(spec.dirs.size()) +
                         " directories read back and compared, three times";
  return Status::OK();
}

}  // namespace nfsedge::bench
