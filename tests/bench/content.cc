#include "content.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace nfsedge::bench {
namespace {

constexpr size_t kChunk = 1 << 20;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The 8-byte word `index` of stream `seed`.
uint64_t Word(uint64_t seed, uint64_t index) {
  return SplitMix(seed ^ (index * 0xd1b54a32d192ed03ull));
}

std::string Errno(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

uint64_t SeedFor(uint64_t base, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return SplitMix(h ^ SplitMix(base));
}

void FillContent(uint64_t seed, uint64_t offset, char* out, size_t len) {
  size_t done = 0;
  while (done < len) {
    uint64_t pos = offset + done;
    uint64_t word = Word(seed, pos / 8);
    size_t skip = pos % 8;
    size_t n = std::min(len - done, 8 - skip);
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(word >> (8 * i));
    std::memcpy(out + done, bytes + skip, n);
    done += n;
  }
}

int64_t FirstMismatch(uint64_t seed, uint64_t offset, const char* data, size_t len) {
  char expected[4096];
  for (size_t done = 0; done < len;) {
    size_t n = std::min(len - done, sizeof(expected));
    FillContent(seed, offset + done, expected, n);
    if (std::memcmp(expected, data + done, n) != 0) {
      for (size_t i = 0; i < n; ++i) {
        if (expected[i] != data[done + i]) return static_cast<int64_t>(offset + done + i);
      }
    }
    done += n;
  }
  return -1;
}

Status WriteContentFile(const std::string& path, uint64_t seed, uint64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(Errno("open", path));
  std::vector<char> buf(kChunk);
  for (uint64_t off = 0; off < size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - off));
    FillContent(seed, off, buf.data(), n);
    ssize_t w = write(fd, buf.data(), n);
    if (w != static_cast<ssize_t>(n)) {
      close(fd);
      return Status::Error(Errno("write", path));
    }
    off += n;
  }
  if (close(fd) != 0) return Status::Error(Errno("close", path));
  return Status::OK();
}

Status VerifyContentFile(const std::string& path, uint64_t seed, uint64_t size) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(Errno("open", path));
  std::vector<char> buf(kChunk);
  uint64_t off = 0;
  Status result;
  while (true) {
    ssize_t r = read(fd, buf.data(), buf.size());
    if (r < 0) {
      result = Status::Error(Errno("read", path));
      break;
    }
    if (r == 0) break;
    size_t n = static_cast<size_t>(r);
    if (off + n > size) {
      result = Status::Error(path + ": longer than " + std::to_string(size) + " bytes");
      break;
    }
    int64_t bad = FirstMismatch(seed, off, buf.data(), n);
    if (bad >= 0) {
      result = Status::Error(path + ": wrong data at offset " + std::to_string(bad));
      break;
    }
    off += n;
  }
  close(fd);
  if (result.ok() && off != size) {
    result = Status::Error(path + ": " + std::to_string(off) + " bytes, expected " +
                           std::to_string(size));
  }
  return result;
}

}  // namespace nfsedge::bench
