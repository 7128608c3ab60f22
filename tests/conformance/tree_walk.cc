#include "conformance/tree_walk.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <vector>

#include "conformance/prng.h"

namespace nfsedge::fsx {
namespace {

constexpr size_t kReadChunk = 1 << 20;

int ReadWhole(Fs& fs, const std::string& path, std::string* data, std::string* error) {
  Handle h;
  int rc = fs.Open(path, &h);
  if (rc != 0) {
    *error = "open " + path + ": " + ErrnoName(rc);
    return rc;
  }
  data->clear();
  std::string chunk;
  for (;;) {
    int64_t n = fs.Pread(h, data->size(), kReadChunk, &chunk);
    if (n < 0) {
      *error = "read " + path + ": " + ErrnoName(static_cast<int>(n));
      (void)fs.Close(h);
      return static_cast<int>(n);
    }
    data->append(chunk);
    if (static_cast<size_t>(n) < kReadChunk) break;
  }
  rc = fs.Close(h);
  if (rc != 0) *error = "close " + path + ": " + ErrnoName(rc);
  return rc;
}

int Walk(Fs& fs, const std::string& root, const std::string& rel, std::vector<std::string>* lines,
         std::string* error) {
  std::vector<std::string> names;
  const std::string dir = JoinPath(root, rel);
  int rc = fs.ReadDir(dir, &names);
  if (rc != 0) {
    *error = "readdir " + dir + ": " + ErrnoName(rc);
    return rc;
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string path = JoinPath(rel, name);
    const std::string full = JoinPath(root, path);
    FsStat st;
    rc = fs.Lstat(full, &st);
    if (rc != 0) {
      *error = "lstat " + full + ": " + ErrnoName(rc);
      return rc;
    }
    std::string data;
    if (st.type == FileType::kFile) {
      rc = ReadWhole(fs, full, &data, error);
    } else if (st.type == FileType::kSymlink) {
      rc = fs.Readlink(full, &data);
      if (rc != 0) *error = "readlink " + full + ": " + ErrnoName(rc);
    }
    if (rc != 0) return rc;
    lines->push_back(CanonicalLine(path, st.type, st.mode, st.size, st.nlink, data));
    if (st.type == FileType::kDir) {
      rc = Walk(fs, root, path, lines, error);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

}  // namespace

int CanonicalTree(Fs& fs, const std::string& root, std::string* out, std::string* error) {
  std::vector<std::string> lines;
  int rc = Walk(fs, root, "", &lines, error);
  if (rc != 0) return rc;
  std::sort(lines.begin(), lines.end());
  out->clear();
  for (const std::string& l : lines) *out += l;
  return 0;
}

int RemoveTree(Fs& fs, const std::string& path, std::string* error) {
  FsStat st;
  int rc = fs.Lstat(path, &st);
  if (rc == -ENOENT) return 0;
  if (rc != 0) {
    *error = "lstat " + path + ": " + ErrnoName(rc);
    return rc;
  }
  if (st.type != FileType::kDir) {
    rc = fs.Unlink(path);
    if (rc != 0) *error = "unlink " + path + ": " + ErrnoName(rc);
    return rc;
  }
  std::vector<std::string> names;
  rc = fs.ReadDir(path, &names);
  if (rc != 0) {
    *error = "readdir " + path + ": " + ErrnoName(rc);
    return rc;
  }
  for (const std::string& name : names) {
    rc = RemoveTree(fs, JoinPath(path, name), error);
    if (rc != 0) return rc;
  }
  rc = fs.Rmdir(path);
  if (rc != 0) *error = "rmdir " + path + ": " + ErrnoName(rc);
  return rc;
}

std::string Fingerprint(const std::string& canonical) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, Fnv1a(canonical));
  return buf;
}

std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ha = static_cast<bool>(std::getline(a, la));
    bool hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "";
    if (!ha) la = "(end)";
    if (!hb) lb = "(end)";
    if (la != lb) {
      return "line " + std::to_string(line) + ":\n    model: " + la + "\n    fs:    " + lb;
    }
  }
}

}  // namespace nfsedge::fsx
