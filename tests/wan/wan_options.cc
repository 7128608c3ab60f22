#include "wan_options.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "clock.h"

namespace nfsedge::wan {

const char kWanUsage[] =
    "usage: nfsedge-wan --map LISTEN=TARGET[,rpc=0] [--map ...] --duration SECONDS [options]\n"
    "\n"
    "A TCP relay emulating one WAN bottleneck link between clients and servers.\n"
    "\n"
    "  --map H:P=H:P[,rpc=0]  listen on H:P (port 0: any free port; no wildcard address) and\n"
    "                         relay each connection to the target; rpc=0: do not parse ONC RPC\n"
    "  --duration S           exit after S seconds (required)\n"
    "  --delay-ms MS          one-way propagation delay each way (RTT = 2 x MS); default 0\n"
    "  --up-delay-ms MS       client-to-server delay;  --down-delay-ms MS: server-to-client\n"
    "  --rate-bps BPS         bottleneck rate each way in bit/s; 0 (default) = unlimited\n"
    "  --up-rate-bps BPS      client-to-server rate;   --down-rate-bps BPS: server-to-client\n"
    "  --queue-bytes N        bottleneck queue per direction (default 262144); when full the\n"
    "                         relay stops reading the senders (TCP back-pressure, no drops)\n"
    "  --up-queue-bytes N     client-to-server queue;  --down-queue-bytes N: server-to-client\n"
    "  --max-inflight-bytes N bound on bytes held per direction (default 67108864)\n"
    "  --stats FILE           write JSON stats to FILE at exit and on SIGUSR1\n"
    "  --capture-dir DIR      write the bytes each connection relays to DIR/session-N.up\n"
    "                         (client to server) and DIR/session-N.down; DIR must exist\n"
    "  --rt-priority N        run under SCHED_FIFO priority N (1-99, needs root) so that other\n"
    "                         busy processes do not delay releases; off by default\n"
    "\n"
    "Prints \"nfsedge-wan ready LISTEN=TARGET ...\" (actual ports) once listening.\n"
    "SIGTERM / SIGINT: write stats and exit 0.\n";

namespace {

struct HostPort {
  sockaddr_storage addr = {};
  socklen_t len = 0;
};

StatusOr<HostPort> Resolve(const std::string& spec, bool allow_port_zero) {
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("'" + spec + "' is not HOST:PORT");
  }
  std::string host = spec.substr(0, colon);
  const std::string port_text = spec.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  char* end = nullptr;
  errno = 0;
  unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || errno != 0 || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    return Status::InvalidArgument("bad port in '" + spec + "'");
  }
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return Status::InvalidArgument("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  HostPort out;
  std::memcpy(&out.addr, res->ai_addr, res->ai_addrlen);
  out.len = res->ai_addrlen;
  freeaddrinfo(res);
  if (out.addr.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(out.addr).sin_port = htons(static_cast<uint16_t>(port));
  } else if (out.addr.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6&>(out.addr).sin6_port = htons(static_cast<uint16_t>(port));
  } else {
    return Status::InvalidArgument("'" + host + "' is neither IPv4 nor IPv6");
  }
  return out;
}

StatusOr<double> ParseNonNegative(const std::string& name, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
    return Status::InvalidArgument(name + ": '" + text + "' is not a non-negative number");
  }
  return v;
}

StatusOr<uint64_t> ParseCount(const std::string& name, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0) {
    return Status::InvalidArgument(name + ": '" + text + "' is not a non-negative integer");
  }
  return static_cast<uint64_t>(v);
}

// One optional setting given in shared and per-direction forms.
template <typename T>
struct Directional {
  std::optional<T> both, up, down;
  T Up(T fallback) const { return up.value_or(both.value_or(fallback)); }
  T Down(T fallback) const { return down.value_or(both.value_or(fallback)); }
};

}  // namespace

StatusOr<Mapping> ParseMapping(const std::string& spec) {
  std::string rest = spec;
  Mapping m;
  const size_t comma = rest.find(',');
  if (comma != std::string::npos) {
    const std::string flag = rest.substr(comma + 1);
    rest = rest.substr(0, comma);
    if (flag == "rpc=0") {
      m.rpc = false;
    } else if (flag != "rpc=1") {
      return Status::InvalidArgument("--map " + spec + ": unknown flag '" + flag + "'");
    }
  }
  const size_t eq = rest.find('=');
  if (eq == std::string::npos) {
    return Status::InvalidArgument("--map " + spec + ": expected LISTEN=TARGET");
  }
  StatusOr<HostPort> listen = Resolve(rest.substr(0, eq), /*allow_port_zero=*/true);
  if (!listen.ok())
    return Status::InvalidArgument("--map " + spec + ": " + listen.status().message());
  StatusOr<HostPort> target = Resolve(rest.substr(eq + 1), /*allow_port_zero=*/false);
  if (!target.ok())
    return Status::InvalidArgument("--map " + spec + ": " + target.status().message());
  m.listen = listen.value().addr;
  m.listen_len = listen.value().len;
  m.target = target.value().addr;
  m.target_len = target.value().len;
  m.target_name = rest.substr(eq + 1);
  return m;
}

StatusOr<WanOptions> ParseWanArgs(const std::vector<std::string>& args) {
  WanOptions options;
  Directional<double> delay_ms;
  Directional<uint64_t> rate, queue;
  std::optional<uint64_t> max_in_flight;
  std::optional<double> duration;
  std::optional<uint64_t> rt_priority;

  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    if (name == "--help" || name == "-h") {
      options.help = true;
      return options;
    }
    std::optional<std::string> value;
    if (size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    }
    if (!value) return Status::InvalidArgument(name + " needs a value");

    auto number = [&](std::optional<double>* out) -> Status {
      StatusOr<double> v = ParseNonNegative(name, *value);
      if (v.ok()) *out = v.value();
      return v.status();
    };
    auto count = [&](std::optional<uint64_t>* out) -> Status {
      StatusOr<uint64_t> v = ParseCount(name, *value);
      if (v.ok()) *out = v.value();
      return v.status();
    };
    Status status;
    if (name == "--map") {
      StatusOr<Mapping> m = ParseMapping(*value);
      if (!m.ok()) return m.status();
      options.relay.mappings.push_back(std::move(m).value());
    } else if (name == "--duration") {
      status = number(&duration);
    } else if (name == "--stats") {
      options.stats_path = *value;
    } else if (name == "--capture-dir") {
      options.relay.capture_dir = *value;
    } else if (name == "--delay-ms") {
      status = number(&delay_ms.both);
    } else if (name == "--up-delay-ms") {
      status = number(&delay_ms.up);
    } else if (name == "--down-delay-ms") {
      status = number(&delay_ms.down);
    } else if (name == "--rate-bps") {
      status = count(&rate.both);
    } else if (name == "--up-rate-bps") {
      status = count(&rate.up);
    } else if (name == "--down-rate-bps") {
      status = count(&rate.down);
    } else if (name == "--queue-bytes") {
      status = count(&queue.both);
    } else if (name == "--up-queue-bytes") {
      status = count(&queue.up);
    } else if (name == "--down-queue-bytes") {
      status = count(&queue.down);
    } else if (name == "--rt-priority") {
      status = count(&rt_priority);
    } else if (name == "--max-inflight-bytes") {
      status = count(&max_in_flight);
    } else {
      return Status::InvalidArgument("unknown option " + name);
    }
    if (!status.ok()) return status;
  }

  constexpr double kMaxDurationSeconds = 30 * 24 * 3600;
  if (!duration || *duration <= 0 || *duration > kMaxDurationSeconds) {
    return Status::InvalidArgument("--duration SECONDS (> 0, at most 30 days) is required");
  }
  options.duration_seconds = *duration;
  if (rt_priority.value_or(0) > 99) return Status::InvalidArgument("--rt-priority must be 0-99");
  options.rt_priority = static_cast<int>(rt_priority.value_or(0));
  constexpr double kMaxDelayMs = 3600.0 * 1000;
  if (delay_ms.Up(0) > kMaxDelayMs || delay_ms.Down(0) > kMaxDelayMs) {
    return Status::InvalidArgument("delays must be at most 3600000 ms");
  }
  LinkConfig defaults;
  LinkConfig& up = options.relay.up;
  LinkConfig& down = options.relay.down;
  up.delay_nanos = std::llround(delay_ms.Up(0) * kNanosPerMilli);
  down.delay_nanos = std::llround(delay_ms.Down(0) * kNanosPerMilli);
  up.rate_bps = rate.Up(0);
  down.rate_bps = rate.Down(0);
  up.queue_bytes = queue.Up(defaults.queue_bytes);
  down.queue_bytes = queue.Down(defaults.queue_bytes);
  up.max_in_flight_bytes = down.max_in_flight_bytes =
      max_in_flight.value_or(defaults.max_in_flight_bytes);
  if (Status s = options.relay.Validate(); !s.ok()) return s;
  return options;
}

}  // namespace nfsedge::wan
