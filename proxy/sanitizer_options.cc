// Linked into the nfsedge binary of a sanitizer build (NFSEDGE_SANITIZE):
// LeakSanitizer suppressions for leaks inside system libraries, which
// nfsedge cannot free. Each entry names the library code and why.
extern "C" const char* __lsan_default_suppressions() {
  // libtirpc 1.3: pmap_set()/pmap_unset() (proxy/rpcbind.cc, registration
  // with the local rpcbind) lose the address __rpc_uaddr2taddr_af returns.
  return "leak:__rpc_uaddr2taddr_af\n";
}
