#include "libevent_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "clock.h"

namespace nfsedge::wan {

StatusOr<UniqueEventBase> NewPreciseEventBase() {
  event_config* cfg = event_config_new();
  if (cfg == nullptr) return Status::IOError("event_config_new failed");
  event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
  UniqueEventBase base(event_base_new_with_config(cfg));
  event_config_free(cfg);
  if (base == nullptr) return Status::IOError("event_base_new_with_config failed");
  return base;
}

void ArmTimerNanos(event* ev, int64_t nanos) {
  int64_t micros = std::max<int64_t>(0, (nanos + kNanosPerMicro - 1) / kNanosPerMicro);
  timeval tv;
  tv.tv_sec = static_cast<time_t>(micros / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(micros % 1000000);
  // libevent measures the relative timeout from its cached loop time, which can be older than
  // now by the time spent in callbacks; refresh it so the timer is not armed early.
  event_base_update_cache_time(event_get_base(ev));
  evtimer_add(ev, &tv);
}

std::string SockaddrToString(const sockaddr* addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    return std::string(host) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

}  // namespace nfsedge::wan
