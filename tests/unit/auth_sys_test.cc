#include "rpc/auth_sys.h"

#include <gtest/gtest.h>

namespace nfsedge {
namespace {

TEST(AuthSys, RoundTrip) {
  AuthSys a{42, "client.example", 1000, 100, {100, 200, 300}};
  std::optional<AuthSys> b = DecodeAuthSys(EncodeAuthSys(a));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->stamp, 42u);
  EXPECT_EQ(b->machine, "client.example");
  EXPECT_EQ(b->uid, 1000u);
  EXPECT_EQ(b->gid, 100u);
  EXPECT_EQ(b->gids, (std::vector<uint32_t>{100, 200, 300}));
}

TEST(AuthSys, MoreThanSixteenGroupsPassAsSent) {
  AuthSys a{1, "m", 5, 5, {}};
  for (uint32_t g = 0; g < 40; ++g) a.gids.push_back(g + 1);
  std::optional<AuthSys> b = DecodeAuthSys(EncodeAuthSys(a));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->gids.size(), 40u);
}

TEST(AuthSys, TruncatedOrTrailingBytesAreRejected) {
  std::string body = EncodeAuthSys(AuthSys{1, "machine", 1, 1, {1, 2}});
  for (size_t n = 0; n < body.size(); n += 3) {
    EXPECT_FALSE(DecodeAuthSys(body.substr(0, n))) << n;
  }
  EXPECT_FALSE(DecodeAuthSys(body + "xxxx"));
}

TEST(AuthSys, GroupCountLargerThanBodyIsRejected) {
  std::string body = EncodeAuthSys(AuthSys{1, "", 1, 1, {}});
  body[body.size() - 1] = 0x7f;  // claims 127 groups, has none
  EXPECT_FALSE(DecodeAuthSys(body));
}

TEST(AuthSys, CheckCallAuth) {
  CallHeader h;
  EXPECT_EQ(CheckCallAuth(h), kAuthOk);  // AUTH_NONE
  h.cred = {kAuthSys, EncodeAuthSys(AuthSys{1, "m", 0, 0, {}})};
  EXPECT_EQ(CheckCallAuth(h), kAuthOk);
  h.cred.body.resize(5);
  EXPECT_EQ(CheckCallAuth(h), kAuthBadCred);
  h.cred = {3, "xxxx"};  // AUTH_DH: not served
  EXPECT_EQ(CheckCallAuth(h), kAuthBadCred);
  h.cred = {kAuthSys, EncodeAuthSys(AuthSys{1, "m", 0, 0, {}})};
  h.verf = {kAuthSys, "abcd"};
  EXPECT_EQ(CheckCallAuth(h), kAuthBadVerf);
}

}  // namespace
}  // namespace nfsedge
