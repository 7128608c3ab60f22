#!/bin/bash
# dev.sh - the one entry script of nfsedge: install dependencies, build, demo, test, bench.
#
#   ./dev.sh demo     install, build, run the demo: ganesha behind an emulated 50 ms WAN,
#                     nfsedge in front, a tree walk direct vs proxied (--no-wait to exit)
#   ./dev.sh test     install, build, run the whole test suite, then the unit, integration
#                     and fuzz-smoke tests again in a clang AddressSanitizer and
#                     UndefinedBehaviorSanitizer build (what CI runs)
#   ./dev.sh sanitize install, and only the sanitizer build and its tests (into ./build-asan)
#   ./dev.sh bench    install, build, run the benchmark suite (long; see docs/benchmarks.md)
#   ./dev.sh deps     only install the Debian 12 packages
#   ./dev.sh build    install, then only configure and build (into ./build)
#
# Needs root (apt-get, network namespaces for the test servers).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
BUILD=${BUILD_DIR:-$ROOT/build}
JOBS=${JOBS:-$(nproc)}
TEST_JOBS=${TEST_JOBS:-2}   # tests ctest runs at a time (see tests/CMakeLists.txt)

PKGS=(build-essential cmake pkg-config rpcsvc-proto
      libtirpc-dev libevent-dev librocksdb-dev libssl-dev openssl libtomlplusplus-dev
      libgtest-dev libgmock-dev libnfs-dev libnfs-utils
      nfs-ganesha nfs-ganesha-vfs rpcbind nfs-common iproute2
      user-mode-linux busybox-static cpio gnuplot-nox
      clang libclang-rt-14-dev dpkg-dev)

deps() {
  local missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "dev.sh: installing ${missing[*]}" >&2
    [ "$(id -u)" = 0 ] || { echo "dev.sh: need root to install packages" >&2; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

build() {
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" \
        -DNFSEDGE_WERROR="${WERROR:-ON}" ${CMAKE_ARGS:-} >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
}

# The sanitizer preset: clang with ASan + UBSan over the project's libraries,
# daemon and tests, plus the libFuzzer targets (run over their seeds and
# regression inputs). Long fuzzing runs: tests/fuzz/run_fuzzers.sh.
sanitize() {
  local dir=${SANITIZE_BUILD_DIR:-$ROOT/build-asan}
  cmake -S "$ROOT" -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DNFSEDGE_WERROR=ON -DNFSEDGE_SANITIZE=address,undefined -DNFSEDGE_FUZZ=ON >/dev/null
  cmake --build "$dir" -j "$JOBS"
  cd "$dir" && ctest --output-on-failure --timeout 900 -j "$TEST_JOBS" -L 'unit|integration|fuzz' "$@"
}

cmd=${1:-help}; shift || true
case "$cmd" in
  deps)  deps ;;
  build) deps; build ;;
  test)  deps; build; (cd "$BUILD" && ctest --output-on-failure --timeout 900 -j "$TEST_JOBS" "$@"); sanitize ;;
  sanitize) deps; sanitize "$@" ;;
  demo)  deps; build; exec "$BUILD/tests/tools/nfsedge-demo" --build-dir "$BUILD" "$@" ;;
  bench) deps; build; exec "$BUILD/tests/bench/nfsedge-bench" --build-dir "$BUILD" "$@" ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
