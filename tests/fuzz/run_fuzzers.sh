#!/bin/bash
# run_fuzzers.sh - configure and build the fuzz build (clang, libFuzzer,
# ASan + UBSan) and run each fuzz target over its seed corpus.
#
#   tests/fuzz/run_fuzzers.sh                     every target, 20000 inputs each
#   tests/fuzz/run_fuzzers.sh --runs 10000000     the long run (docs/robustness.md)
#   tests/fuzz/run_fuzzers.sh --time 600 nfs3_args upstream_reply
#   tests/fuzz/run_fuzzers.sh --keep-going --time 3600
#
# Options:
#   --runs N        inputs per target (default 20000)
#   --time S        seconds per target instead of a number of inputs
#   --parallel P    targets run at once (default 1)
#   --keep-going    fork mode: record crashes and go on (needs --time)
#   --no-build      use the build as it is
# Environment: BUILD_DIR (default ./build-fuzz), JOBS (build jobs, default 2).
#
# New inputs go to BUILD_DIR/tests/fuzz/work/<target>/corpus, crashes to
# .../artifacts, the log to .../fuzz.log; the checked-in seeds are only read.
# Exits 1 iff a target crashed (or found a leak, a timeout, an OOM).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD_DIR:-$SRC/build-fuzz}
JOBS=${JOBS:-2}
ALL=(record_marking rpc_call nfs3_args mount3_args upstream_reply metadata_cache config)

runs=20000 time= parallel=1 keep_going=0 build=1 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; time=; shift 2 ;;
    --time) time=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "run_fuzzers.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ALL[@]}")
if [ $keep_going = 1 ] && [ -z "$time" ]; then
  echo "run_fuzzers.sh: --keep-going needs --time" >&2
  exit 2
fi

if [ $build = 1 ]; then
  CC=clang CXX=clang++ cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNFSEDGE_FUZZ=ON -DNFSEDGE_SANITIZE=address,undefined >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target $(printf 'fuzz_%s ' "${targets[@]}")
fi

run_one() {
  local t=$1 work=$BUILD/tests/fuzz/work/$1
  mkdir -p "$work/corpus" "$work/artifacts"
  local args=(-print_final_stats=1 -timeout=25 -artifact_prefix="$work/artifacts/")
  [ -f "$SRC/tests/fuzz/dict/$t.dict" ] && args+=(-dict="$SRC/tests/fuzz/dict/$t.dict")
  if [ -n "$time" ]; then
    args+=(-max_total_time="$time")
  else
    args+=(-runs="$runs")
  fi
  [ $keep_going = 1 ] && args+=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)
  local start=$SECONDS rc=0
  touch "$work/started"
  "$BUILD/tests/fuzz/fuzz_$t" "${args[@]}" "$work/corpus" "$SRC/tests/fuzz/corpus/$t" \
    >"$work/fuzz.log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/fuzz.log" | tail -1 |
          awk '{print $2}' || true)
  # Fork mode (--keep-going) prints no final stats: take the last progress line.
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$work/fuzz.log" | tail -1 | tr -d '#' || true)
  local found cov
  found=$(find "$work/artifacts" -type f -newer "$work/started" | wc -l)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' "$work/fuzz.log" | tail -1 || true)
  printf '%-16s %10s inputs %6ss  exit %d  new artifacts %d  %s\n' "$t" "${execs:-?}" \
    "$((SECONDS - start))" "$rc" "$found" "$cov"
  [ "$rc" = 0 ] && [ "$found" = 0 ]
}

status=0
running=0
for t in "${targets[@]}"; do
  if [ $running -ge "$parallel" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
while [ $running -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
