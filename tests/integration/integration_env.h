// Shared by the integration test binaries: the private network namespace
// each binary enters in main(), the skip that follows when it cannot, and
// small helpers to compare what ganesha and nfsedge answered.
//
// Thread safety: EnterPrivateNetwork() from main() before any thread; the
// rest from the test thread.

#ifndef NFSEDGE_TESTS_INTEGRATION_INTEGRATION_ENV_H_
#define NFSEDGE_TESTS_INTEGRATION_INTEGRATION_ENV_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/raw_nfs.h"
#include "harness/status.h"
#include "harness/testbed.h"
#include "harness/required.h"

namespace nfsedge::itest {

// Calls PrivateNetwork::Enter() and remembers why it failed, if it did.
void EnterPrivateNetwork();
// Empty iff the private network is up; else why the tests are skipped.
const std::string& SkipReason();

// Connects a RawNfs to host:port with `cred`. Fails the test on error.
std::unique_ptr<harness::RawNfs> ConnectOrFail(const std::string& host, uint16_t port,
                                               const harness::Credential& cred = {},
                                               const std::string& source_address = "");

// The tail of the stack's logs, printed when a test fails.
void PrintLogsOnFailure(const ::testing::Test& test, harness::Testbed* testbed);

// Compares two traces of the same scenario step by step; adds one failure
// per differing step ("step 3: ganesha: X | nfsedge: Y").
void ExpectSameTrace(const std::vector<std::string>& direct,
                     const std::vector<std::string>& proxied);

// 8-byte verifiers and deterministic test data.
std::string Verifier(char fill);
std::string Pattern(size_t size, uint32_t seed);

}  // namespace nfsedge::itest

// In a fixture's SetUp(): skip when the private network could not be set up.
#define NFSEDGE_SKIP_WITHOUT_PRIVATE_NETWORK()        \
  do {                                                \
    if (!::nfsedge::itest::SkipReason().empty()) {    \
      NFSEDGE_SKIP_OR_FAIL(::nfsedge::itest::SkipReason()); \
    }                                                 \
  } while (0)

#endif  // NFSEDGE_TESTS_INTEGRATION_INTEGRATION_ENV_H_
