#include "rpc/loop_poster.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace nfsedge {

StatusOr<std::unique_ptr<LoopPoster>> LoopPoster::Create(event_base* base) {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) return ErrnoError("eventfd", errno);
  std::unique_ptr<LoopPoster> p(new LoopPoster(fd));
  p->ev_.reset(event_new(base, fd, EV_READ | EV_PERSIST, &LoopPoster::OnWake, p.get()));
  if (!p->ev_ || event_add(p->ev_.get(), nullptr) != 0) {
    return IoError("cannot watch the poster's eventfd");
  }
  return p;
}

LoopPoster::LoopPoster(int fd) : fd_(fd) {}

LoopPoster::~LoopPoster() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    queue_.clear();
  }
  ev_.reset();
  close(fd_);
}

bool LoopPoster::Post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    queue_.push_back(std::move(fn));
  }
  uint64_t one = 1;
  // A full counter (never in practice) still leaves the fd readable.
  ssize_t n = write(fd_, &one, sizeof(one));
  (void)n;
  return true;
}

void LoopPoster::OnWake(evutil_socket_t fd, short, void* arg) {
  uint64_t count;
  ssize_t n = read(fd, &count, sizeof(count));
  (void)n;
  static_cast<LoopPoster*>(arg)->RunQueued();
}

void LoopPoster::RunQueued() {
  std::deque<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(queue_);
  }
  for (auto& fn : batch) fn();
}

}  // namespace nfsedge
