// The operations of Exerciser and how their operands are drawn. Every draw depends only
// on the Prng and the model, never on what the backend answered.

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "conformance/exerciser.h"

namespace nfsedge::fsx {
namespace {

// Never in the pool: a path ending in it does not exist.
constexpr char kMissing[] = "no-such-entry";

constexpr uint32_t kFileModes[] = {0644, 0600, 0666, 0640, 0755, 0700, 0604, 0660};
constexpr uint32_t kDirModes[] = {0755, 0700, 0775, 0750, 0711, 0777};
constexpr uint64_t kPage = 4096;

size_t Depth(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<size_t>(std::count(path.begin(), path.end(), '/'));
}

std::string ParentOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// Quotes a path for the log, the long name shortened to "L*120ong".
std::string Q(const std::string& path) {
  static const std::string kLong(120, 'L');
  std::string out = path;
  for (size_t at; (at = out.find(kLong)) != std::string::npos;)
    out.replace(at, kLong.size(), "L*120");
  return "'" + out + "'";
}

std::string Octal(uint32_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04o", mode);
  return buf;
}

bool TypeIn(FileType t, const char* types) {
  const char letter = t == FileType::kFile ? 'f' : t == FileType::kDir ? 'd' : 'l';
  for (const char* p = types; *p != '\0'; ++p) {
    if (*p == letter) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- choosing operands

// A small pool of names, so that calls collide: EEXIST, renames over existing names,
// type conflicts. It holds a space, a multi-byte UTF-8 name and a long name.
std::vector<std::string> Exerciser::NamePool(size_t extra) {
  // clang-format off
  static const char* const kBase[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                      "name with space", "dots.in.name",
                                      "\xc3\xbctf8-\xc3\xa9"};  // "ütf8-é"
  // clang-format on
  std::vector<std::string> names(std::begin(kBase), std::end(kBase));
  names.push_back(std::string(120, 'L') + "ong");
  for (size_t i = 0; i < extra; ++i) {
    char number[16];
    std::snprintf(number, sizeof(number), "%04zu", i % 10000);
    names.push_back("wide-" + std::string(number) + "-" +
                    std::string("abcdefghijklmnopqrstuvwxyzabcdefghijklmn").substr(0, i % 40));
  }
  return names;
}

std::string Exerciser::PickDir(size_t max_depth) {
  std::vector<std::string> dirs;
  for (std::string& d : model_.Dirs()) {
    if (Depth(d) < max_depth) dirs.push_back(std::move(d));
  }
  return rng_.Pick(dirs);  // The root always qualifies.
}

std::string Exerciser::PickParent() {
  const uint64_t r = rng_.Below(100);
  if (r < 2) return JoinPath(PickDir(SIZE_MAX), kMissing);  // ENOENT
  if (r < 4) return PickEntry("f", 0);                      // ENOTDIR (or ENOENT without files)
  return PickDir(SIZE_MAX);
}

std::string Exerciser::NewPath(unsigned existing_percent) {
  std::vector<Model::Entry> entries = model_.Entries();
  const bool existing = rng_.Percent(existing_percent) || entries.size() >= options_.max_entries;
  if (existing && !entries.empty()) return rng_.Pick(entries).path;
  std::string parent = PickParent();
  return JoinPath(parent, PickName());
}

std::string Exerciser::PickEntry(const char* types, unsigned missing_percent) {
  std::vector<std::string> candidates;
  for (const Model::Entry& e : model_.Entries()) {
    if (TypeIn(e.type, types)) candidates.push_back(e.path);
  }
  const bool missing = rng_.Percent(missing_percent);
  if (missing || candidates.empty()) return MissingPath();
  return rng_.Pick(candidates);
}

std::string Exerciser::MissingPath() {
  const uint64_t r = rng_.Below(100);
  std::string dir = PickDir(SIZE_MAX);
  if (r < 80) return JoinPath(dir, kMissing);                 // ENOENT
  if (r < 90) return JoinPath(JoinPath(dir, kMissing), "x");  // ENOENT in the parent
  std::vector<std::string> files;
  for (const Model::Entry& e : model_.Entries()) {
    if (e.type == FileType::kFile) files.push_back(e.path);
  }
  if (files.empty()) return JoinPath(dir, kMissing);
  return JoinPath(rng_.Pick(files), "x");  // ENOTDIR
}

uint64_t Exerciser::PickLength(uint64_t limit) {
  const uint64_t r = rng_.Below(100);
  uint64_t len = r < 55   ? rng_.Range(1, 4096)
                 : r < 80 ? rng_.Range(4097, 65536)
                 : r < 95 ? rng_.Range(65537, 262144)
                          : rng_.Range(262145, std::max<uint64_t>(options_.max_write, 262145));
  if (rng_.Percent(10) && len >= kPage) len -= len % kPage;  // Page-sized.
  return std::max<uint64_t>(1, std::min(len, limit));
}

uint64_t Exerciser::PickOffset(uint64_t size, uint64_t len) {
  const uint64_t max_off = options_.max_file_size - len;
  const uint64_t r = rng_.Below(100);
  uint64_t off = r < 35   ? rng_.Below(size + 1)
                 : r < 60 ? size + rng_.Below(2 * kPage) - std::min<uint64_t>(size, kPage)
                 : r < 75 ? size
                          : rng_.Below(max_off + 1);
  if (rng_.Percent(25)) off -= off % kPage;  // Page-aligned.
  return std::min(off, max_off);
}

// ---------------------------------------------------------------- data operations

void Exerciser::OpCreate() {
  const std::string path = NewPath(10);
  const uint32_t mode = kFileModes[rng_.Below(std::size(kFileModes))];
  Note(Q(path) + " mode=" + Octal(mode));
  Reserve();
  if (failed_) return;
  uint64_t ino = 0;
  ErrSet want = model_.Create(path, mode, &ino);
  Handle h = 0;
  int rc = Again([&] { return fs().Create(W(path), mode, &h); });
  if (!Check("create " + Q(path), want, rc)) return;
  if (rc == 0) {
    open_.push_back(Open{client_, h, ino});
    Note("-> h" + std::to_string(h));
  }
}

void Exerciser::OpOpen() {
  const std::string path = PickEntry("f", 5);
  Note(Q(path));
  const uint64_t existing = model_.InodeOf(path);
  if (existing != 0) Claim(existing);
  Reserve();
  if (failed_) return;
  uint64_t ino = 0;
  ErrSet want = model_.OpenFile(path, &ino);
  Handle h = 0;
  int rc = Again([&] { return fs().Open(W(path), &h); });
  if (!Check("open " + Q(path), want, rc)) return;
  if (rc == 0) {
    open_.push_back(Open{client_, h, ino});
    Note("-> h" + std::to_string(h));
  }
}

void Exerciser::OpClose() {
  if (open_.empty()) {
    Note("(nothing open: stat instead)");
    return OpStat();
  }
  CloseAt(rng_.Below(open_.size()));
}

void Exerciser::OpWrite() {
  const std::string path = PickEntry("f", 0);
  const uint64_t ino = model_.InodeOf(path);
  if (ino == 0) {
    Note("(no file yet: create instead)");
    return OpCreate();
  }
  const uint64_t size = model_.node(ino).data.size();
  const uint64_t len = PickLength(options_.max_file_size);
  const uint64_t off = PickOffset(size, len);
  std::string data;
  rng_.Fill(len, &data);
  Note(Q(path) + " off=" + std::to_string(off) + " len=" + std::to_string(len));
  Open* o = HandleFor(ino, path);
  if (o == nullptr) return;
  Note("h" + std::to_string(o->h));
  model_.Write(ino, off, data);
  Check("pwrite " + Q(path), ErrSet(), fs().Pwrite(o->h, off, data));
}

void Exerciser::OpRead() {
  const std::string path = PickEntry("f", 0);
  const uint64_t ino = model_.InodeOf(path);
  if (ino == 0) {
    Note("(no file yet: create instead)");
    return OpCreate();
  }
  const uint64_t size = model_.node(ino).data.size();
  const uint64_t r = rng_.Below(100);
  const uint64_t off = r < 60   ? rng_.Below(size + 1)
                       : r < 85 ? size - std::min<uint64_t>(size, rng_.Below(kPage + 1))
                                : size + rng_.Below(1 << 20);
  const uint64_t len = PickLength(options_.max_write);
  Note(Q(path) + " off=" + std::to_string(off) + " len=" + std::to_string(len));
  Open* o = HandleFor(ino, path);
  if (o == nullptr) return;
  Note("h" + std::to_string(o->h));
  const std::string want = model_.Read(ino, off, len);
  std::string got;
  int64_t n = fs().Pread(o->h, off, len, &got);
  if (!Check("pread " + Q(path), ErrSet(), n)) return;
  Note("-> " + std::to_string(n) + " bytes");
  if (got == want) return;
  if (got.size() != want.size()) {
    return Fail("pread " + Q(path) + " at " + std::to_string(off) + " gave " +
                std::to_string(got.size()) + " bytes, the model expects " +
                std::to_string(want.size()) + " (file size " + std::to_string(size) + ")");
  }
  size_t first = 0, count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (count++ == 0) first = i;
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "%zu of %zu bytes differ; the first at file offset %llu: 0x%02x, "
                "the model expects 0x%02x",
                count, got.size(), static_cast<unsigned long long>(off + first),
                static_cast<unsigned char>(got[first]), static_cast<unsigned char>(want[first]));
  Fail("pread " + Q(path) + ": " + buf);
}

void Exerciser::OpTruncate() {
  const std::string path = PickEntry("f", 4);
  const uint64_t ino = model_.InodeOf(path);
  const uint64_t size = ino != 0 ? model_.node(ino).data.size() : 0;
  const uint64_t max = options_.max_file_size;
  const uint64_t r = rng_.Below(100);
  const uint64_t new_size = r < 35   ? rng_.Below(size + 1)
                            : r < 70 ? size + rng_.Below(std::min<uint64_t>(262144, max - size) + 1)
                            : r < 80 ? 0
                            : r < 90 ? size
                                     : rng_.Below(max + 1);
  const bool by_handle = ino != 0 && rng_.Percent(50);
  Note(Q(path) + " " + std::to_string(size) + "->" + std::to_string(new_size) +
       (by_handle ? " (ftruncate)" : " (truncate)"));
  if (by_handle) {
    Open* o = HandleFor(ino, path);
    if (o == nullptr) return;
    Note("h" + std::to_string(o->h));
    model_.Truncate(ino, new_size);
    Check("ftruncate " + Q(path), ErrSet(), fs().Ftruncate(o->h, new_size));
    return;
  }
  if (ino != 0) Claim(ino);
  if (failed_) return;
  uint64_t found = 0;
  ErrSet want = model_.OpenFile(path, &found);
  if (want.success()) model_.Truncate(found, new_size);
  Check("truncate " + Q(path), want, Again([&] { return fs().Truncate(W(path), new_size); }));
}

void Exerciser::OpAppend() {
  const std::string path = PickEntry("f", 4);
  const uint64_t ino = model_.InodeOf(path);
  const uint64_t size = ino != 0 ? model_.node(ino).data.size() : 0;
  uint64_t len = PickLength(262144);
  if (size + len > options_.max_file_size) len = options_.max_file_size - size;
  if (len == 0) {
    Note("(file at its largest: truncate instead)");
    return OpTruncate();
  }
  std::string data;
  rng_.Fill(len, &data);
  Note(Q(path) + " len=" + std::to_string(len) + " at=" + std::to_string(size));
  if (ino != 0) Claim(ino);
  if (failed_) return;
  uint64_t found = 0;
  ErrSet want = model_.OpenFile(path, &found);
  if (want.success()) model_.Write(found, size, data);
  Check("append " + Q(path), want, Again([&] { return fs().Append(W(path), data); }));
}

void Exerciser::OpFsync() {
  if (open_.empty()) {
    const std::string path = PickEntry("f", 0);
    const uint64_t ino = model_.InodeOf(path);
    if (ino == 0) {
      Note("(no file: stat instead)");
      return OpStat();
    }
    if (HandleFor(ino, path) == nullptr) return;
  }
  const Open o = open_[rng_.Below(open_.size())];
  client_ = o.client;
  Note("h" + std::to_string(o.h) + "@c" + std::to_string(o.client));
  Check("fsync", ErrSet(), fs().Fsync(o.h));
}

// ---------------------------------------------------------------- namespace operations

void Exerciser::OpRename() {
  const std::string from = PickEntry("fdl", 4);
  const uint64_t r = rng_.Below(100);
  std::string to;
  if (r < 40) {
    to = JoinPath(ParentOf(from), PickName());  // Within the directory.
  } else if (r < 60) {
    to = NewPath(100);  // Over an existing name.
  } else {
    to = NewPath(0);  // Across directories.
  }
  Note(Q(from) + " -> " + Q(to));
  const uint64_t src = model_.InodeOf(from);
  const uint64_t dst = model_.InodeOf(to);
  if (src != 0 && src == dst && from != to) {
    if (options_.avoid_same_file_rename) {
      Note("(onto the same file: avoided)");
      return OpStat();
    }
    Note("(onto the same file)");
  }
  if (dst != 0 && dst != src && model_.node(dst).type == FileType::kFile) CloseAll(dst);
  if (failed_) return;
  ErrSet want = model_.Rename(from, to);
  Check("rename " + Q(from) + " " + Q(to), want,
        Again([&] { return fs().Rename(W(from), W(to)); }));
}

void Exerciser::OpLink() {
  const uint64_t r = rng_.Below(100);
  const std::string existing = r < 88   ? PickEntry("f", 0)
                               : r < 94 ? PickEntry("d", 0)  // EPERM
                                        : MissingPath();
  const std::string path = NewPath(15);
  Note(Q(existing) + " " + Q(path));
  ErrSet want = model_.Link(existing, path);
  Check("link " + Q(existing) + " " + Q(path), want,
        Again([&] { return fs().Link(W(existing), W(path)); }));
}

void Exerciser::OpUnlink() {
  const std::string path = rng_.Percent(85) ? PickEntry("fl", 4) : PickEntry("d", 4);
  Note(Q(path));
  const uint64_t ino = model_.InodeOf(path);
  if (ino != 0 && model_.node(ino).type == FileType::kFile) CloseAll(ino);
  if (failed_) return;
  ErrSet want = model_.Unlink(path);
  Check("unlink " + Q(path), want, Again([&] { return fs().Unlink(W(path)); }));
}

void Exerciser::OpSymlink() {
  const uint64_t r = rng_.Below(100);
  std::string target;
  if (r < 30) {
    target = PickName();
  } else if (r < 50) {
    target = "../" + PickName();
  } else if (r < 65) {
    target = PickEntry("fdl", 10);
  } else if (r < 80) {
    target = "/nonexistent/" + PickName();
  } else {
    static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789._-/";
    const uint64_t n = rng_.Range(1, 200);
    for (uint64_t i = 0; i < n; ++i) target.push_back(kChars[rng_.Below(sizeof(kChars) - 1)]);
  }
  const std::string path = NewPath(15);
  Note(Q(path) + " -> " + Q(target));
  ErrSet want = model_.Symlink(target, path);
  Check("symlink " + Q(target) + " " + Q(path), want,
        Again([&] { return fs().Symlink(target, W(path)); }));
}

void Exerciser::OpReadlink() {
  const uint64_t r = rng_.Below(100);
  const std::string path = r < 70 ? PickEntry("l", 5) : r < 90 ? PickEntry("fd", 5) : MissingPath();
  Note(Q(path));
  std::string want_target, got_target;
  ErrSet want = model_.Readlink(path, &want_target);
  int rc = Again([&] { return fs().Readlink(W(path), &got_target); });
  if (!Check("readlink " + Q(path), want, rc) || rc != 0) return;
  if (got_target != want_target) {
    Fail("readlink " + Q(path) + " gave " + Q(got_target) + ", the model expects " +
         Q(want_target));
  }
}

void Exerciser::OpMkdir() {
  std::vector<Model::Entry> entries = model_.Entries();
  const bool existing = rng_.Percent(12) || entries.size() >= options_.max_entries;
  std::string path;
  if (existing && !entries.empty()) {
    path = rng_.Pick(entries).path;  // EEXIST
  } else {
    const uint64_t r = rng_.Below(100);
    const std::string parent = r < 4 ? PickParent() : PickDir(options_.max_depth);
    path = JoinPath(parent, PickName());
  }
  const uint32_t mode = kDirModes[rng_.Below(std::size(kDirModes))];
  Note(Q(path) + " mode=" + Octal(mode));
  ErrSet want = model_.Mkdir(path, mode);
  Check("mkdir " + Q(path), want, Again([&] { return fs().Mkdir(W(path), mode); }));
}

void Exerciser::OpRmdir() {
  const uint64_t r = rng_.Below(100);
  std::string path;
  if (r < 55) {
    std::vector<std::string> empty;
    for (const Model::Entry& e : model_.Entries()) {
      if (e.type == FileType::kDir && model_.node(e.ino).entries.empty()) empty.push_back(e.path);
    }
    path = empty.empty() ? PickEntry("d", 0) : rng_.Pick(empty);
  } else if (r < 80) {
    path = PickEntry("d", 0);  // Often ENOTEMPTY.
  } else if (r < 90) {
    path = PickEntry("fl", 0);  // ENOTDIR
  } else {
    path = MissingPath();
  }
  Note(Q(path));
  ErrSet want = model_.Rmdir(path);
  Check("rmdir " + Q(path), want, Again([&] { return fs().Rmdir(W(path)); }));
}

void Exerciser::OpChmod() {
  const std::string path = PickEntry("fd", 4);
  const uint64_t ino = model_.InodeOf(path);
  const bool dir = ino != 0 && model_.node(ino).type == FileType::kDir;
  // Owner keeps rw (and x on directories); root ignores the rest but the bits must stick.
  const uint32_t mode = dir ? 0700 | static_cast<uint32_t>(rng_.Below(0100))
                            : 0600 | static_cast<uint32_t>(rng_.Below(0200));
  Note(Q(path) + " " + Octal(mode));
  if (ino != 0) Claim(ino);
  if (failed_) return;
  ErrSet want = model_.Chmod(path, mode);
  Check("chmod " + Q(path), want, Again([&] { return fs().Chmod(W(path), mode); }));
}

void Exerciser::OpUtimes() {
  const std::string path = PickEntry("fd", 4);
  const int64_t sec = 1000000000 + static_cast<int64_t>(rng_.Below(900000000));
  const uint32_t nsec = static_cast<uint32_t>(rng_.Below(1000000)) * 1000;
  Note(Q(path) + " " + std::to_string(sec) + "." + std::to_string(nsec / 1000));
  const uint64_t ino = model_.InodeOf(path);
  if (ino != 0) Claim(ino);
  if (failed_) return;
  ErrSet want = model_.Utimes(path, sec, nsec);
  Check("utimes " + Q(path), want, Again([&] { return fs().Utimes(W(path), sec, nsec); }));
}

void Exerciser::OpReaddir() {
  const uint64_t r = rng_.Below(100);
  const std::string path = r < 90 ? PickDir(SIZE_MAX) : r < 95 ? PickEntry("f", 0) : MissingPath();
  Note(Q(path));
  std::vector<std::string> want_names, got_names;
  ErrSet want = model_.List(path, &want_names);
  int rc = Again([&] { return fs().ReadDir(W(path), &got_names); });
  if (!Check("readdir " + Q(path), want, rc) || rc != 0) return;
  std::sort(got_names.begin(), got_names.end());
  Note("-> " + std::to_string(got_names.size()) + " names");
  if (got_names == want_names) return;
  std::string extra, missing;
  for (const std::string& n : got_names) {
    if (!std::binary_search(want_names.begin(), want_names.end(), n)) extra += " " + Q(n);
  }
  for (const std::string& n : want_names) {
    if (!std::binary_search(got_names.begin(), got_names.end(), n)) missing += " " + Q(n);
  }
  if (extra.empty() && missing.empty()) extra = " (a name listed twice)";
  Fail("readdir " + Q(path) + " differs from the model: unexpected:" +
       (extra.empty() ? " none" : extra) + "; missing:" + (missing.empty() ? " none" : missing));
}

void Exerciser::OpStat() {
  const uint64_t r = rng_.Below(100);
  const std::string path = r < 8 ? "" : r < 93 ? PickEntry("fdl", 0) : MissingPath();
  Note(Q(path));
  const uint64_t ino = model_.InodeOf(path);
  if (ino != 0 && model_.node(ino).type == FileType::kFile) Claim(ino);
  if (failed_) return;
  FsStat want_st, got_st;
  ErrSet want = model_.Lstat(path, &want_st);
  int rc = Again([&] { return fs().Lstat(W(path), &got_st); });
  if (!Check("lstat " + Q(path), want, rc) || rc != 0) return;
  std::string diffs;
  auto differ = [&](const char* field, const std::string& got, const std::string& exp) {
    diffs += std::string(" ") + field + " " + got + " (model: " + exp + ")";
  };
  if (got_st.type != want_st.type) {
    differ("type", std::to_string(static_cast<int>(got_st.type)),
           std::to_string(static_cast<int>(want_st.type)));
  }
  if (want_st.type != FileType::kSymlink && got_st.mode != want_st.mode) {
    differ("mode", Octal(got_st.mode), Octal(want_st.mode));
  }
  if (want_st.type != FileType::kDir && got_st.size != want_st.size) {
    differ("size", std::to_string(got_st.size), std::to_string(want_st.size));
  }
  if (got_st.nlink != want_st.nlink) {
    differ("nlink", std::to_string(got_st.nlink), std::to_string(want_st.nlink));
  }
  if (ino != 0 && model_.node(ino).mtime_known &&
      (got_st.mtime_sec != want_st.mtime_sec || got_st.mtime_nsec != want_st.mtime_nsec)) {
    differ("mtime", std::to_string(got_st.mtime_sec) + "." + std::to_string(got_st.mtime_nsec),
           std::to_string(want_st.mtime_sec) + "." + std::to_string(want_st.mtime_nsec));
  }
  if (!diffs.empty()) Fail("lstat " + Q(path) + ":" + diffs);
}

}  // namespace nfsedge::fsx
