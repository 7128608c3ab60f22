#include "kernel/guest_workload.h"

#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

namespace nfsedge::kernel_test {
namespace {

constexpr uint64_t kSeed = 0x6e667365646765;  // "nfsedge"

// The lines of `output` between "== <section>" and the next "== " line.
std::vector<std::string> Section(const std::string& output, const std::string& section) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("== ", 0) == 0) {
      inside = (line == "== " + section);
      continue;
    }
    if (inside) lines.push_back(line);
  }
  return lines;
}

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Guest scripts. Every step runs under `set -e`: the first failure ends the script with a
// non-zero status (the exit status of uml_client.sh), and "== done" is printed only if
// every step passed.
constexpr char kFullScript[] = R"sh(set -e
echo "== write"
dd if=/in/f0 of=f0 bs=4096 status=none
dd if=/in/f5k of=f5k bs=1000 status=none
dd if=/in/f1m of=f1m bs=65536 status=none
dd if=/in/f8m of=f8m bs=1048576 status=none
dd if=/in/f5k of=f1m bs=1000 seek=100 conv=notrunc status=none
dd if=/in/f5k of=t bs=5000 status=none
truncate -s 3000 t
dd if=/in/f1m of=p1 bs=4096 status=none &
dd if=/in/f8m of=p2 bs=8192 count=256 status=none &
wait
sync
echo 3 > /proc/sys/vm/drop_caches
echo "== readback"
md5sum f0 f5k f1m f8m t pre p1 p2
echo "== list"
ls -la
echo "== reread"
echo 3 > /proc/sys/vm/drop_caches
md5sum f8m pre
dd if=f8m bs=4097 skip=100 count=300 status=none | md5sum | sed 's/-$/f8m.part/'
echo "== overwrite"
dd if=/in/f5k of=f1m bs=1000 seek=500 conv=notrunc status=none
echo "== many"
mkdir many
i=0
while [ $i -lt 400 ]; do
  echo $i > many/entry-with-a-long-name-to-fill-readdir-replies-$i
  i=$((i+1))
done
test "$(ls many | wc -l)" = 400
echo 3 > /proc/sys/vm/drop_caches
test "$(ls -la many | grep -c entry-with)" = 400
test "$(cat many/entry-with-a-long-name-to-fill-readdir-replies-399)" = 399
rm many/entry-with-*
rmdir many
echo "== namespace"
mkdir d1 d1/d2 gone
mv f5k f5k.renamed
mv f1m d1/f1m
mv d1/f1m d1/d2/f1m.moved
echo one > a
echo two > b
mv a b
test ! -e a
test ! -e f5k
test ! -e f1m
test ! -e d1/f1m
chmod 600 f8m
ln -s f8m lnk
test "$(readlink lnk)" = f8m
ln f8m hard
test "$(stat -c %h f8m)" = 2
rm hard
rm f0
rmdir gone
sync
echo 3 > /proc/sys/vm/drop_caches
echo "== final"
md5sum f5k.renamed d1/d2/f1m.moved f8m b t pre p1 p2
ls -la . d1 d1/d2
echo "== done"
)sh";

// For a mount with the `sync` option: every write is a FILE_SYNC WRITE, no COMMIT.
constexpr char kShortScript[] = R"sh(set -e
echo "== write"
dd if=/in/f5k of=f5k bs=1000 status=none
dd if=/in/f1m of=f1m bs=65536 status=none
dd if=/in/f5k of=f1m bs=1000 seek=100 conv=notrunc status=none
echo 3 > /proc/sys/vm/drop_caches
echo "== readback"
md5sum f5k f1m pre
echo "== list"
ls -la
echo "== namespace"
mv f5k f5k.renamed
test ! -e f5k
echo 3 > /proc/sys/vm/drop_caches
echo "== final"
md5sum f5k.renamed f1m pre
echo "== done"
)sh";

}  // namespace

std::string Md5Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_md5(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

std::string PseudoRandomBytes(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  uint64_t x = seed;
  for (size_t i = 0; i < size; i += 8) {
    // splitmix64
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    std::memcpy(&out[i], &z, std::min<size_t>(8, size - i));
  }
  return out;
}

std::string WriteFiles(const std::string& dir, const std::map<std::string, std::string>& files) {
  for (const auto& [name, content] : files) {
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    if (!out) return "cannot write " + path;
  }
  return "";
}

std::vector<std::string> CheckMd5s(const std::string& output, const std::string& section,
                                   const std::map<std::string, std::string>& want) {
  static const std::regex kMd5Line(R"(^([0-9a-f]{32})  (\S+)$)");
  std::map<std::string, std::string> got;
  for (const std::string& line : Section(output, section)) {
    std::smatch m;
    if (std::regex_match(line, m, kMd5Line)) got[m[2]] = m[1];
  }
  std::vector<std::string> problems;
  for (const auto& [name, md5] : want) {
    auto it = got.find(name);
    if (it == got.end()) {
      problems.push_back("guest printed no md5sum of " + name + " in '== " + section + "'");
    } else if (it->second != md5) {
      problems.push_back("guest md5sum of " + name + " in '== " + section + "' is " + it->second +
                         ", want " + md5);
    }
  }
  return problems;
}

std::vector<std::string> CheckFiles(const std::string& dir,
                                    const std::map<std::string, std::string>& want) {
  std::vector<std::string> problems;
  for (const auto& [name, content] : want) {
    std::string got;
    if (!ReadWholeFile(dir + "/" + name, &got)) {
      problems.push_back("server: cannot read " + name);
    } else if (got != content) {
      problems.push_back("server: " + name + " has " + std::to_string(got.size()) + " bytes, md5 " +
                         Md5Hex(got) + "; want " + std::to_string(content.size()) + " bytes, md5 " +
                         Md5Hex(content));
    }
  }
  return problems;
}

GuestWorkload::GuestWorkload(Kind kind) : kind_(kind) {
  const std::string f5k = PseudoRandomBytes(kSeed + 1, 5000);
  const std::string f1m = PseudoRandomBytes(kSeed + 2, 1 << 20);
  const std::string pre = PseudoRandomBytes(kSeed + 4, 300000);
  std::string f1m_patched = f1m;  // dd if=/in/f5k of=f1m bs=1000 seek=100 conv=notrunc
  f1m_patched.replace(100000, f5k.size(), f5k);
  inputs_["f5k"] = f5k;
  inputs_["f1m"] = f1m;
  seeds_["pre"] = pre;
  listing_sizes_ = {{"f5k", 5000}, {"f1m", 1 << 20}, {"pre", pre.size()}};
  std::map<std::string, std::string>& readback = md5s_["readback"];
  readback = {{"f5k", Md5Hex(f5k)}, {"f1m", Md5Hex(f1m_patched)}, {"pre", Md5Hex(pre)}};
  if (kind_ == Kind::kShort) {
    final_ = {{"f5k.renamed", f5k}, {"f1m", f1m_patched}, {"pre", pre}};
    absent_ = {"f5k"};
  } else {
    const std::string f8m = PseudoRandomBytes(kSeed + 3, 8 << 20);
    const std::string t = f5k.substr(0, 3000);  // truncate -s 3000
    const std::string p2 = f8m.substr(0, 256 * 8192);
    std::string f1m_twice = f1m_patched;  // "== overwrite": seek=500
    f1m_twice.replace(500000, f5k.size(), f5k);
    inputs_["f0"] = "";
    inputs_["f8m"] = f8m;
    readback["f0"] = Md5Hex("");
    readback["f8m"] = Md5Hex(f8m);
    readback["t"] = Md5Hex(t);
    readback["p1"] = Md5Hex(f1m);
    readback["p2"] = Md5Hex(p2);
    md5s_["reread"] = {{"f8m", Md5Hex(f8m)},
                       {"pre", Md5Hex(pre)},
                       {"f8m.part", Md5Hex(f8m.substr(4097 * 100, 4097 * 300))}};
    listing_sizes_["f0"] = 0;
    listing_sizes_["f8m"] = 8 << 20;
    listing_sizes_["t"] = 3000;
    listing_sizes_["p1"] = f1m.size();
    listing_sizes_["p2"] = p2.size();
    final_ = {{"f5k.renamed", f5k},
              {"d1/d2/f1m.moved", f1m_twice},
              {"f8m", f8m},
              {"b", "one\n"},
              {"t", t},
              {"pre", pre},
              {"p1", f1m},
              {"p2", p2}};
    absent_ = {"f0", "f5k", "f1m", "a", "gone", "d1/f1m", "hard", "many"};
    dirs_ = {"d1", "d1/d2"};
  }
  std::map<std::string, std::string>& final_md5s = md5s_["final"];
  for (const auto& [name, content] : final_) final_md5s[name] = Md5Hex(content);
}

std::string GuestWorkload::SeedServerDir(const std::string& export_dir) const {
  return WriteFiles(export_dir, seeds_);
}

std::string GuestWorkload::WriteInputs(const std::string& dir) const {
  return WriteFiles(dir, inputs_);
}

std::string GuestWorkload::GuestCommand() const {
  return kind_ == Kind::kFull ? kFullScript : kShortScript;
}

std::vector<std::string> GuestWorkload::CheckGuestOutput(const std::string& output) const {
  std::vector<std::string> problems;
  for (const auto& [section, want] : md5s_) {
    std::vector<std::string> p = CheckMd5s(output, section, want);
    problems.insert(problems.end(), p.begin(), p.end());
  }

  // `ls -la` lines: mode links uid gid size month day time name.
  std::map<std::string, uint64_t> sizes;
  for (const std::string& line : Section(output, "list")) {
    std::istringstream fields(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(fields),
                               std::istream_iterator<std::string>()};
    if (f.size() >= 9 && f[0].size() == 10) sizes[f.back()] = std::stoull(f[4]);
  }
  for (const auto& [name, size] : listing_sizes_) {
    auto it = sizes.find(name);
    if (it == sizes.end()) {
      problems.push_back("ls -la in the guest does not list " + name);
    } else if (it->second != size) {
      problems.push_back("ls -la in the guest shows " + name + " with size " +
                         std::to_string(it->second) + ", want " + std::to_string(size));
    }
  }
  if (output.find("\n== done\n") == std::string::npos) {
    problems.push_back("guest script did not reach '== done'");
  }
  return problems;
}

std::vector<std::string> GuestWorkload::CheckServerDir(const std::string& export_dir) const {
  std::vector<std::string> problems = CheckFiles(export_dir, final_);
  struct stat st;
  for (const std::string& name : absent_) {
    if (lstat((export_dir + "/" + name).c_str(), &st) == 0) {
      problems.push_back("server: " + name + " still exists");
    }
  }
  for (const std::string& name : dirs_) {
    if (lstat((export_dir + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      problems.push_back("server: " + name + " is not a directory");
    }
  }
  if (kind_ == Kind::kFull) {
    if (lstat((export_dir + "/f8m").c_str(), &st) != 0 || (st.st_mode & 07777) != 0600) {
      problems.push_back("server: f8m mode is not 0600");
    } else if (st.st_nlink != 1) {
      problems.push_back("server: f8m has " + std::to_string(st.st_nlink) + " links, want 1");
    }
    char target[64] = {};
    ssize_t n = readlink((export_dir + "/lnk").c_str(), target, sizeof(target) - 1);
    if (n < 0 || std::string(target, n) != "f8m") {
      problems.push_back("server: lnk is not a symlink to f8m");
    }
  }
  return problems;
}

}  // namespace nfsedge::kernel_test
