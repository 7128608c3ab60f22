#!/bin/bash
# uml_client.sh - run one shell command in an NFSv3 mount made by the REAL Linux kernel NFS
# client (sunrpc/nfs/nfsv3 modules of Debian's 6.1 User-Mode-Linux kernel) in a throw-away
# guest, over a tap device.
#
# Usage: uml_client.sh [options] 'CMD'
#        uml_client.sh -P        only create the tap device (idempotent) and exit, so that a
#                                server can bind the host side address before the guest runs
#        uml_client.sh -D        delete the tap device and exit
#        uml_client.sh -C        only check that a guest can run here and build the cached
#                                initramfs; exit 0 or 77 (with the reason)
# Options:
#   -s ADDR   NFS server address, as seen from the guest (default: the host side, HOST_IP)
#   -n PORT   NFS port (default 2049)          -m PORT   MOUNT port (default 20048)
#   -e PATH   export path to mount (default /)
#   -o OPTS   extra mount options, appended after
#             vers=3,proto=tcp,nolock,port=N,mountport=M,mountproto=tcp
#   -i DIR    copy DIR into the guest as /in (read-only input data for CMD)
#   -t NAME   tap device name (default nfsedge-tap0)
#   -T SECS   timeout of the whole guest run (default 120)
#   -c DIR    cache dir for the base initramfs (default $NFSEDGE_UML_CACHE or
#             /var/tmp/nfsedge-uml)
#   -v        copy the whole guest console to stderr
# Env: HOST_IP=10.213.0.1 GUEST_IP=10.213.0.2 (a /30 on the tap), VM_MEM=384 (MiB)
#
# CMD runs under busybox sh in the guest with cwd = the mount (/mnt); its stdout and stderr
# are printed on stdout between the lines "@@OUT-BEGIN" and "@@OUT-END" (kernel messages may
# interleave). Guest timings and diagnostics go to stderr.
# Exit status: CMD's status, or
#   77  cannot run here (linux.uml, UML modules, busybox-static, cpio or ip missing; no
#       /dev/net/tun; or, with -C, a host kernel that cannot run a guest: -C boots one whose
#       /init only prints a line); the reason is printed on stderr. Packages come from ./dev.sh deps.
#   97  umount failed after CMD      98  guest hung or crashed (no result line)
#   99  mount failed                 2   usage error
#
# Traps (found on Debian 12 hosts): the tap needs gro=1 or bulk transfers stall; UML can hang
# in poweroff after heavy I/O, so it is killed once the result line is out; UML's memory
# file goes in TMPDIR=/dev/shm; right after heavy I/O the guest's umount can fail with EBUSY
# for a moment although no process uses the mount, so it is retried for 2 s. The server
# must listen on the host side of the tap (or 0.0.0.0): 127.0.0.1 is not reachable from
# the guest.
set -euo pipefail

HOST_IP=${HOST_IP:-10.213.0.1}
GUEST_IP=${GUEST_IP:-10.213.0.2}
VM_MEM=${VM_MEM:-384}
CACHE=${NFSEDGE_UML_CACHE:-/var/tmp/nfsedge-uml}
TAP=nfsedge-tap0 SERVER="" NFS_PORT=2049 MNT_PORT=20048 EXPORT=/ EXTRA="" INDIR=""
TIMEOUT=120 VERBOSE=0 ACTION=run

usage() { sed -n '2,34p' "$0" >&2; exit 2; }
skip() { echo "uml_client.sh: cannot run: $*" >&2; exit 77; }

# shellcheck disable=SC2034  # NFS_PORT MNT_PORT EXPORT EXTRA: read through ${!v} below
while getopts s:n:m:e:o:i:t:T:c:vPDCh o; do
  case $o in
    s) SERVER=$OPTARG ;;  n) NFS_PORT=$OPTARG ;;  m) MNT_PORT=$OPTARG ;;
    e) EXPORT=$OPTARG ;;  o) EXTRA=,$OPTARG ;;    i) INDIR=$OPTARG ;;
    t) TAP=$OPTARG ;;     T) TIMEOUT=$OPTARG ;;   c) CACHE=$OPTARG ;;
    v) VERBOSE=1 ;;       P) ACTION=mktap ;;      D) ACTION=deltap ;;
    C) ACTION=check ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -le 1 ] || usage
CMD=${1:-'ls -la'}
SERVER=${SERVER:-$HOST_IP}
for v in NFS_PORT MNT_PORT TIMEOUT; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "uml_client.sh: $v must be a number" >&2; exit 2; }
done
[ -z "$INDIR" ] || [ -d "$INDIR" ] || { echo "uml_client.sh: -i $INDIR: no such dir" >&2; exit 2; }

command -v ip >/dev/null || skip "ip (iproute2) not found; run ./dev.sh deps"

mktap() {  # idempotent
  [ -c /dev/net/tun ] || skip "/dev/net/tun missing"
  if ! ip link show "$TAP" >/dev/null 2>&1; then
    ip tuntap add dev "$TAP" mode tap || skip "cannot create tap device $TAP (need root)"
    ip addr add "$HOST_IP/30" dev "$TAP"
  fi
  ip link set "$TAP" up
}
case $ACTION in
  mktap) mktap; exit 0 ;;
  deltap) ip link del "$TAP" 2>/dev/null || true; exit 0 ;;
esac

# ---- what we need on the host (installed by ./dev.sh deps, never here) ----
command -v linux.uml >/dev/null || skip "linux.uml not found (package user-mode-linux; run ./dev.sh deps)"
KV=$(ls /usr/lib/uml/modules 2>/dev/null | sort -V | tail -1 || true)
MODDIR=/usr/lib/uml/modules/$KV
if [ -z "$KV" ] || [ ! -s "$MODDIR/modules.dep" ]; then
  skip "UML kernel modules not found under /usr/lib/uml/modules (package user-mode-linux)"
fi
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || skip "$BUSYBOX not found (package busybox-static)"
if ldd "$BUSYBOX" >/dev/null 2>&1; then skip "$BUSYBOX is dynamically linked (need busybox-static)"; fi
command -v cpio >/dev/null || skip "cpio not found; run ./dev.sh deps"
[ -c /dev/net/tun ] || skip "/dev/net/tun missing (the guest's network is a tap device)"
if [ ! -d /dev/shm ] || [ ! -w /dev/shm ]; then
  skip "/dev/shm not writable (UML keeps its memory there)"
fi

# ---- base initramfs (cached): busybox + nfsv3 modules (deps first) + /init ----
mkdir -p "$CACHE"
BASE=$CACHE/base-$KV.cpio.gz
build_base() {
  local r; r=$(mktemp -d "$CACHE/root.XXXXXX")
  mkdir -p "$r"/{bin,dev,proc,sys,mnt,tmp,in,lib/modules}
  cp "$BUSYBOX" "$r/bin/busybox"
  declare -A seen=(); local order=()
  add() {
    local m=$1 path d
    path=$(grep -E "(^|/)$m\.ko(\.[gx]z|\.zst)?:" "$MODDIR/modules.dep" | cut -d: -f1)
    [ -n "$path" ] || skip "UML module $m not found in $MODDIR"
    [ -n "${seen[$path]:-}" ] && return 0
    seen[$path]=1
    for d in $(grep -E "^$path:" "$MODDIR/modules.dep" | cut -d: -f2); do
      add "$(basename "$d" | sed -E 's/\.ko(\..*)?$//')"
    done
    order+=("$path")
  }
  add nfsv3
  for p in "${order[@]}"; do
    cp "$MODDIR/$p" "$r/lib/modules/"
    echo "/lib/modules/$(basename "$p")"
  done >"$r/modules.list"
  cat >"$r/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
up() { cut -d' ' -f1 /proc/uptime; }
. /run.env                                   # per-run settings (appended archive)
echo "@@T boot=$(up)"
for m in $(cat /modules.list); do insmod $m || echo "insmod $m failed"; done
IF=$(ls /sys/class/net | grep -v '^lo$' | head -1)
ip link set lo up; ip link set $IF up; ip addr add $GUEST_IP/30 dev $IF
echo "@@T net=$(up)"
opts="vers=3,proto=tcp,nolock,port=$NFS_PORT,mountport=$MNT_PORT,mountproto=tcp"
opts="$opts,addr=$SERVER,mountaddr=$SERVER$EXTRA"
if mount -t nfs -o "$opts" "$SERVER:$EXPORT" /mnt; then
  echo "@@T mounted=$(up)"; grep ' /mnt ' /proc/mounts | sed 's/^/@@M /'
  cd /mnt; echo "@@OUT-BEGIN"
  sh /cmd.sh 2>&1; rc=$?
  echo "@@OUT-END"; cd /; echo "@@T cmd_done=$(up)"
  # The guest kernel sometimes holds the mount for a moment after the last process
  # using it has gone (EBUSY, with no process in it; seen directly on ganesha too).
  n=0
  until umount /mnt; do
    n=$((n + 1)); [ $n -lt 10 ] || { rc=97; break; }
    sleep 0.2
  done
else
  echo "@@MOUNT-FAILED opts=$opts"; rc=99
fi
echo "@@RUN_EXIT=$rc"
poweroff -f
EOF
  chmod +x "$r/init"
  (cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) >"$BASE.tmp.$$"
  mv "$BASE.tmp.$$" "$BASE"
  rm -rf "$r"
}
# ---- ptrace shim (cached): UML 6.1 on hosts with a large XSAVE area (AVX-512, AMX) ----
# Its guests die there with "ptrace set fp regs failed, errno = 14": see uml_xstate_shim.c.
SHIM_SRC=$(dirname "$(realpath "$0")")/uml_xstate_shim.c
SHIM=$CACHE/uml_xstate_shim-$(cksum <"$SHIM_SRC" | cut -d' ' -f1).so
build_shim() {
  local cc; cc=$(command -v cc || command -v gcc || true)
  [ -n "$cc" ] || return 0                    # no compiler: run without it
  "$cc" -O2 -shared -fPIC -o "$SHIM.tmp.$$" "$SHIM_SRC" -ldl && mv "$SHIM.tmp.$$" "$SHIM"
}
exec 8>"$CACHE/.lock"
flock 8                                       # concurrent runs build the cache once
if [ ! -s "$BASE" ] || [ "$BASE" -ot "$0" ]; then build_base; fi
if [ -f "$SHIM_SRC" ] && [ ! -s "$SHIM" ]; then build_shim; fi
flock -u 8
PRELOAD=""
[ -s "$SHIM" ] && PRELOAD=$SHIM

# ---- can this host run a guest at all? A guest whose /init only says so ----
# (Some host kernels refuse UML's ptrace register calls: the guest's first process then
# dies before it can run anything, "ptrace set fp regs failed" or a segfault of init.)
# The probe guest gets the memory of a real run, and three tries: a guest that once
# panicked at boot ("System is deadlocked on memory", seen once on a CI host whose guests
# ran before and after) does not make the whole machine unable to run one.
probe_guest() {
  local d reason="" try
  d=$(mktemp -d "${TMPDIR:-/tmp}/nfsedge-uml-probe.XXXXXX")
  mkdir -p "$d/r"
  printf '#!/bin/busybox sh\necho @@GUEST-RUNS\n/bin/busybox poweroff -f\n' >"$d/r/init"
  chmod +x "$d/r/init"
  cp "$BASE" "$d/initrd"
  truncate -s %4 "$d/initrd"
  (cd "$d/r" && find . | cpio -o -H newc --quiet) >>"$d/initrd"
  for try in 1 2 3; do
    { TMPDIR=/dev/shm LD_PRELOAD=$PRELOAD timeout -k 2 30 linux.uml mem="${VM_MEM}M" \
        initrd="$d/initrd" con=null con0=null,fd:1 </dev/null >"$d/console" 2>&1; } 2>/dev/null || true
    if grep -q '@@GUEST-RUNS' "$d/console"; then
      rm -rf "$d"
      return 0
    fi
    reason=$(tr -d '\r' <"$d/console" | grep -m1 -E 'ptrace set|segfault at|Kernel panic' || true)
    echo "uml_client.sh: probe guest $try of 3 did not run (${reason:-its init printed nothing})" >&2
  done
  rm -rf "$d"
  skip "this host's kernel cannot run a User-Mode Linux guest (${reason:-its init printed nothing})"
}
if [ "$ACTION" = check ]; then
  probe_guest
  exit 0
fi

# ---- per-run archive (command, settings, input files), appended to a copy of the base ----
RUN=$(mktemp -d "${TMPDIR:-/tmp}/nfsedge-uml.XXXXXX")
vpid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [ -n "$vpid" ]; then kill "$vpid" 2>/dev/null || true; fi
  rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 143' TERM INT
mkdir -p "$RUN/r/in"
printf '%s\n' "$CMD" >"$RUN/r/cmd.sh"
for v in SERVER NFS_PORT MNT_PORT EXPORT EXTRA GUEST_IP; do
  printf "%s='%s'\n" "$v" "${!v//\'/}"
done >"$RUN/r/run.env"
[ -z "$INDIR" ] || cp -a "$INDIR/." "$RUN/r/in/"
(cd "$RUN/r" && find . | cpio -o -H newc --quiet) >"$RUN/run.cpio"
cp "$BASE" "$RUN/initrd"
truncate -s %4 "$RUN/initrd"                  # 4-byte align before appending
cat "$RUN/run.cpio" >>"$RUN/initrd"

mktap
# gro=1 is REQUIRED: without it bulk transfers stall ("Incoming GSO frames and GRO disabled").
boot_guest() {
  TMPDIR=/dev/shm LD_PRELOAD=$PRELOAD timeout -k 5 "$TIMEOUT" linux.uml mem="${VM_MEM}M" \
    initrd="$RUN/initrd" vec0:transport=tap,ifname="$TAP",gro=1 con=null con0=null,fd:1 quiet \
    </dev/null >"$RUN/console" 2>&1 &
  vpid=$!
  # UML sometimes hangs in poweroff after heavy I/O: give it 5 s once the result is out.
  while kill -0 "$vpid" 2>/dev/null; do
    if grep -q '^@@RUN_EXIT=' "$RUN/console"; then
      for _ in $(seq 25); do kill -0 "$vpid" 2>/dev/null || break; sleep 0.2; done
      kill "$vpid" 2>/dev/null || true
      break
    fi
    sleep 0.1
  done
  wait "$vpid" 2>/dev/null || true
  vpid=""
}
t0=$(date +%s%N)
boot_guest
# A guest kernel that panicked before its /init ran touched nothing: boot it once more,
# if that was quick (the caller allows the script TIMEOUT and a little more).
if ! grep -q '^@@T boot=' "$RUN/console" && grep -q 'Kernel panic' "$RUN/console" &&
  [ $((($(date +%s%N) - t0) / 1000000000)) -lt 30 ]; then
  echo "# guest kernel panicked before /init ($(tr -d '\r' <"$RUN/console" |
    grep -m1 'Kernel panic')); booting it again" >&2
  boot_guest
fi
t1=$(date +%s%N)

tr -d '\r' <"$RUN/console" >"$RUN/c"
[ "$VERBOSE" = 1 ] && sed 's/^/# console: /' "$RUN/c" >&2
if grep -q '^@@OUT-BEGIN' "$RUN/c"; then
  sed -n '/^@@OUT-BEGIN/,/^@@OUT-END/p' "$RUN/c"
fi
grep -E '^@@[TM] ' "$RUN/c" | sed 's/^@@/# /' >&2 || true
echo "# host wall time: $(((t1 - t0) / 1000000)) ms" >&2
rc=$(sed -n 's/^@@RUN_EXIT=//p' "$RUN/c" | tail -1)
if [ -z "$rc" ]; then
  echo "# guest did not finish within ${TIMEOUT}s or crashed; console tail:" >&2
  tail -20 "$RUN/c" >&2
  exit 98
fi
if [ "$rc" = 99 ]; then
  echo "# mount failed; console tail:" >&2
  tail -8 "$RUN/c" >&2
fi
exit "$rc"
