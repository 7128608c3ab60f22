#include "conformance/model.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "conformance/prng.h"
#include "conformance/tree_walk.h"

namespace nfsedge::fsx {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size() && !path.empty()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

// Returns true iff `inner` is `outer` or lies below it.
bool Within(const std::string& inner, const std::string& outer) {
  if (outer.empty()) return true;
  return inner == outer ||
         (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
          inner[outer.size()] == '/');
}

char TypeLetter(FileType t) {
  switch (t) {
    case FileType::kFile:
      return 'f';
    case FileType::kDir:
      return 'd';
    case FileType::kSymlink:
      return 'l';
    case FileType::kOther:
      break;
  }
  return '?';
}

}  // namespace

int ErrSet::First() const {
  for (int e = 1; e < 64; ++e) {
    if (mask_ >> e & 1) return -e;
  }
  return 0;
}

std::string ErrSet::ToString() const {
  if (success()) return "OK";
  std::string s;
  for (int e = 1; e < 64; ++e) {
    if ((mask_ >> e & 1) == 0) continue;
    if (!s.empty()) s += "|";
    s += ErrnoName(e);
  }
  return s;
}

Model::Model(uint32_t root_mode) {
  Node root;
  root.type = FileType::kDir;
  root.mode = root_mode;
  nodes_[kRoot] = root;
}

uint64_t Model::NewNode(FileType type, uint32_t mode) {
  const uint64_t ino = next_ino_++;
  Node& n = nodes_[ino];
  n.type = type;
  n.mode = mode;
  n.links = 1;
  return ino;
}

void Model::Touch(uint64_t dir) { nodes_.at(dir).mtime_known = false; }

void Model::DropName(uint64_t ino) {
  Node& n = nodes_.at(ino);
  if (n.type == FileType::kDir || --n.links == 0) nodes_.erase(ino);
}

Model::Parent Model::ResolveParent(const std::string& path) const {
  Parent p;
  std::vector<std::string> parts = Split(path);
  if (parts.empty()) {  // The root itself has no parent here.
    p.err = ErrSet{EINVAL, EBUSY, EEXIST, ENOTEMPTY};
    return p;
  }
  uint64_t cur = kRoot;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const Node& n = nodes_.at(cur);
    if (n.type != FileType::kDir) {
      p.err = ErrSet{ENOTDIR};
      return p;
    }
    auto it = n.entries.find(parts[i]);
    if (it == n.entries.end()) {
      p.err = ErrSet{ENOENT};
      return p;
    }
    cur = it->second;
  }
  if (nodes_.at(cur).type != FileType::kDir) {
    p.err = ErrSet{ENOTDIR};
    return p;
  }
  p.dir = cur;
  p.name = parts.back();
  return p;
}

uint64_t Model::Resolve(const std::string& path, ErrSet* err) const {
  if (path.empty()) return kRoot;
  Parent p = ResolveParent(path);
  if (p.dir == 0) {
    *err = p.err;
    return 0;
  }
  const Node& d = nodes_.at(p.dir);
  auto it = d.entries.find(p.name);
  if (it == d.entries.end()) {
    *err = ErrSet{ENOENT};
    return 0;
  }
  return it->second;
}

uint64_t Model::InodeOf(const std::string& path) const {
  ErrSet err;
  return Resolve(path, &err);
}

ErrSet Model::Create(const std::string& path, uint32_t mode, uint64_t* ino) {
  Parent p = ResolveParent(path);
  if (p.dir == 0) return p.err;
  Node& d = nodes_.at(p.dir);
  if (d.entries.count(p.name)) return ErrSet{EEXIST};
  *ino = NewNode(FileType::kFile, mode);
  nodes_.at(p.dir).entries[p.name] = *ino;
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Mkdir(const std::string& path, uint32_t mode) {
  Parent p = ResolveParent(path);
  if (p.dir == 0) return p.err;
  if (nodes_.at(p.dir).entries.count(p.name)) return ErrSet{EEXIST};
  const uint64_t ino = NewNode(FileType::kDir, mode);
  nodes_.at(p.dir).entries[p.name] = ino;
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Rmdir(const std::string& path) {
  Parent p = ResolveParent(path);
  if (p.dir == 0) return p.err;
  auto& entries = nodes_.at(p.dir).entries;
  auto it = entries.find(p.name);
  if (it == entries.end()) return ErrSet{ENOENT};
  const Node& n = nodes_.at(it->second);
  if (n.type != FileType::kDir) return ErrSet{ENOTDIR};
  if (!n.entries.empty()) return ErrSet{ENOTEMPTY, EEXIST};
  nodes_.erase(it->second);
  entries.erase(it);
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Unlink(const std::string& path) {
  Parent p = ResolveParent(path);
  if (p.dir == 0) return p.err;
  auto& entries = nodes_.at(p.dir).entries;
  auto it = entries.find(p.name);
  if (it == entries.end()) return ErrSet{ENOENT};
  if (nodes_.at(it->second).type == FileType::kDir) return ErrSet{EISDIR, EPERM};
  DropName(it->second);
  entries.erase(it);
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Rename(const std::string& from, const std::string& to) {
  Parent pf = ResolveParent(from);
  Parent pt = ResolveParent(to);
  if (pf.dir == 0 || pt.dir == 0) {
    ErrSet err;
    if (pf.dir == 0) err.Add(pf.err);
    if (pt.dir == 0) err.Add(pt.err);
    if (pf.dir != 0 && nodes_.at(pf.dir).entries.count(pf.name) == 0) err.Add(ENOENT);
    return err;
  }
  auto sit = nodes_.at(pf.dir).entries.find(pf.name);
  if (sit == nodes_.at(pf.dir).entries.end()) return ErrSet{ENOENT};
  const uint64_t src = sit->second;
  const bool src_dir = nodes_.at(src).type == FileType::kDir;
  if (from == to) return ErrSet();
  if (src_dir && Within(to, from)) return ErrSet{EINVAL};
  auto& dst_entries = nodes_.at(pt.dir).entries;
  auto dit = dst_entries.find(pt.name);
  if (dit != dst_entries.end()) {
    const uint64_t dst = dit->second;
    const Node& dn = nodes_.at(dst);
    if (Within(from, to)) return ErrSet{ENOTEMPTY, EEXIST, EINVAL, EISDIR};  // `to` is an ancestor.
    if (dst == src) return ErrSet();  // Two links to one file: nothing happens.
    if (src_dir && dn.type != FileType::kDir) return ErrSet{ENOTDIR, EEXIST};
    if (!src_dir && dn.type == FileType::kDir) return ErrSet{EISDIR, EEXIST};
    if (dn.type == FileType::kDir && !dn.entries.empty()) return ErrSet{ENOTEMPTY, EEXIST};
    dst_entries.erase(dit);
    DropName(dst);
  }
  nodes_.at(pf.dir).entries.erase(pf.name);
  nodes_.at(pt.dir).entries[pt.name] = src;
  Touch(pf.dir);
  Touch(pt.dir);
  // A directory moved to another parent has its ".." rewritten.
  if (src_dir && pf.dir != pt.dir) Touch(src);
  return ErrSet();
}

ErrSet Model::Link(const std::string& existing, const std::string& path) {
  ErrSet err;
  const uint64_t src = Resolve(existing, &err);
  Parent p = ResolveParent(path);
  if (p.dir == 0) err.Add(p.err);
  // Linux says EPERM; NFS servers answer NFS3ERR_ISDIR or NFS3ERR_INVAL.
  if (src != 0 && nodes_.at(src).type == FileType::kDir) err.Add(ErrSet{EPERM, EISDIR, EINVAL});
  if (p.dir != 0 && nodes_.at(p.dir).entries.count(p.name)) err.Add(EEXIST);
  if (src == 0 && err.success()) err.Add(ENOENT);
  if (!err.success()) return err;
  nodes_.at(p.dir).entries[p.name] = src;
  ++nodes_.at(src).links;
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Symlink(const std::string& target, const std::string& path) {
  Parent p = ResolveParent(path);
  if (p.dir == 0) return p.err;
  if (nodes_.at(p.dir).entries.count(p.name)) return ErrSet{EEXIST};
  const uint64_t ino = NewNode(FileType::kSymlink, 0777);
  nodes_.at(ino).data = target;
  nodes_.at(p.dir).entries[p.name] = ino;
  Touch(p.dir);
  return ErrSet();
}

ErrSet Model::Readlink(const std::string& path, std::string* target) const {
  ErrSet err;
  const uint64_t ino = Resolve(path, &err);
  if (ino == 0) return err;
  const Node& n = nodes_.at(ino);
  if (n.type != FileType::kSymlink) return ErrSet{EINVAL};
  *target = n.data;
  return ErrSet();
}

ErrSet Model::Chmod(const std::string& path, uint32_t mode) {
  ErrSet err;
  const uint64_t ino = Resolve(path, &err);
  if (ino == 0) return err;
  nodes_.at(ino).mode = mode;
  return ErrSet();
}

ErrSet Model::Utimes(const std::string& path, int64_t sec, uint32_t nsec) {
  ErrSet err;
  const uint64_t ino = Resolve(path, &err);
  if (ino == 0) return err;
  Node& n = nodes_.at(ino);
  n.mtime_known = true;
  n.mtime_sec = sec;
  n.mtime_nsec = nsec;
  return ErrSet();
}

ErrSet Model::Lstat(const std::string& path, FsStat* st) const {
  ErrSet err;
  const uint64_t ino = Resolve(path, &err);
  if (ino == 0) return err;
  const Node& n = nodes_.at(ino);
  st->type = n.type;
  st->mode = n.mode;
  st->size = n.type == FileType::kDir ? 0 : n.data.size();
  st->nlink = NlinkOf(ino);
  st->mtime_sec = n.mtime_sec;
  st->mtime_nsec = n.mtime_nsec;
  return ErrSet();
}

ErrSet Model::List(const std::string& path, std::vector<std::string>* names) const {
  ErrSet err;
  const uint64_t ino = Resolve(path, &err);
  if (ino == 0) return err;
  const Node& n = nodes_.at(ino);
  if (n.type != FileType::kDir) return ErrSet{ENOTDIR};
  names->clear();
  for (const auto& [name, child] : n.entries) names->push_back(name);
  return ErrSet();
}

ErrSet Model::OpenFile(const std::string& path, uint64_t* ino) const {
  ErrSet err;
  const uint64_t found = Resolve(path, &err);
  if (found == 0) return err;
  if (nodes_.at(found).type == FileType::kDir) return ErrSet{EISDIR};
  *ino = found;
  return ErrSet();
}

void Model::Write(uint64_t ino, uint64_t offset, const std::string& data) {
  Node& n = nodes_.at(ino);
  if (n.data.size() < offset + data.size()) n.data.resize(offset + data.size(), '\0');
  n.data.replace(offset, data.size(), data);
  n.mtime_known = false;
}

void Model::Truncate(uint64_t ino, uint64_t size) {
  Node& n = nodes_.at(ino);
  n.data.resize(size, '\0');
  n.mtime_known = false;
}

std::string Model::Read(uint64_t ino, uint64_t offset, size_t len) const {
  const std::string& d = nodes_.at(ino).data;
  if (offset >= d.size()) return "";
  return d.substr(offset, len);
}

std::vector<Model::Entry> Model::Entries() const {
  std::vector<Entry> out;
  std::vector<std::pair<std::string, uint64_t>> stack = {{"", kRoot}};
  while (!stack.empty()) {
    auto [path, dir] = stack.back();
    stack.pop_back();
    const auto& entries = nodes_.at(dir).entries;
    std::vector<std::pair<std::string, uint64_t>> subdirs;
    for (const auto& [name, ino] : entries) {
      Entry e{JoinPath(path, name), ino, nodes_.at(ino).type};
      if (e.type == FileType::kDir) subdirs.emplace_back(e.path, ino);
      out.push_back(std::move(e));
    }
    for (auto it = subdirs.rbegin(); it != subdirs.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

std::vector<std::string> Model::Dirs() const {
  std::vector<std::string> dirs = {""};
  for (const Entry& e : Entries()) {
    if (e.type == FileType::kDir) dirs.push_back(e.path);
  }
  return dirs;
}

uint64_t Model::NlinkOf(uint64_t ino) const {
  const Node& n = nodes_.at(ino);
  if (n.type != FileType::kDir) return n.links;
  uint64_t links = 2;
  for (const auto& [name, child] : n.entries) {
    if (nodes_.at(child).type == FileType::kDir) ++links;
  }
  return links;
}

std::string CanonicalLine(const std::string& path, FileType type, uint32_t mode, uint64_t size,
                          uint64_t nlink, const std::string& data) {
  char buf[96];
  std::string line = path + "\t" + TypeLetter(type) + "\t";
  if (type == FileType::kSymlink) {
    line += "-";
  } else {
    std::snprintf(buf, sizeof(buf), "%04o", mode & 07777);
    line += buf;
  }
  line += "\t" + (type == FileType::kDir ? std::string("-") : std::to_string(size));
  line += "\t" + std::to_string(nlink) + "\t";
  if (type == FileType::kFile) {
    std::snprintf(buf, sizeof(buf), "%016" PRIx64, Fnv1a(data));
    line += buf;
  } else if (type == FileType::kSymlink) {
    line += data;
  }
  return line + "\n";
}

std::string Model::Canonical() const {
  std::vector<std::string> lines;
  for (const Entry& e : Entries()) {
    const Node& n = nodes_.at(e.ino);
    lines.push_back(CanonicalLine(e.path, n.type, n.mode, n.data.size(), NlinkOf(e.ino), n.data));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines) out += l;
  return out;
}

}  // namespace nfsedge::fsx
