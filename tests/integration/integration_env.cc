#include "integration_env.h"

#include <algorithm>
#include <iostream>

#include "harness/private_network.h"

namespace nfsedge::itest {
namespace {

std::string& MutableSkipReason() {
  static std::string reason;
  return reason;
}

}  // namespace

void EnterPrivateNetwork() {
  harness::Status s = harness::PrivateNetwork::Enter();
  if (!s.ok()) {
    MutableSkipReason() = "cannot enter a private network namespace: " + s.message();
    std::cerr << "[  SKIP    ] " << MutableSkipReason() << "\n";
  }
}

const std::string& SkipReason() { return MutableSkipReason(); }

std::unique_ptr<harness::RawNfs> ConnectOrFail(const std::string& host, uint16_t port,
                                               const harness::Credential& cred,
                                               const std::string& source_address) {
  harness::RawNfs::Options o;
  o.endpoint.host = host;
  o.endpoint.port = port;
  o.endpoint.source_address = source_address;
  o.credential = cred;
  auto c = harness::RawNfs::Connect(o);
  if (!c.ok()) {
    ADD_FAILURE() << "connect to " << host << ":" << port << ": " << c.status().message();
    return nullptr;
  }
  return std::move(c).value();
}

void PrintLogsOnFailure(const ::testing::Test& test, harness::Testbed* testbed) {
  if (testbed == nullptr || !test.HasFailure()) return;
  std::cerr << "==== logs after failure ====\n"
            << testbed->LogTails() << "============================\n";
}

void ExpectSameTrace(const std::vector<std::string>& direct,
                     const std::vector<std::string>& proxied) {
  size_t n = std::max(direct.size(), proxied.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string d = i < direct.size() ? direct[i] : "(missing)";
    const std::string p = i < proxied.size() ? proxied[i] : "(missing)";
    if (d != p) {
      ADD_FAILURE() << "step " << i << " differs:\n  ganesha: " << d << "\n  nfsedge: " << p;
    }
  }
}

std::string Verifier(char fill) { return std::string(8, fill); }

std::string Pattern(size_t size, uint32_t seed) {
  std::string s(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1103515245u + 12345u;
    s[i] = static_cast<char>(x >> 16);
  }
  return s;
}

}  // namespace nfsedge::itest
