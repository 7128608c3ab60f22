// The main() of every integration test binary: it enters the binary's own
// network and mount namespaces before gtest (or anything) starts a thread.
#include <gtest/gtest.h>

#include "integration_env.h"

int main(int argc, char** argv) {
  nfsedge::itest::EnterPrivateNetwork();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
