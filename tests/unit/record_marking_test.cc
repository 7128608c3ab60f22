#include "rpc/record_marking.h"

#include <event2/buffer.h>
#include <gtest/gtest.h>

#include "rpc/xdr_codec.h"

namespace nfsedge {
namespace {

std::string Fragment(std::string_view data, bool last) {
  std::string out(4, '\0');
  StoreBE32(out.data(), (last ? kLastFragment : 0) | static_cast<uint32_t>(data.size()));
  out.append(data);
  return out;
}

TEST(RecordMarking, EncodeIsOneLastFragment) {
  std::string r = EncodeRecord("abcd");
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(LoadBE32(r.data()), kLastFragment | 4u);
  EXPECT_EQ(r.substr(4), "abcd");
  EXPECT_EQ(EncodeRecord("ab", "cd"), r) << "a head and a body: one record";
}

TEST(RecordMarking, SplitAcrossReadsByteByByte) {
  RecordReader reader(1024);
  std::string stream = EncodeRecord("hello world");
  std::string in, record;
  for (size_t i = 0; i + 1 < stream.size(); ++i) {
    in.push_back(stream[i]);
    ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kNeedMore) << i;
  }
  in.push_back(stream.back());
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "hello world");
  EXPECT_TRUE(in.empty());
}

TEST(RecordMarking, JoinedRecordsComeOutOneAtATime) {
  RecordReader reader(1024);
  std::string in = EncodeRecord("one") + EncodeRecord("two") + EncodeRecord("three");
  std::string record;
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "one");
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "two");
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "three");
  EXPECT_EQ(reader.Next(&in, &record), RecordReader::Result::kNeedMore);
}

TEST(RecordMarking, MultiFragmentRecordIsReassembled) {
  RecordReader reader(1024);
  std::string in = Fragment("abc", false) + Fragment("", false) + Fragment("defg", false) +
                   Fragment("h", true) + EncodeRecord("next");
  std::string record;
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "abcdefgh");
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "next");
}

TEST(RecordMarking, TooLargeSingleFragmentIsRefusedBeforeItArrives) {
  RecordReader reader(100);
  std::string in(4, '\0');
  StoreBE32(in.data(), kLastFragment | 101u);  // only the mark has arrived
  std::string record;
  EXPECT_EQ(reader.Next(&in, &record), RecordReader::Result::kTooLarge);
}

TEST(RecordMarking, TooLargeAcrossFragmentsIsRefused) {
  RecordReader reader(100);
  std::string in = Fragment(std::string(60, 'x'), false) + Fragment(std::string(60, 'y'), true);
  std::string record;
  EXPECT_EQ(reader.Next(&in, &record), RecordReader::Result::kTooLarge);
}

TEST(RecordMarking, ExactlyMaxIsAccepted) {
  RecordReader reader(100);
  std::string in = Fragment(std::string(50, 'x'), false) + Fragment(std::string(50, 'y'), true);
  std::string record;
  ASSERT_EQ(reader.Next(&in, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record.size(), 100u);
}

TEST(RecordMarking, EvbufferSourceBehavesTheSame) {
  RecordReader reader(1024);
  evbuffer* buf = evbuffer_new();
  std::string stream = Fragment("ab", false) + Fragment("cd", true) + EncodeRecord("x");
  evbuffer_add(buf, stream.data(), 5);  // mark + one byte
  std::string record;
  EXPECT_EQ(reader.Next(buf, &record), RecordReader::Result::kNeedMore);
  evbuffer_add(buf, stream.data() + 5, stream.size() - 5);
  ASSERT_EQ(reader.Next(buf, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "abcd");
  ASSERT_EQ(reader.Next(buf, &record), RecordReader::Result::kRecord);
  EXPECT_EQ(record, "x");
  EXPECT_EQ(evbuffer_get_length(buf), 0u);
  evbuffer_free(buf);
}

}  // namespace
}  // namespace nfsedge
