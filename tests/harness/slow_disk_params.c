#include "slow_disk_params.h"

const char* nfsedge_disk_parse_number(const char* text, uint64_t min, uint64_t max, uint64_t* out) {
  if (text == NULL || *text == '\0') return "empty";
  uint64_t v = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return "not a whole number";
    v = v * 10 + (uint64_t)(*p - '0');
    if (v > max) return "out of range";
  }
  if (v < min) return "out of range";
  *out = v;
  return NULL;
}

struct nfsedge_disk_config nfsedge_disk_parse_config(const char* sync_us, const char* mbps,
                                                     FILE* err) {
  struct nfsedge_disk_config c = {0, NFSEDGE_DISK_DEFAULT_MBPS};
  if (sync_us == NULL) return c;
  const char* why = nfsedge_disk_parse_number(sync_us, 0, NFSEDGE_DISK_MAX_SYNC_US, &c.sync_us);
  if (why != NULL) {
    fprintf(err,
            "nfsedge_slow_disk: ignoring NFSEDGE_DISK_SYNC_US=\"%s\": %s (expected 0..%d "
            "microseconds); the disk emulation is off\n",
            sync_us, why, NFSEDGE_DISK_MAX_SYNC_US);
    c.sync_us = 0;
    return c;
  }
  if (c.sync_us == 0 || mbps == NULL) return c;
  why = nfsedge_disk_parse_number(mbps, 1, NFSEDGE_DISK_MAX_MBPS, &c.mbps);
  if (why != NULL) {
    fprintf(err,
            "nfsedge_slow_disk: ignoring NFSEDGE_DISK_MBPS=\"%s\": %s (expected 1..%d MB/s); "
            "using %d\n",
            mbps, why, NFSEDGE_DISK_MAX_MBPS, NFSEDGE_DISK_DEFAULT_MBPS);
    c.mbps = NFSEDGE_DISK_DEFAULT_MBPS;
  }
  return c;
}

uint64_t nfsedge_disk_flush_cost_us(const struct nfsedge_disk_config* config, uint64_t bytes) {
  /* bytes / (mbps * 10^6 bytes/s) seconds = bytes / mbps microseconds. */
  return config->sync_us + bytes / config->mbps;
}
