// ReadMore and TuneSocketBufferevent: large reads and writes on a socket
// bufferevent, nothing on a filter one, end of file left to the bufferevent.
// NewPreciseEventBase and Timer: the loop's clock is finer than the coarse
// one, and a timer armed late in a loop turn counts from when it was armed.
#include "rpc/event_loop.h"

#include <event2/buffer.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace nfsedge {
namespace {

// Runs `bev`'s loop until its event callback runs (5 s at most); returns
// the events it reported (0: none).
short NextEvents(bufferevent* bev) {
  short seen = 0;
  bufferevent_setcb(
      bev, nullptr, nullptr,
      [](bufferevent* b, short what, void* arg) {
        *static_cast<short*>(arg) |= what;
        event_base_loopbreak(bufferevent_get_base(b));
      },
      &seen);
  timeval tv{5, 0};
  event_base_loopexit(bufferevent_get_base(bev), &tv);
  event_base_dispatch(bufferevent_get_base(bev));
  return seen;
}

class ReadMoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0);
    int size = 4 << 20;
    setsockopt(fds_[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    setsockopt(fds_[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
    evutil_make_socket_nonblocking(fds_[0]);
    evutil_make_socket_nonblocking(fds_[1]);
    bev_.reset(bufferevent_socket_new(base_.get(), fds_[0], BEV_OPT_CLOSE_ON_FREE));
    bufferevent_enable(bev_.get(), EV_READ);
  }
  void TearDown() override {
    bev_.reset();
    if (fds_[1] >= 0) close(fds_[1]);
  }

  // Writes up to `n` bytes of a pattern into the peer end; returns them.
  std::string Send(size_t n) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; i++) bytes[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    size_t sent = 0;
    while (sent < n) {
      ssize_t w = write(fds_[1], bytes.data() + sent, n - sent);
      if (w <= 0) break;
      sent += static_cast<size_t>(w);
    }
    bytes.resize(sent);
    return bytes;
  }

  // Returns true iff the input is frozen at the end again, as libevent
  // keeps it outside its own reads.
  bool InputFrozen() { return evbuffer_add(bufferevent_get_input(bev_.get()), "x", 1) != 0; }

  std::string Input() {
    evbuffer* in = bufferevent_get_input(bev_.get());
    std::string out(evbuffer_get_length(in), '\0');
    evbuffer_copyout(in, out.data(), out.size());
    return out;
  }

  EventBasePtr base_{event_base_new()};
  int fds_[2] = {-1, -1};
  BuffereventPtr bev_;
};

TEST_F(ReadMoreTest, ReadsWhatTheSocketHoldsInOneCall) {
  const std::string sent = Send(600 * 1024);
  ASSERT_GT(sent.size(), 8 * 4096u) << "the socket pair took too little to tell";
  EXPECT_EQ(ReadMore(bev_.get(), 4 << 20), sent.size());
  EXPECT_TRUE(InputFrozen());
  EXPECT_TRUE(Input() == sent);
  EXPECT_EQ(ReadMore(bev_.get(), 4 << 20), 0u) << "drained";
}

TEST_F(ReadMoreTest, StopsAtTheLimitAndKeepsTheRestInTheSocket) {
  const std::string sent = Send(100000);
  ASSERT_EQ(sent.size(), 100000u);
  EXPECT_EQ(ReadMore(bev_.get(), 30000), 30000u);
  EXPECT_TRUE(InputFrozen());
  EXPECT_TRUE(Input() == sent.substr(0, 30000));
  EXPECT_EQ(ReadMore(bev_.get(), 30000), 0u) << "the input already holds the limit";
  EXPECT_EQ(ReadMore(bev_.get(), 200000), 70000u);
  EXPECT_TRUE(Input() == sent);
}

TEST_F(ReadMoreTest, ReadsNothingWhileReadingIsDisabled) {
  Send(10000);
  bufferevent_disable(bev_.get(), EV_READ);
  EXPECT_EQ(ReadMore(bev_.get(), 1 << 20), 0u);
  EXPECT_EQ(evbuffer_get_length(bufferevent_get_input(bev_.get())), 0u);
}

TEST_F(ReadMoreTest, LeavesEndOfFileToTheBufferevent) {
  const std::string sent = Send(50000);
  close(fds_[1]);
  fds_[1] = -1;
  EXPECT_EQ(ReadMore(bev_.get(), 1 << 20), sent.size());
  const short seen = NextEvents(bev_.get());
  EXPECT_TRUE(seen & BEV_EVENT_EOF) << "events " << seen;
  EXPECT_TRUE(Input() == sent);
}

// A reset behind the data: the data is read, the error stays for the
// bufferevent (read, it would be gone, and the bufferevent would report a
// clean end of file).
TEST(ReadMoreTcpTest, LeavesAResetBehindTheDataToTheBufferevent) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int size = 4 << 20;  // room for all of it in flight
  setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int peer = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(peer, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  ASSERT_EQ(connect(peer, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int ours = accept(listener, nullptr, nullptr);
  ASSERT_GE(ours, 0);
  close(listener);
  evutil_make_socket_nonblocking(ours);
  // Exactly one read's worth: a reader that reads until a short read would
  // make one more, and meet the reset.
  const std::string sent(kSocketIoChunk, 'r');
  ASSERT_EQ(write(peer, sent.data(), sent.size()), static_cast<ssize_t>(sent.size()));
  linger hard{1, 0};
  setsockopt(peer, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
  close(peer);  // a reset
  usleep(100 * 1000);

  EventBasePtr base(event_base_new());
  BuffereventPtr bev(bufferevent_socket_new(base.get(), ours, BEV_OPT_CLOSE_ON_FREE));
  bufferevent_enable(bev.get(), EV_READ);
  EXPECT_EQ(ReadMore(bev.get(), 1 << 20), sent.size());
  const short seen = NextEvents(bev.get());
  EXPECT_TRUE(seen & BEV_EVENT_ERROR) << "events " << seen;
  EXPECT_EQ(evbuffer_get_length(bufferevent_get_input(bev.get())), sent.size());
}

TEST_F(ReadMoreTest, AFilterBuffereventIsLeftAlone) {
  Send(50000);
  bufferevent* filter = bufferevent_filter_new(bev_.get(), nullptr, nullptr, 0, nullptr, nullptr);
  ASSERT_NE(filter, nullptr);
  bufferevent_enable(filter, EV_READ);
  EXPECT_EQ(ReadMore(filter, 1 << 20), 0u);
  const ev_ssize_t before = bufferevent_get_max_single_write(filter);
  TuneSocketBufferevent(filter);
  EXPECT_EQ(bufferevent_get_max_single_write(filter), before);
  bufferevent_free(filter);
}

TEST_F(ReadMoreTest, TuningRaisesTheWriteSize) {
  EXPECT_LT(bufferevent_get_max_single_write(bev_.get()), static_cast<ev_ssize_t>(kSocketIoChunk));
  TuneSocketBufferevent(bev_.get());
  EXPECT_EQ(bufferevent_get_max_single_write(bev_.get()), static_cast<ev_ssize_t>(kSocketIoChunk));
  // A client's bufferevent gets its socket only at bufferevent_socket_connect.
  BuffereventPtr unconnected(bufferevent_socket_new(base_.get(), -1, BEV_OPT_CLOSE_ON_FREE));
  TuneSocketBufferevent(unconnected.get());
  EXPECT_EQ(bufferevent_get_max_single_write(unconnected.get()),
            static_cast<ev_ssize_t>(kSocketIoChunk));
  EXPECT_EQ(ReadMore(unconnected.get(), 1 << 20), 0u);
}

void BusyWait(Duration d) {
  const auto until = SteadyClock::now() + d;
  while (SteadyClock::now() < until) {
  }
}

// Runs `fn` once from inside `base`'s loop (the loop's cached time is only
// kept while it runs), then returns when the loop has nothing left.
void RunInLoop(event_base* base, std::function<void()> fn) {
  auto run = [](evutil_socket_t, short, void* arg) { (*static_cast<std::function<void()>*>(arg))(); };
  timeval now{0, 0};
  ASSERT_EQ(event_base_once(base, -1, EV_TIMEOUT, run, &fn, &now), 0);
  event_base_dispatch(base);
}

// The coarse monotonic clock ticks every 1-10 ms (4 ms on a 250 Hz kernel);
// read 1 ms apart, it mostly shows no time passed. The precise base's clock
// shows every millisecond, so its timers are not late by a tick.
TEST(PreciseEventBaseTest, ItsClockShowsEveryMillisecond) {
  EventBasePtr base = NewPreciseEventBase();
  ASSERT_NE(base, nullptr);
  std::vector<int64_t> seen_us;
  RunInLoop(base.get(), [&] {
    for (int i = 0; i < 6; ++i) {
      timeval a{}, b{};
      event_base_update_cache_time(base.get());
      event_base_gettimeofday_cached(base.get(), &a);
      BusyWait(std::chrono::milliseconds(1));
      event_base_update_cache_time(base.get());
      event_base_gettimeofday_cached(base.get(), &b);
      seen_us.push_back((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_usec - a.tv_usec));
    }
  });
  ASSERT_EQ(seen_us.size(), 6u);
  for (int64_t us : seen_us) EXPECT_GE(us, 1000) << "a millisecond passed";
}

// A callback that ran a while, then armed timers: libevent counts a
// relative timeout from the loop turn's cached time, so the loop, woken by
// the short timer (due already by that time), would run the long one early
// too, by the callback's time.
TEST(TimerTest, CountsFromWhenItWasArmed) {
  EventBasePtr base = NewPreciseEventBase();
  ASSERT_NE(base, nullptr);
  SteadyClock::time_point armed, fired, short_fired;
  Timer timer(base.get(), [&] { fired = SteadyClock::now(); });
  Timer short_timer(base.get(), [&] { short_fired = SteadyClock::now(); });
  RunInLoop(base.get(), [&] {
    BusyWait(std::chrono::milliseconds(20));
    armed = SteadyClock::now();
    timer.Arm(std::chrono::milliseconds(10));
    short_timer.Arm(std::chrono::milliseconds(3));
  });
  ASSERT_NE(fired, SteadyClock::time_point{}) << "the timer fired";
  ASSERT_NE(short_fired, SteadyClock::time_point{}) << "the short timer fired";
  EXPECT_GE(short_fired - armed, std::chrono::milliseconds(3));
  EXPECT_GE(fired - armed, std::chrono::milliseconds(10));
}

}  // namespace
}  // namespace nfsedge
