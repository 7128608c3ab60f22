#include "proxy/dispatcher.h"

namespace nfsedge {

void Dispatcher::HandleCall(std::unique_ptr<IncomingCall> call) {
  const CallHeader& h = call->header();
  for (RpcProgram* p : programs_) {
    if (p->program() != h.prog) continue;
    if (h.vers < p->min_version() || h.vers > p->version()) {
      stats_.prog_mismatch++;
      call->ReplyAccepted(kProgMismatch, p->min_version(), p->version());
      return;
    }
    if (h.proc >= p->proc_count()) {
      stats_.proc_unavail++;
      call->ReplyAccepted(kProcUnavail);
      return;
    }
    p->Handle(std::move(call));
    return;
  }
  stats_.prog_unavail++;
  call->ReplyAccepted(kProgUnavail);
}

}  // namespace nfsedge
