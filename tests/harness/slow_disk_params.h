/* The parameters of the emulated server disk (slow_disk.c): parsed from the
 * environment of the process the library is loaded into, and the cost of
 * one flush. Plain C so that the preloaded library stays free of C++'s
 * runtime; the unit test (slow_disk_params_test.cc) includes it from C++.
 *
 *   NFSEDGE_DISK_SYNC_US  fixed cost of each flush, microseconds
 *                         (unset or 0: no emulation)
 *   NFSEDGE_DISK_MBPS     rate at which the bytes written since the previous
 *                         flush are flushed, 10^6 bytes/s (default 200)
 *
 * Thread safety: pure functions (the parser writes only to `err`). */

#ifndef NFSEDGE_TESTS_HARNESS_SLOW_DISK_PARAMS_H_
#define NFSEDGE_TESTS_HARNESS_SLOW_DISK_PARAMS_H_

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NFSEDGE_DISK_DEFAULT_MBPS 200
#define NFSEDGE_DISK_MAX_SYNC_US 60000000 /* one minute */
#define NFSEDGE_DISK_MAX_MBPS 1000000

struct nfsedge_disk_config {
  uint64_t sync_us; /* 0: the emulation is off. */
  uint64_t mbps;    /* >= 1. */
};

/* Parses a decimal whole number in [min, max]: digits only, no sign, no
 * spaces, no suffix. Returns NULL iff `text` is one (its value in *out),
 * else a static text saying what is wrong. */
const char* nfsedge_disk_parse_number(const char* text, uint64_t min, uint64_t max, uint64_t* out);

/* The disk described by the two variables' values (NULL: unset). A bad value
 * is reported as one line on `err` and treated as unset. The rate is read
 * only when the sync time turns the emulation on. */
struct nfsedge_disk_config nfsedge_disk_parse_config(const char* sync_us, const char* mbps,
                                                     FILE* err);

/* Returns the microseconds a flush of `bytes` costs on `config`'s disk:
 * sync_us + bytes / mbps. REQUIRES: config->mbps >= 1. */
uint64_t nfsedge_disk_flush_cost_us(const struct nfsedge_disk_config* config, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* NFSEDGE_TESTS_HARNESS_SLOW_DISK_PARAMS_H_ */
