// uml_xstate_shim.c - lets Debian 12's User-Mode Linux 6.1 run on hosts whose CPUs have a
// large XSAVE area (AVX-512, AMX).
//
// UML saves and restores a guest process's FPU state with ptrace(PTRACE_GETREGSET /
// PTRACE_SETREGSET, NT_X86_XSTATE) through a fixed buffer of 832 bytes (the legacy area, the
// XSAVE header and the AVX upper halves). A host kernel reading a short buffer truncates, but
// one writing the state refuses any buffer that is not the whole XSAVE area (EFAULT), so on
// such a host the guest's first process dies: "userspace - ptrace set fp regs failed,
// errno = 14".
//
// Loaded into linux.uml with LD_PRELOAD (uml_client.sh builds it into its cache directory and
// does so), this wraps ptrace(): a short PTRACE_SETREGSET of NT_X86_XSTATE reads the traced
// process's whole XSAVE area, lays UML's bytes over its start and writes the whole area. The
// state beyond UML's 832 bytes (AVX-512, AMX) is left as the process holds it: each guest
// address space runs in a host process of its own, so only threads sharing one address space
// could see another's AVX-512 registers, which UML 6.1 never saved anyway. Every other call,
// and every call on a host whose XSAVE area fits UML's buffer, passes through unchanged.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef long (*ptrace_fn)(int, pid_t, void*, void*);

enum { kMaxXstate = 64 * 1024 };  // x86's whole XSAVE area with AMX is about 11 KiB

static long ForwardWholeXstate(ptrace_fn real, pid_t pid, struct iovec* short_iov) {
  static size_t whole_size;  // learnt at the first call; the host's XSAVE size does not change
  static __thread unsigned char* whole;
  if (whole_size != 0 && whole_size <= short_iov->iov_len) {
    return real(PTRACE_SETREGSET, pid, (void*)(long)NT_X86_XSTATE, short_iov);
  }
  if (whole == NULL) {
    whole = aligned_alloc(64, kMaxXstate);
    if (whole == NULL) return real(PTRACE_SETREGSET, pid, (void*)(long)NT_X86_XSTATE, short_iov);
  }
  struct iovec iov = {whole, kMaxXstate};
  if (real(PTRACE_GETREGSET, pid, (void*)(long)NT_X86_XSTATE, &iov) != 0) {
    return real(PTRACE_SETREGSET, pid, (void*)(long)NT_X86_XSTATE, short_iov);
  }
  whole_size = iov.iov_len;
  if (iov.iov_len <= short_iov->iov_len) {
    return real(PTRACE_SETREGSET, pid, (void*)(long)NT_X86_XSTATE, short_iov);
  }
  memcpy(whole, short_iov->iov_base, short_iov->iov_len);
  return real(PTRACE_SETREGSET, pid, (void*)(long)NT_X86_XSTATE, &iov);
}

long ptrace(enum __ptrace_request request, ...) {
  static ptrace_fn real;
  if (real == NULL) real = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
  va_list ap;
  va_start(ap, request);
  pid_t pid = va_arg(ap, pid_t);
  void* addr = va_arg(ap, void*);
  void* data = va_arg(ap, void*);
  va_end(ap);
  if (request == PTRACE_SETREGSET && (long)addr == NT_X86_XSTATE && data != NULL) {
    return ForwardWholeXstate(real, pid, (struct iovec*)data);
  }
  return real(request, pid, addr, data);
}
