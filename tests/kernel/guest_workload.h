// GuestWorkload: the file-system work a kernel-client test runs in the UML guest, and
// the checks of its results, both in the guest's output and in the exported directory on
// the NFS server's disk.
//
// A workload writes input files (deterministic pseudo-random content, generated on the
// host and handed to the guest as /in) into the mount with dd (several sizes and block
// sizes, an in-place overwrite, a truncate, two writers at once), reads them back after
// dropping the guest's page cache and prints their md5sums (also of a file the server had
// before the mount, and of an unaligned range), lists the directory, fills a directory
// with 400 long names (several READDIR replies), then makes, renames (within and across
// directories, over an existing name), links, chmods and removes entries, and syncs. The
// host knows the expected content of every file, so it checks both what the guest printed
// and what the server holds.
//
// The free functions below (content, md5, checks of guest output and of the server's
// files) serve the other kernel-client tests too.
//
// Not thread-safe: one workload per test, used from the test's thread.

#ifndef NFSEDGE_TESTS_KERNEL_GUEST_WORKLOAD_H_
#define NFSEDGE_TESTS_KERNEL_GUEST_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nfsedge::kernel_test {

// Returns the lowercase hex MD5 of `data`.
std::string Md5Hex(const std::string& data);

// Returns `size` bytes of deterministic pseudo-random content derived from `seed`.
std::string PseudoRandomBytes(uint64_t seed, size_t size);

// Writes each of `files` (name -> content) into `dir`. Returns an empty string on
// success, else what went wrong.
std::string WriteFiles(const std::string& dir, const std::map<std::string, std::string>& files);

// Checks the md5sum lines ("<md5>  <name>") the guest printed in `output` between
// "== <section>" and the next "== " line against `want` (name -> md5). Returns the list of
// problems found; empty iff every name of `want` is there with its md5.
std::vector<std::string> CheckMd5s(const std::string& output, const std::string& section,
                                   const std::map<std::string, std::string>& want);

// Checks that each file of `want` (path relative to `dir` -> content) holds exactly that
// content. Returns the list of problems found.
std::vector<std::string> CheckFiles(const std::string& dir,
                                    const std::map<std::string, std::string>& want);

class GuestWorkload {
 public:
  enum class Kind {
    kFull,   // every step: sizes 0 B..8 MiB, namespace operations, truncate, links
    kShort,  // a few writes and a rename (used with the `sync` mount option)
  };

  explicit GuestWorkload(Kind kind);

  // Puts the files the guest expects to find on the server (written behind the client's
  // back, before the mount) into `export_dir`. Returns an empty string on success, else
  // what went wrong.
  std::string SeedServerDir(const std::string& export_dir) const;

  // Writes the input files into `dir` (which must exist and be empty), to be passed to
  // uml_client.sh -i. Returns an empty string on success, else what went wrong.
  std::string WriteInputs(const std::string& dir) const;

  // The busybox sh script run in the guest, cwd = the root of the mounted export.
  std::string GuestCommand() const;

  // Checks the guest output (what uml_client.sh printed on stdout). Returns the list of
  // problems found; empty iff the guest printed every expected md5sum, listing and marker.
  std::vector<std::string> CheckGuestOutput(const std::string& output) const;

  // Checks the exported directory on the server's disk after the guest ran. Returns the
  // list of problems found; empty iff every file has its expected content (and mode),
  // renamed and removed entries are gone, and new directories and links exist.
  std::vector<std::string> CheckServerDir(const std::string& export_dir) const;

 private:
  Kind kind_;
  std::map<std::string, std::string> inputs_;  // name in /in -> content
  std::map<std::string, std::string> seeds_;   // name on the server before the mount
  // md5sums the guest prints, by section of its output ("readback", "reread", "final"),
  // then by path relative to the mount.
  std::map<std::string, std::map<std::string, std::string>> md5s_;
  // Content expected on the server at the end, by path relative to the export.
  std::map<std::string, std::string> final_;
  std::map<std::string, uint64_t> listing_sizes_;  // "== list": name -> size in ls -la
  std::vector<std::string> absent_;                // must not exist at the end
  std::vector<std::string> dirs_;                  // must be directories at the end
};

}  // namespace nfsedge::kernel_test

#endif  // NFSEDGE_TESTS_KERNEL_GUEST_WORKLOAD_H_
