#!/bin/bash
# make_deep_readdir.sh OUT [LOG2_ENTRIES] - writes an upstream_reply input (too
# big to check in) whose READDIR results list 2^LOG2_ENTRIES entries (default
# 2^17 = 131072 entries, 3.1 MB). The generated XDR code decodes and frees
# the list recursively, one level per entry, and overflows the stack: see
# docs/robustness.md, "Findings".
#
#   tests/fuzz/regressions/make_deep_readdir.sh /tmp/deep_readdir
#   build-fuzz/tests/fuzz/fuzz_upstream_reply -max_len=4000000 /tmp/deep_readdir
set -euo pipefail
out=$1
n=${2:-17}
entries=$(mktemp)
trap 'rm -f "$entries" "$entries.2"' EXIT
# One entry3: "value follows", fileid 1, name "", cookie 1.
printf '\0\0\0\1\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0\0\0\0\0\1' >"$entries"
for ((i = 0; i < n; i++)); do
  cat "$entries" "$entries" >"$entries.2"
  mv "$entries.2" "$entries"
done
{
  printf '\20'                                  # target selector: READDIR (16)
  printf '\136\355\0\1\0\0\0\1\0\0\0\0'         # xid, REPLY, MSG_ACCEPTED
  printf '\0\0\0\0\0\0\0\0\0\0\0\0'             # AUTH_NONE verifier, SUCCESS
  printf '\0\0\0\0\0\0\0\0cookieve'             # NFS3_OK, no dir attributes, cookieverf
  cat "$entries"
  printf '\0\0\0\0\0\0\0\1'                     # end of list, eof
} >"$out"
