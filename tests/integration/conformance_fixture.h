// ConformanceTest runs each scenario twice: directly against ganesha (in
// directory d1/<test>) and through nfsedge in front of the same ganesha (in
// d2/<test>). Each run records a trace of what the server answered (status
// codes and the fields that must agree: types, modes, sizes, nlink, data,
// names, link text; never fileids, times or handles), and the two traces
// must be equal. Scenarios also assert absolute expectations on both sides.
//
// nfsedge exports the same path as ganesha, so MNT/EXPORT results compare
// directly.
//
// Thread safety: gtest fixture; single-threaded.

#ifndef NFSEDGE_TESTS_INTEGRATION_CONFORMANCE_FIXTURE_H_
#define NFSEDGE_TESTS_INTEGRATION_CONFORMANCE_FIXTURE_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/nfs_types.h"
#include "harness/raw_nfs.h"
#include "harness/testbed.h"

namespace nfsedge::itest {

// One server as seen by a scenario.
struct Side {
  std::string name;                // "ganesha" or "nfsedge".
  harness::RawNfs* nfs = nullptr;  // NFS port.
  harness::RawNfs* mnt = nullptr;  // MOUNT port.
  std::string export_path;
  std::string root;  // Export root handle.
  std::string dir;   // This test's directory handle.
  std::vector<std::string> trace;

  // Appends "<step>: <status>[ <detail>]".
  void Note(const std::string& step, const harness::NfsResult& r, const std::string& detail = "");
  void Note(const std::string& line) { trace.push_back(line); }
  // Note() with the object's attribute summary when the call succeeded.
  void NoteAttr(const std::string& step, const harness::NfsResult& r,
                const std::optional<harness::Fattr>& attr);
};

class ConformanceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  // Runs `scenario` on ganesha, then through nfsedge, and compares traces.
  void RunOnBoth(const std::function<void(Side&)>& scenario);

  static harness::Testbed* testbed();
  // The proxy's max_record_size (the default, which the test does not set).
  static constexpr uint32_t kMaxRecordSize = 1114112;

  Side direct_;
  Side proxied_;
};

}  // namespace nfsedge::itest

#endif  // NFSEDGE_TESTS_INTEGRATION_CONFORMANCE_FIXTURE_H_
