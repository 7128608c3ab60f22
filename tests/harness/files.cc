#include "harness/files.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace nfsedge::harness {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/nfsedge-" + prefix + "-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
}

TempDir::~TempDir() {
  if (!path_.empty() && std::getenv("NFSEDGE_KEEP_TEST_DIRS") == nullptr) RemoveTree(path_);
}

Status MakeDirs(const std::string& path, unsigned mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Status::Error("mkdir -p " + path + ": " + ec.message());
  fs::permissions(path, static_cast<fs::perms>(mode), ec);
  if (ec) return Status::Error("chmod " + path + ": " + ec.message());
  return Status::OK();
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  if (!out) return Status::Error("cannot write " + path + ": " + std::strerror(errno));
  return Status::OK();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TailOfFile(const std::string& path, size_t max_lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(no file " + path + ")\n";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  std::streamoff start = size > 65536 ? size - 65536 : 0;
  in.seekg(start);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  for (size_t lines = 0; pos > 0; --pos) {
    if (text[pos - 1] == '\n' && ++lines == max_lines) break;
  }
  return text.substr(pos);
}

}  // namespace nfsedge::harness
