// RpcClient: a NULL call (the outage detector's probe) is not held behind
// max_in_flight.
#include <gtest/gtest.h>

#include "rpc_client_fixture.h"

namespace nfsedge {
namespace {

using namespace rpc_client_test;  // NOLINT: test file, the fixture's names throughout.

class NullCallTest : public RpcClientTest {
 protected:
  // A client with one slot (and `max_queued`), whose call 1 the server
  // holds.
  void OneSlotHeld(size_t max_queued = 4096) {
    StartServer();
    ClientOptions o;
    o.max_in_flight = 1;
    o.max_queued = max_queued;
    StartClient(o);
    loop_.Start();
    Send("hold", 1);
    WaitHeld(1);
  }
};

// Every slot holds a call the server keeps (a frozen file system on a server
// that answers everything else): a NULL call still reaches the server, which
// answers it, so a slow export is not taken for a server that is out. An
// ordinary call still waits for a slot.
TEST_F(NullCallTest, ANullCallGoesPastTheInFlightLimit) {
  OneSlotHeld();
  Send("null", 2, /*proc=*/0);
  EXPECT_EQ(Wait(2), "null") << "the NULL call waited behind the call the server holds";
  Send("queued", 3);
  usleep(100000);
  loop_.RunSync([&] {
    EXPECT_EQ(results_.count(3), 0u) << "an ordinary call went past the limit";
    EXPECT_EQ(handler_.held.size(), 1u);
  });
  ReleaseAll();
  EXPECT_EQ(Wait(1), "released");
  EXPECT_EQ(Wait(3), "queued");
}

// Nor behind max_queued: with every slot held and the queue full, a NULL
// call still goes (a refused probe would count as lost, and the outage it
// declared would hold the queue full for as long as it lasts).
TEST_F(NullCallTest, ANullCallGoesPastAFullQueue) {
  OneSlotHeld(/*max_queued=*/1);
  Send("queued", 2);
  Send("null", 3, /*proc=*/0);
  EXPECT_EQ(Wait(3), "null") << "the NULL call was refused or waited";
  ReleaseAll();
  EXPECT_EQ(Wait(1), "released");
  EXPECT_EQ(Wait(2), "queued");
}

// A NULL call on a connection that is lost goes again past the limit once
// the connection is back, not behind the older calls sent again with it.
TEST_F(NullCallTest, ANullCallSentAgainAfterALostConnectionGoesPastTheLimit) {
  OneSlotHeld();
  Send("hold", 2, /*proc=*/0);  // the server holds the NULL call too
  WaitHeld(2);
  loop_.RunSync([&] {
    handler_.held.clear();
    server_->CloseAll();  // both go again on the next connection
  });
  WaitHeld(1);
  ReleaseAll();  // answers what the server holds now: the NULL call
  EXPECT_EQ(Wait(2), "released") << "the NULL call waited behind the older call";
  ReleaseUntilAnswered(1);
  EXPECT_EQ(Wait(1), "released");
}

}  // namespace
}  // namespace nfsedge
