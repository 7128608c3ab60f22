// Test helpers: an event loop on its own thread, a blocking RPC client over
// a real loopback socket, and an in-memory upstream (RpcCaller) whose
// answers a test scripts.
//
// Thread-safety: LoopThread::RunSync may be called from any thread; the
// FakeUpstream is used on the loop thread only (tests reach it by RunSync).
#ifndef NFSEDGE_TESTS_UNIT_TEST_LOOP_H_
#define NFSEDGE_TESTS_UNIT_TEST_LOOP_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rpc/event_loop.h"
#include "rpc/rpc_caller.h"
#include "rpc/rpc_message.h"

namespace nfsedge {

class LoopThread {
 public:
  LoopThread();
  ~LoopThread();
  event_base* base() { return base_.get(); }
  void Start();
  // Runs `fn` on the loop thread and returns once it ran.
  void RunSync(const std::function<void()>& fn);

 private:
  EventBasePtr base_;
  std::thread thread_;
};

class BlockingClient {
 public:
  // Connects to 127.0.0.1:`port`, from `source` (an IPv4 address) if given.
  explicit BlockingClient(uint16_t port, const std::string& source = "");
  ~BlockingClient();
  bool connected() const { return fd_ >= 0; }
  void SendRaw(const std::string& bytes);
  void SendRecord(const std::string& record);
  // Returns the next reply record iff one arrives within `timeout`.
  std::optional<std::string> ReadRecord(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Returns true iff the server closes the connection within `timeout`;
  // what it sends meanwhile is appended to `*received` if given.
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                  std::string* received = nullptr);

 private:
  int fd_ = -1;
  std::string buffer_;
};

// Returns a CALL record for (prog, vers, proc) with `cred` and `args`.
std::string MakeCall(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                     const std::string& args, OpaqueAuth cred = {});
// Returns an AUTH_SYS credential for uid/gid.
OpaqueAuth SysCred(uint32_t uid, uint32_t gid, std::vector<uint32_t> gids = {});

// An upstream that records calls and answers them as the test says.
class FakeUpstream : public RpcCaller {
 public:
  struct Seen {
    uint32_t prog, vers, proc;
    OpaqueAuth cred;
    std::string args;
    ReplyCallback done;
    // The bytes its reply was expected to carry (CallExpecting), if told.
    std::optional<uint64_t> expected_reply;
  };
  // Returns the results to answer with (after an accepted SUCCESS header),
  // or nullopt to hold the call (the test answers it later with Answer()).
  using Responder = std::function<std::optional<std::string>(const Seen&)>;

  explicit FakeUpstream(event_base* base) : base_(base) {}
  void set_responder(Responder r) { responder_ = std::move(r); }
  // Calls it returns a status for are answered accepted with that status
  // (PROC_UNAVAIL, GARBAGE_ARGS, ...) and no results, before the responder.
  using Refuser = std::function<std::optional<AcceptStat>(const Seen&)>;
  void set_refuser(Refuser r) { refuser_ = std::move(r); }
  void set_fail_with(std::optional<Status> s) { fail_with_ = std::move(s); }
  // Calls made while set (of procedure `only` if given) are refused at once
  // with `s` (as a full queue refuses them), neither recorded nor answered.
  void set_refuse_with(std::optional<Status> s, std::optional<uint32_t> only = std::nullopt) {
    refuse_with_ = std::move(s);
    refuse_only_ = only;
  }

  Status Call(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
              std::string_view args, ReplyCallback done) override;
  Status CallExpecting(uint32_t prog, uint32_t vers, uint32_t proc, const OpaqueAuth& cred,
                       std::string_view args, uint64_t expected_reply,
                       ReplyCallback done) override;
  // Answers held call `i` with `results` (SUCCESS) from the loop.
  void Answer(size_t i, const std::string& results);

  std::vector<Seen> calls;

 private:
  Status Take(Seen seen);
  void Deliver(ReplyCallback done, StatusOr<RpcReply> reply);
  event_base* base_;
  Responder responder_;
  Refuser refuser_;
  std::optional<Status> fail_with_;
  std::optional<Status> refuse_with_;
  std::optional<uint32_t> refuse_only_;
  uint32_t next_xid_ = 1000;
};

}  // namespace nfsedge

#endif  // NFSEDGE_TESTS_UNIT_TEST_LOOP_H_
