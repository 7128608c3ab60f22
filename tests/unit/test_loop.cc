#include "test_loop.h"

#include <arpa/inet.h>
#include <event2/thread.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>

#include "rpc/auth_sys.h"
#include "rpc/record_marking.h"
#include "rpc/xdr_codec.h"

namespace nfsedge {

namespace {
event_base* NewThreadSafeBase() {
  static const int kInit = evthread_use_pthreads();
  (void)kInit;
  return event_base_new();
}
}  // namespace

LoopThread::LoopThread() : base_(NewThreadSafeBase()) {}

LoopThread::~LoopThread() {
  if (thread_.joinable()) {
    event_base_loopbreak(base_.get());
    thread_.join();
  }
}

void LoopThread::Start() {
  thread_ = std::thread([this] { event_base_loop(base_.get(), EVLOOP_NO_EXIT_ON_EMPTY); });
}

void LoopThread::RunSync(const std::function<void()>& fn) {
  if (!thread_.joinable()) {
    fn();
    return;
  }
  std::promise<void> done;
  struct Arg {
    const std::function<void()>* fn;
    std::promise<void>* done;
  } arg{&fn, &done};
  timeval zero{0, 0};
  event_base_once(
      base_.get(), -1, EV_TIMEOUT,
      [](evutil_socket_t, short, void* p) {
        auto* a = static_cast<Arg*>(p);
        (*a->fn)();
        a->done->set_value();
      },
      &arg, &zero);
  done.get_future().wait();
}

BlockingClient::BlockingClient(uint16_t port, const std::string& source) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      close(fd_);
      fd_ = -1;
      return;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

BlockingClient::~BlockingClient() {
  if (fd_ >= 0) close(fd_);
}

void BlockingClient::SendRaw(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += n;
  }
}

void BlockingClient::SendRecord(const std::string& record) { SendRaw(EncodeRecord(record)); }

std::optional<std::string> BlockingClient::ReadRecord(std::chrono::milliseconds timeout) {
  RecordReader reader(64 << 20);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string record;
    if (reader.Next(&buffer_, &record) == RecordReader::Result::kRecord) return record;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return std::nullopt;
    buffer_.append(buf, n);
  }
}

bool BlockingClient::WaitClosed(std::chrono::milliseconds timeout, std::string* received) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return true;
    if (received != nullptr) received->append(buf, static_cast<size_t>(n));
  }
}

std::string MakeCall(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                     const std::string& args, OpaqueAuth cred) {
  CallHeader h;
  h.xid = xid;
  h.prog = prog;
  h.vers = vers;
  h.proc = proc;
  h.cred = std::move(cred);
  return EncodeCallHeader(h) + args;
}

OpaqueAuth SysCred(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids) {
  return OpaqueAuth{kAuthSys, EncodeAuthSys(AuthSys{7, "testhost", uid, gid, std::move(gids)})};
}

Status FakeUpstream::Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
                          std::string_view args, ReplyCallback done) {
  return Take(Seen{prog, vers, proc, cred, std::string(args), std::move(done), std::nullopt});
}

Status FakeUpstream::CallExpecting(uint32_t prog, uint32_t vers, uint32_t proc,
                                   const OpaqueAuth& cred, std::string_view args,
                                   uint64_t expected_reply, ReplyCallback done) {
  return Take(Seen{prog, vers, proc, cred, std::string(args), std::move(done), expected_reply});
}

Status FakeUpstream::Take(Seen seen) {
  if (refuse_with_ && (!refuse_only_ || *refuse_only_ == seen.proc)) return *refuse_with_;
  ReplyCallback done = seen.done;
  calls.push_back(std::move(seen));
  if (fail_with_) {
    Deliver(std::move(done), *fail_with_);
    return Status::Ok();
  }
  if (std::optional<AcceptStat> stat = refuser_ ? refuser_(calls.back()) : std::nullopt) {
    std::string record = EncodeAcceptedReply(next_xid_++, *stat);
    StatusOr<ReplyHeader> h = ParseReply(record);
    Deliver(std::move(done), RpcReply{*h, record});
    return Status::Ok();
  }
  std::optional<std::string> results = responder_ ? responder_(calls.back()) : std::nullopt;
  if (results) Answer(calls.size() - 1, *results);
  return Status::Ok();
}

void FakeUpstream::Answer(size_t i, const std::string& results) {
  std::string record = EncodeAcceptedReply(next_xid_++, kSuccess) + results;
  StatusOr<ReplyHeader> h = ParseReply(record);
  Deliver(calls[i].done, RpcReply{*h, record});
}

void FakeUpstream::Deliver(ReplyCallback done, StatusOr<RpcReply> reply) {
  // Never from inside Call(): on the next loop iteration.
  struct Arg {
    ReplyCallback done;
    StatusOr<RpcReply> reply;
  };
  auto* arg = new Arg{std::move(done), std::move(reply)};
  timeval zero{0, 0};
  event_base_once(
      base_, -1, EV_TIMEOUT,
      [](evutil_socket_t, short, void* p) {
        std::unique_ptr<Arg> a(static_cast<Arg*>(p));
        a->done(std::move(a->reply));
      },
      arg, &zero);
}

}  // namespace nfsedge
