#include "harness/rpcbind.h"

namespace nfsedge::harness {

StatusOr<std::unique_ptr<Rpcbind>> Rpcbind::Start(const Options& options) {
  if (TcpConnectable("127.0.0.1", kPort)) {
    return Status::Error("port 111 is already in use: call PrivateNetwork::Enter() first");
  }
  // -f: foreground. No -w: a warm start would read another run's state.
  auto p = Subprocess::Start({options.binary, "-f"}, options.log_path);
  if (!p.ok()) return p.status();
  std::unique_ptr<Subprocess> process = std::move(p).value();
  bool died = false;
  bool up = WaitUntil(
      [&] {
        if (!process->IsRunning()) return died = true;
        return TcpConnectable("127.0.0.1", kPort);
      },
      options.start_timeout);
  if (!up || died) {
    std::string why = died ? "rpcbind exited: " + process->Stop().ToString()
                           : "rpcbind did not listen on port 111 in time";
    return Status::Error(why + "\n" + process->LogTail());
  }
  return std::unique_ptr<Rpcbind>(new Rpcbind(std::move(process)));
}

}  // namespace nfsedge::harness
