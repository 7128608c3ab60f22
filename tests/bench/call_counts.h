// CallCounts: RPC calls by procedure, named as the WAN emulator names them in
// its stats ("NFS3.GETATTR", "MOUNT3.MNT"), so a workload's own count can be
// compared with what crossed the emulated WAN.
//
// Thread safety: a plain value.

#ifndef NFSEDGE_TESTS_BENCH_CALL_COUNTS_H_
#define NFSEDGE_TESTS_BENCH_CALL_COUNTS_H_

#include <cstdint>
#include <map>
#include <string>

namespace nfsedge::bench {

class CallCounts {
 public:
  void Add(const std::string& name, uint64_t n = 1);
  void AddAll(const CallCounts& other);
  uint64_t Get(const std::string& name) const;
  uint64_t Total() const;
  bool empty() const { return by_name_.empty(); }
  const std::map<std::string, uint64_t>& by_name() const { return by_name_; }

  // Returns this minus `earlier`, per name; names whose difference is not
  // positive are left out.
  CallCounts Minus(const CallCounts& earlier) const;

  // "GETATTR 12, LOOKUP 3, MNT 1": "NFS3." and "MOUNT3." dropped, largest
  // count first; "-" iff empty.
  std::string Compact() const;

  bool operator==(const CallCounts& other) const { return by_name_ == other.by_name_; }

 private:
  std::map<std::string, uint64_t> by_name_;
};

}  // namespace nfsedge::bench

#endif  // NFSEDGE_TESTS_BENCH_CALL_COUNTS_H_
