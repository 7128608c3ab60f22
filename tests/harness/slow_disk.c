/* nfsedge_slow_disk: an emulated server disk, loaded with LD_PRELOAD into
 * nfs-ganesha by harness::Ganesha (Options::disk_sync_us), so that a
 * synchronous commit on the upstream costs what it costs on a real server
 * disk, the way nfsedge-wan sets what the WAN costs.
 *
 * fsync, fdatasync, syncfs and sync_file_range (with
 * SYNC_FILE_RANGE_WAIT_AFTER) and pwritev2 with RWF_DSYNC or RWF_SYNC call
 * the real function, then take the disk: a
 * flush lasts NFSEDGE_DISK_SYNC_US plus the bytes written to regular files
 * since the previous flush (the write family below is wrapped to count them,
 * process-wide) at NFSEDGE_DISK_MBPS (slow_disk_params.h). The disk does one
 * flush at a time for the whole process, with no group commit: a mutex is
 * held while the flush sleeps, so concurrent fsyncs from ganesha's worker
 * threads queue behind each other.
 *
 * dlopen() is wrapped too, to drop RTLD_DEEPBIND (see there).
 *
 * Not emulated: writes to files opened O_SYNC / O_DSYNC (FSAL_VFS answers a
 * stable WRITE with pwritev64() then fsync()), and stdio's own writes (libc
 * calls write() internally, past the wrappers).
 *
 * With NFSEDGE_DISK_SYNC_US unset, 0 or bad (one line on stderr at load) the
 * wrappers only forward. When on, one line on stderr at load says so
 * ("nfsedge_slow_disk: active: ...").
 *
 * The wrappers allocate nothing, keep errno as the real call left it, and
 * defer thread cancellation while they hold the disk. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "slow_disk_params.h"

/* The wrappers are the library's only exported symbols (the rest is built
 * hidden: C_VISIBILITY_PRESET). */
#define WRAPPER __attribute__((visibility("default")))

/* Written once by the constructor, before the program's main(). */
static struct nfsedge_disk_config g_config;
static int g_active;
/* Bytes written to regular files since the previous flush. */
static _Atomic uint64_t g_unflushed;
/* The disk: held for the whole of a flush. */
static pthread_mutex_t g_disk = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void LoadConfig(void) {
  g_config = nfsedge_disk_parse_config(getenv("NFSEDGE_DISK_SYNC_US"), getenv("NFSEDGE_DISK_MBPS"),
                                       stderr);
  g_active = g_config.sync_us > 0;
  if (g_active) {
    fprintf(stderr,
            "nfsedge_slow_disk: active: each flush costs %llu us + the bytes written since the "
            "previous one at %llu MB/s, one flush at a time\n",
            (unsigned long long)g_config.sync_us, (unsigned long long)g_config.mbps);
  }
}

/* The next definition of `name` (libc's), looked up once. */
static void* Next(_Atomic(void*)* slot, const char* name) {
  void* f = atomic_load_explicit(slot, memory_order_acquire);
  if (f == NULL) {
    f = dlsym(RTLD_NEXT, name);
    atomic_store_explicit(slot, f, memory_order_release);
  }
  return f;
}

/* Declares `real`, libc's `name` returning `ret` with parameters `params`;
 * fails the call with ENOSYS if there is none. (Assigned through a void**,
 * as dlsym(3) shows: ISO C has no cast from void* to a function pointer.) */
#define NEXT_OR_FAIL(ret, params, name) \
  static _Atomic(void*) slot_;          \
  ret(*real) params;                    \
  *(void**)&real = Next(&slot_, name);  \
  if (real == NULL) {                   \
    errno = ENOSYS;                     \
    return -1;                          \
  }

/* ganesha loads its FSALs with RTLD_DEEPBIND, which binds their calls to
 * libc ahead of this library: FSAL_VFS's fsync() and pwritev64() would never
 * reach the wrappers. While the emulation is on, modules are loaded without
 * it. */
WRAPPER void* dlopen(const char* file, int flags) {
  static _Atomic(void*) slot_;
  void* (*real)(const char*, int);
  *(void**)&real = Next(&slot_, "dlopen");
  if (real == NULL) return NULL;
  return real(file, g_active ? flags & ~RTLD_DEEPBIND : flags);
}

/* Returns `written`, first adding it to the unflushed bytes if `fd` is a
 * regular file (not a socket, pipe or eventfd). */
static ssize_t Count(int fd, ssize_t written) {
  if (!g_active || written <= 0) return written;
  int saved = errno;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    atomic_fetch_add_explicit(&g_unflushed, (uint64_t)written, memory_order_relaxed);
  }
  errno = saved;
  return written;
}

static void SleepUs(uint64_t us) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)(us / 1000000);
  until.tv_nsec += (long)(us % 1000000) * 1000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec += 1;
    until.tv_nsec -= 1000000000;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
  }
}

/* One flush of the emulated disk: waits for the disk, then occupies it for
 * the flush's cost. */
static void Flush(void) {
  if (!g_active) return;
  int saved = errno;
  int cancel_state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  pthread_mutex_lock(&g_disk);
  uint64_t bytes = atomic_exchange_explicit(&g_unflushed, 0, memory_order_relaxed);
  SleepUs(nfsedge_disk_flush_cost_us(&g_config, bytes));
  pthread_mutex_unlock(&g_disk);
  pthread_setcancelstate(cancel_state, NULL);
  errno = saved;
}

WRAPPER int fsync(int fd) {
  NEXT_OR_FAIL(int, (int), "fsync");
  int r = real(fd);
  Flush();
  return r;
}

WRAPPER int fdatasync(int fd) {
  NEXT_OR_FAIL(int, (int), "fdatasync");
  int r = real(fd);
  Flush();
  return r;
}

WRAPPER int syncfs(int fd) {
  NEXT_OR_FAIL(int, (int), "syncfs");
  int r = real(fd);
  Flush();
  return r;
}

WRAPPER int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
  NEXT_OR_FAIL(int, (int, off64_t, off64_t, unsigned int), "sync_file_range");
  int r = real(fd, offset, nbytes, flags);
  if (flags & SYNC_FILE_RANGE_WAIT_AFTER) Flush();
  return r;
}

WRAPPER ssize_t write(int fd, const void* buf, size_t n) {
  NEXT_OR_FAIL(ssize_t, (int, const void*, size_t), "write");
  return Count(fd, real(fd, buf, n));
}

WRAPPER ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  NEXT_OR_FAIL(ssize_t, (int, const struct iovec*, int), "writev");
  return Count(fd, real(fd, iov, iovcnt));
}

WRAPPER ssize_t pwrite(int fd, const void* buf, size_t n, off_t offset) {
  NEXT_OR_FAIL(ssize_t, (int, const void*, size_t, off_t), "pwrite");
  return Count(fd, real(fd, buf, n, offset));
}

WRAPPER ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t offset) {
  NEXT_OR_FAIL(ssize_t, (int, const void*, size_t, off64_t), "pwrite64");
  return Count(fd, real(fd, buf, n, offset));
}

WRAPPER ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  NEXT_OR_FAIL(ssize_t, (int, const struct iovec*, int, off_t), "pwritev");
  return Count(fd, real(fd, iov, iovcnt, offset));
}

/* What FSAL_VFS calls (it is built with 64-bit file offsets). */
WRAPPER ssize_t pwritev64(int fd, const struct iovec* iov, int iovcnt, off64_t offset) {
  NEXT_OR_FAIL(ssize_t, (int, const struct iovec*, int, off64_t), "pwritev64");
  return Count(fd, real(fd, iov, iovcnt, offset));
}

/* A synchronous write (RWF_DSYNC, RWF_SYNC) is a write and a flush. */
static ssize_t CountAndFlushIfSync(int fd, ssize_t written, int flags) {
  Count(fd, written);
  if (flags & (RWF_DSYNC | RWF_SYNC)) Flush();
  return written;
}

WRAPPER ssize_t pwritev2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  NEXT_OR_FAIL(ssize_t, (int, const struct iovec*, int, off_t, int), "pwritev2");
  return CountAndFlushIfSync(fd, real(fd, iov, iovcnt, offset, flags), flags);
}

WRAPPER ssize_t pwritev64v2(int fd, const struct iovec* iov, int iovcnt, off64_t offset,
                            int flags) {
  NEXT_OR_FAIL(ssize_t, (int, const struct iovec*, int, off64_t, int), "pwritev64v2");
  return CountAndFlushIfSync(fd, real(fd, iov, iovcnt, offset, flags), flags);
}
