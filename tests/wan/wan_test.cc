// Unit tests of the WAN emulator: the link model's arithmetic, the RPC record parser (fed byte by
// byte), the stats JSON and the command line. The relay's behaviour over loopback is tested in
// wan_relay_test.cc, linked into the same wan_test binary.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "link_model.h"
#include "rpc_record_parser.h"
#include "wan_options.h"
#include "wan_stats.h"

namespace nfsedge::wan {
namespace {

constexpr int64_t kMs = kNanosPerMilli;

// ---------------------------------------------------------------------------------------------
// RPC message helpers.

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string Call(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc, size_t body = 16) {
  return Be32(xid) + Be32(kRpcCall) + Be32(2) + Be32(prog) + Be32(vers) + Be32(proc) +
         std::string(body, 'b');
}

std::string Reply(uint32_t xid, size_t body = 16) {
  return Be32(xid) + Be32(kRpcReply) + std::string(body, 'r');
}

// Frames `msg` as one record whose fragments have the given sizes (the last one takes the rest).
std::string Record(const std::string& msg, std::vector<size_t> sizes = {}) {
  std::string out;
  size_t pos = 0;
  for (size_t i = 0; i <= sizes.size(); ++i) {
    bool last = i == sizes.size();
    size_t n = last ? msg.size() - pos : std::min(sizes[i], msg.size() - pos);
    out += Be32(static_cast<uint32_t>(n) | (last ? 0x80000000u : 0)) + msg.substr(pos, n);
    pos += n;
  }
  return out;
}

LinkConfig Link(double delay_ms, uint64_t rate_bps = 0, uint64_t queue_bytes = 256 * 1024) {
  LinkConfig c;
  c.delay_nanos = static_cast<int64_t>(delay_ms * kMs);
  c.rate_bps = rate_bps;
  c.queue_bytes = queue_bytes;
  return c;
}

// ---------------------------------------------------------------------------------------------
// LinkModel: pure timing arithmetic.

TEST(LinkModelTest, DelayOnlyLinkPipelines) {
  LinkModel model(Link(50));
  EXPECT_EQ(model.Admit(0, 100), 50 * kMs);
  EXPECT_EQ(model.Admit(5 * kMs, 1 << 20), 55 * kMs);  // Not queued behind the first chunk.
  EXPECT_FALSE(model.QueueFull(5 * kMs));
  EXPECT_EQ(model.BacklogBytes(5 * kMs), 0u);
}

TEST(LinkModelTest, RateSerializesInArrivalOrder) {
  LinkModel model(Link(10, 8'000'000));  // 1 byte per microsecond.
  EXPECT_EQ(model.Admit(0, 1000), 1 * kMs + 10 * kMs);
  EXPECT_EQ(model.Admit(0, 1000), 2 * kMs + 10 * kMs);                   // Behind the first.
  EXPECT_EQ(model.Admit(20 * kMs, 500), 20 * kMs + kMs / 2 + 10 * kMs);  // Link idle again.
}

TEST(LinkModelTest, QueueFullUntilDrainTime) {
  LinkModel model(Link(0, 8'000'000, 2000));
  model.Admit(0, 3000);
  EXPECT_EQ(model.BacklogBytes(0), 3000u);
  EXPECT_TRUE(model.QueueFull(0));
  EXPECT_EQ(model.QueueDrainTime(), 1 * kMs);
  EXPECT_TRUE(model.QueueFull(1 * kMs - 1));
  EXPECT_FALSE(model.QueueFull(1 * kMs));
  EXPECT_EQ(model.BacklogBytes(1 * kMs), 2000u);
  EXPECT_EQ(model.BacklogBytes(5 * kMs), 0u);
}

TEST(LinkModelTest, SegmentIsAboutOneMillisecond) {
  EXPECT_EQ(LinkModel(Link(0, 8'000'000)).SegmentBytes(), 1500u);
  EXPECT_EQ(LinkModel(Link(0, 800'000'000)).SegmentBytes(), 100'000u);
}

// ---------------------------------------------------------------------------------------------
// (e) RpcRecordParser, fed byte by byte.

struct Collected {
  std::vector<RpcMessageHeader> messages;
  RpcRecordParser::MessageFn Fn() {
    return [this](const RpcMessageHeader& h) { messages.push_back(h); };
  }
};

void FeedByteByByte(RpcRecordParser* parser, const std::string& stream) {
  for (char c : stream) {
    uint8_t b = static_cast<uint8_t>(c);
    parser->Feed(&b, 1);
  }
}

TEST(RpcRecordParserTest, SplitAndMultiFragmentRecordsByteByByte) {
  Collected got;
  RpcRecordParser parser(got.Fn());
  std::string stream = Record(Call(1, 100003, 3, 1)) +                     // GETATTR, one fragment.
                       Record(Call(2, 100003, 3, 7, 5000), {100, 3000}) +  // WRITE, 3 fragments.
                       Record(Call(3, 100005, 3, 1), {3, 5, 10}) +         // MNT, header split.
                       Record(Reply(4)) + Record(Call(5, 100003, 3, 1), {0, 24});
  FeedByteByByte(&parser, stream);
  EXPECT_FALSE(parser.failed());
  EXPECT_EQ(parser.malformed_records(), 0u);
  ASSERT_EQ(got.messages.size(), 5u);
  EXPECT_EQ(got.messages[0].xid, 1u);
  EXPECT_EQ(got.messages[0].proc, 1u);
  EXPECT_EQ(got.messages[1].xid, 2u);
  EXPECT_EQ(got.messages[1].prog, 100003u);
  EXPECT_EQ(got.messages[1].proc, 7u);
  EXPECT_EQ(got.messages[2].prog, 100005u);
  EXPECT_EQ(got.messages[2].vers, 3u);
  EXPECT_EQ(got.messages[2].proc, 1u);
  EXPECT_EQ(got.messages[3].msg_type, kRpcReply);
  EXPECT_EQ(got.messages[3].xid, 4u);
  EXPECT_EQ(got.messages[4].xid, 5u);
}

TEST(RpcRecordParserTest, WholeStreamAtOnceMatchesByteByByte) {
  Collected got;
  RpcRecordParser parser(got.Fn());
  std::string stream;
  for (uint32_t i = 0; i < 22; ++i) stream += Record(Call(i, 100003, 3, i, i * 7), {9});
  parser.Feed(reinterpret_cast<const uint8_t*>(stream.data()), stream.size());
  ASSERT_EQ(got.messages.size(), 22u);
  for (uint32_t i = 0; i < 22; ++i) EXPECT_EQ(got.messages[i].proc, i);
}

TEST(RpcRecordParserTest, NonRpcStreamIsGivenUpWithoutCrashing) {
  Collected http;
  RpcRecordParser parser(http.Fn());
  FeedByteByByte(&parser, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");  // Fragment length ~1.2 GB.
  EXPECT_TRUE(parser.failed());
  EXPECT_TRUE(http.messages.empty());

  Collected odd;
  RpcRecordParser odd_parser(odd.Fn());
  FeedByteByByte(&odd_parser, Record(Be32(9) + Be32(7) + std::string(30, 'z')));
  EXPECT_TRUE(odd_parser.failed());  // msg_type 7.
  EXPECT_TRUE(odd.messages.empty());
}

TEST(RpcRecordParserTest, ShortAndWrongVersionCallsAreMalformed) {
  Collected got;
  RpcRecordParser parser(got.Fn());
  FeedByteByByte(&parser,
                 Record(Call(1, 100003, 3, 1).substr(0, 12)) +
                     Record(Be32(2) + Be32(0) + Be32(3) + Be32(100003) + Be32(3) + Be32(1)) +
                     Record(Call(3, 100003, 3, 4)));
  EXPECT_FALSE(parser.failed());
  EXPECT_EQ(parser.malformed_records(), 2u);
  ASSERT_EQ(got.messages.size(), 1u);
  EXPECT_EQ(got.messages[0].xid, 3u);
}

// ---------------------------------------------------------------------------------------------
// Stats and options.

TEST(WanStatsTest, JsonByNumberAndName) {
  WanStats stats;
  stats.up_bytes = 10;
  stats.replies = 3;
  RpcMessageHeader h;
  h.prog = 100003, h.vers = 3, h.proc = 1;
  stats.CountCall(h);
  stats.CountCall(h);
  h.prog = 100005, h.proc = 1;
  stats.CountCall(h);
  std::string json = StatsToJson(stats);
  EXPECT_NE(json.find("\"up_bytes\":10"), std::string::npos) << json;
  EXPECT_NE(json.find("\"calls\":{\"100003\":{\"1\":2},\"100005\":{\"1\":1}}"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"NFS3.GETATTR\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"MOUNT3.MNT\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"replies\":3"), std::string::npos) << json;
}

TEST(WanOptionsTest, ParsesAndValidates) {
  StatusOr<WanOptions> o = ParseWanArgs(
      {"--map", "127.0.0.1:0=127.0.0.1:2049", "--map=127.0.0.1:0=127.0.0.1:7,rpc=0",
       "--up-delay-ms", "10", "--delay-ms", "25", "--rate-bps", "2000000", "--duration", "5"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o.value().relay.up.delay_nanos, 10 * kMs);
  EXPECT_EQ(o.value().relay.down.delay_nanos, 25 * kMs);
  EXPECT_EQ(o.value().relay.down.rate_bps, 2000000u);
  EXPECT_TRUE(o.value().relay.mappings[0].rpc);
  EXPECT_FALSE(o.value().relay.mappings[1].rpc);

  EXPECT_FALSE(ParseWanArgs({"--map", "127.0.0.1:0=127.0.0.1:2049"}).ok());  // No --duration.
  EXPECT_FALSE(ParseWanArgs({"--map", "0.0.0.0:0=127.0.0.1:1", "--duration", "1"}).ok());
  EXPECT_FALSE(ParseWanArgs({"--map", "[::]:0=127.0.0.1:1", "--duration", "1"}).ok());
  EXPECT_FALSE(ParseWanArgs({"--map", "127.0.0.1:0=127.0.0.1:0", "--duration", "1"}).ok());
  EXPECT_FALSE(ParseWanArgs({"--map", "127.0.0.1:0=127.0.0.1:1", "--duration", "-1"}).ok());
}

}  // namespace
}  // namespace nfsedge::wan
