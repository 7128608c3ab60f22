// ShardPool: a few threads, each with its own FIFO queue, for blocking work
// kept off the event loop (DESIGN rule 9). Work submitted under the same
// shard runs on the same thread in submission order.
//
// Also the annotated mutexes its users share (Clang thread-safety analysis,
// STYLE habit 7; nothing under other compilers).
#ifndef NFSEDGE_CACHE_SHARD_POOL_H_
#define NFSEDGE_CACHE_SHARD_POOL_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#if defined(__clang__)
#define NFSEDGE_TSA(x) __attribute__((x))
#else
#define NFSEDGE_TSA(x)
#endif
#define NFSEDGE_CAPABILITY(x) NFSEDGE_TSA(capability(x))
#define NFSEDGE_SCOPED_CAPABILITY NFSEDGE_TSA(scoped_lockable)
#define NFSEDGE_GUARDED_BY(x) NFSEDGE_TSA(guarded_by(x))
#define NFSEDGE_ACQUIRE(...) NFSEDGE_TSA(acquire_capability(__VA_ARGS__))
#define NFSEDGE_ACQUIRE_SHARED(...) NFSEDGE_TSA(acquire_shared_capability(__VA_ARGS__))
#define NFSEDGE_RELEASE(...) NFSEDGE_TSA(release_capability(__VA_ARGS__))
#define NFSEDGE_RELEASE_SHARED(...) NFSEDGE_TSA(release_shared_capability(__VA_ARGS__))

namespace nfsedge {

class NFSEDGE_CAPABILITY("mutex") Mutex {
 public:
  void lock() NFSEDGE_ACQUIRE() { mu_.lock(); }
  void unlock() NFSEDGE_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class NFSEDGE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) NFSEDGE_ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() NFSEDGE_RELEASE() { mu_->unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Many readers or one writer.
class NFSEDGE_CAPABILITY("mutex") SharedMutex {
 public:
  void lock() NFSEDGE_ACQUIRE() { mu_.lock(); }
  void unlock() NFSEDGE_RELEASE() { mu_.unlock(); }
  void lock_shared() NFSEDGE_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() NFSEDGE_RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

class NFSEDGE_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) NFSEDGE_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->lock_shared(); }
  ~ReaderLock() NFSEDGE_RELEASE() { mu_->unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

class NFSEDGE_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) NFSEDGE_ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~WriterLock() NFSEDGE_RELEASE() { mu_->unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

class ShardPool {
 public:
  explicit ShardPool(int threads) {
    for (int i = 0; i < threads; i++) workers_.push_back(std::make_unique<Worker>());
    for (auto& w : workers_) w->thread = std::thread([w = w.get()] { Run(w); });
  }

  // Runs what is queued, then stops the threads.
  ~ShardPool() {
    for (auto& w : workers_) {
      {
        MutexLock l(&w->mu);
        w->stop = true;
      }
      w->cv.notify_all();
    }
    for (auto& w : workers_) w->thread.join();
  }
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  void Submit(size_t shard, std::function<void()> work) {
    Worker& w = *workers_[shard % workers_.size()];
    {
      MutexLock l(&w.mu);
      w.queue.push_back(std::move(work));
    }
    w.cv.notify_one();
  }

 private:
  struct Worker {
    Mutex mu;
    std::condition_variable_any cv;
    std::deque<std::function<void()>> queue NFSEDGE_GUARDED_BY(mu);
    bool stop NFSEDGE_GUARDED_BY(mu) = false;
    std::thread thread;
  };

  static void Run(Worker* w) {
    for (;;) {
      std::function<void()> work;
      {
        MutexLock l(&w->mu);
        while (w->queue.empty() && !w->stop) w->cv.wait(w->mu);
        if (w->queue.empty()) return;  // stopping, and drained
        work = std::move(w->queue.front());
        w->queue.pop_front();
      }
      work();
    }
  }

  std::vector<std::unique_ptr<Worker>> workers_;  // constant after construction
};

}  // namespace nfsedge

#endif  // NFSEDGE_CACHE_SHARD_POOL_H_
