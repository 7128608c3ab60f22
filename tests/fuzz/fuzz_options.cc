// Sanitizer defaults linked into every fuzz target. ASAN_OPTIONS in the
// environment overrides them (see crashes/README.md for reproducing).
//
// allocator_may_return_null=1, max_allocation_size_mb=64: libtirpc allocates
// an XDR string, opaque or array at the size its length field claims (up to
// 4 GiB) before it checks that the input holds that many bytes (a reported
// finding: crashes/*/oom-*, docs/robustness.md). Without a cap libFuzzer stops
// at the first such input as "out-of-memory (malloc(4294967281))"; with it the
// allocation fails, the decoder returns false, and fuzzing goes on. Inputs
// are a few KB, so no honest allocation comes near the cap.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=64";
}
