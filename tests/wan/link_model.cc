#include "link_model.h"

#include <algorithm>
#include <cmath>

#include "clock.h"

namespace nfsedge::wan {

namespace {

constexpr size_t kMinSegmentBytes = 1500;
// An hour: anything longer is a typo, and keeps nanosecond arithmetic far from overflow.
constexpr int64_t kMaxDelayNanos = 3600 * kNanosPerSecond;

}  // namespace

Status LinkConfig::Validate() const {
  if (delay_nanos < 0 || delay_nanos > kMaxDelayNanos) {
    return Status::InvalidArgument("delay must be between 0 and 3600 s");
  }
  if (rate_bps != 0 && rate_bps < 1000) {
    return Status::InvalidArgument("rate must be 0 (unlimited) or at least 1000 bit/s");
  }
  if (max_in_flight_bytes == 0) {
    return Status::InvalidArgument("max in-flight bytes must be positive");
  }
  return Status::OK();
}

LinkModel::LinkModel(const LinkConfig& config) : config_(config) {}

int64_t LinkModel::SerializationNanos(uint64_t bytes) const {
  if (config_.rate_bps == 0) return 0;
  long double nanos = static_cast<long double>(bytes) * 8.0L * kNanosPerSecond / config_.rate_bps;
  return static_cast<int64_t>(std::llround(nanos));
}

int64_t LinkModel::Admit(int64_t now, uint64_t bytes) {
  int64_t start = std::max(now, busy_until_);
  busy_until_ = start + SerializationNanos(bytes);
  return busy_until_ + config_.delay_nanos;
}

uint64_t LinkModel::BacklogBytes(int64_t now) const {
  if (config_.rate_bps == 0 || busy_until_ <= now) return 0;
  long double bytes =
      static_cast<long double>(busy_until_ - now) * config_.rate_bps / (8.0L * kNanosPerSecond);
  return static_cast<uint64_t>(std::llround(bytes));
}

bool LinkModel::QueueFull(int64_t now) const {
  if (config_.rate_bps == 0 || busy_until_ <= now) return false;
  // Decided on times rather than bytes so that QueueFull(QueueDrainTime()) is exactly false.
  return busy_until_ - now > SerializationNanos(config_.queue_bytes);
}

int64_t LinkModel::QueueDrainTime() const {
  if (config_.rate_bps == 0) return std::numeric_limits<int64_t>::min();
  return busy_until_ - SerializationNanos(config_.queue_bytes);
}

size_t LinkModel::SegmentBytes() const {
  if (config_.rate_bps == 0) return std::numeric_limits<size_t>::max();
  return std::max<size_t>(kMinSegmentBytes, config_.rate_bps / 8 / 1000);
}

}  // namespace nfsedge::wan
