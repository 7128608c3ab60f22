#!/bin/bash
# deb_test: cpack -G DEB builds a package whose file list holds the binary,
# the config (as a conffile), the systemd unit and the docs, and whose
# unit is Type=notify. Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
out=$(mktemp -d /tmp/nfsedge-deb.XXXXXX)
trap 'rm -rf "$out"' EXIT
cpack -G DEB -B "$out" --config "$build/CPackConfig.cmake" >"$out/cpack.log" 2>&1 ||
  { cat "$out/cpack.log"; exit 1; }
deb=$(ls "$out"/nfsedge_*.deb)
list=$(dpkg -c "$deb")
fail=0
for f in ./usr/sbin/nfsedge ./etc/nfsedge/nfsedge.toml ./usr/lib/systemd/system/nfsedge.service \
         ./usr/share/doc/nfsedge/README.md ./usr/share/doc/nfsedge/docs/config.md \
         ./usr/share/doc/nfsedge/docs/deploying.md ./usr/share/doc/nfsedge/docs/operating.md \
         ./usr/share/doc/nfsedge/docs/security.md ./usr/share/doc/nfsedge/docs/robustness.md \
         ./usr/share/doc/nfsedge/docs/cache-format.md ./usr/share/doc/nfsedge/docs/benchmarks.md \
         ./usr/share/doc/nfsedge/conf/nfsedge.example.toml \
         ./usr/share/doc/nfsedge/conf/grafana-dashboard.json; do
  if ! grep -q " $f\$" <<<"$list"; then echo "missing from the package: $f"; fail=1; fi
done
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/nfsedge/nfsedge.toml ||
  { echo "the config is not a conffile"; fail=1; }
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/nfsedge.service |
  grep -qx "Type=notify" || { echo "the unit is not Type=notify"; fail=1; }
# The packaged binary runs and accepts the packaged config.
mkdir "$out/root"
dpkg-deb -x "$deb" "$out/root"
"$out/root/usr/sbin/nfsedge" --check-config "$out/root/etc/nfsedge/nfsedge.toml" ||
  { echo "the packaged config does not load"; fail=1; }
# Every relative link of the installed docs leads to an installed file (links
# into tests/ name the source tree's files and are left out).
doc="$out/root/usr/share/doc/nfsedge"
for md in "$doc"/README.md "$doc"/docs/*.md; do
  while IFS= read -r target; do
    case "$target" in http://* | https://* | tests/* | ../tests/* | *" "* | "") continue ;; esac
    if [ ! -e "$(dirname "$md")/$target" ]; then
      echo "${md#"$doc"/} links $target, not installed"; fail=1
    fi
  done < <(grep -o '\]([^)#]*' "$md" | sed 's/^](//')
done
# So does every Documentation= of the unit (systemctl help nfsedge).
for url in $(sed -n 's/^Documentation=//p' "$out/root/usr/lib/systemd/system/nfsedge.service"); do
  case "$url" in
    file://*) [ -e "$out/root${url#file://}" ] || { echo "the unit documents $url, not installed"; fail=1; } ;;
  esac
done

# Installed with dpkg into a throwaway root, as on a Debian 12 machine (the
# maintainer scripts run outside it and find no systemd there, so they only
# check), then removed again with its conffile kept.
root="$out/instroot"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg_root() { dpkg --root="$root" --force-script-chrootless --force-depends --force-not-root "$@"; }
if dpkg_root -i "$deb" >"$out/dpkg.log" 2>&1; then
  dpkg_root -s nfsedge | grep -qx "Status: install ok installed" ||
    { echo "dpkg does not list nfsedge as installed"; fail=1; }
else
  cat "$out/dpkg.log"; echo "dpkg -i failed"; fail=1
fi

# The installed daemon starts with the installed config (ports, cache and
# control socket moved into the test's reach) and serves: NFS v3 and MOUNT v3
# answer a NULL call, and SIGTERM stops it cleanly.
conf="$out/nfsedge.toml"
sed -e '0,/^nfs_port = 2049/s//nfs_port = 22049/' -e 's/^mount_port = 20048/mount_port = 22048/' \
    -e 's/^rpcbind = "auto"/rpcbind = "no"/' -e 's/^mount_port = 0$/mount_port = 22050/' \
    -e "s#^disk_dir = .*#disk_dir = \"$out/cache\"#" \
    -e "s#^journal_dir = .*#journal_dir = \"$out/journal\"#" \
    -e "s#^handle_store = .*#handle_store = \"$out/handles\"#" \
    "$root/etc/nfsedge/nfsedge.toml" >"$conf"
printf '\n[control]\nsocket = "%s/control.sock"\n' "$out" >>"$conf"
# null_ping PORT PROGRAM: an RPC NULL call (version 3, AUTH_NONE) over TCP;
# succeeds iff an accepted SUCCESS reply with the call's XID comes back.
null_ping() {
  local reply
  reply=$(exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
          printf "\x80\x00\x00\x28\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x02$2\x00\x00\x00\x03" >&3
          printf "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" >&3
          timeout 5 head -c 28 <&3 | od -An -tx1 | tr -d ' \n') 2>/dev/null
  [ "$reply" = "80000018000000070000000100000000000000000000000000000000" ]
}
"$root/usr/sbin/nfsedge" --config "$conf" >"$out/daemon.log" 2>&1 &
pid=$!
served=0
for _ in $(seq 100); do
  if null_ping 22049 '\x00\x01\x86\xa3' && null_ping 22048 '\x00\x01\x86\xa5'; then
    served=1
    break
  fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ $served = 1 ] || { echo "the installed daemon does not answer NULL calls"; cat "$out/daemon.log"; fail=1; }
kill -TERM $pid 2>/dev/null || true
if ! wait $pid; then echo "the installed daemon did not stop cleanly"; cat "$out/daemon.log"; fail=1; fi

if dpkg_root -r nfsedge >>"$out/dpkg.log" 2>&1; then
  [ ! -e "$root/usr/sbin/nfsedge" ] || { echo "dpkg -r left the binary"; fail=1; }
  [ -e "$root/etc/nfsedge/nfsedge.toml" ] || { echo "dpkg -r removed the conffile"; fail=1; }
else
  cat "$out/dpkg.log"; echo "dpkg -r failed"; fail=1
fi
# Purged: the cache and state go, but not an edge journal, which may hold
# acknowledged writes not yet upstream.
mkdir -p "$root/var/lib/nfsedge/journal" "$root/var/lib/nfsedge/handles" "$root/var/cache/nfsedge"
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /usr/lib/systemd/system/nfsedge.service "$root/etc/systemd/system/multi-user.target.wants/"
touch "$root/var/lib/nfsedge/journal/000001.log" "$root/var/lib/nfsedge/journal.nfsedge-journal"
if dpkg_root -P nfsedge >>"$out/dpkg.log" 2>&1; then
  [ -e "$root/var/lib/nfsedge/journal/000001.log" ] || { echo "purge removed the edge journal"; fail=1; }
  [ -e "$root/var/lib/nfsedge/journal.nfsedge-journal" ] || { echo "purge removed the journal's marker"; fail=1; }
  [ ! -e "$root/var/lib/nfsedge/handles" ] || { echo "purge left the handle store"; fail=1; }
  [ ! -e "$root/var/cache/nfsedge" ] || { echo "purge left the cache"; fail=1; }
  [ ! -e "$root/etc/nfsedge/nfsedge.toml" ] || { echo "purge left the conffile"; fail=1; }
  [ ! -L "$root/etc/systemd/system/multi-user.target.wants/nfsedge.service" ] ||
    { echo "purge left the unit enabled (a dangling link)"; fail=1; }
else
  cat "$out/dpkg.log"; echo "dpkg -P failed"; fail=1
fi
# The postinst against systemd (a stub systemctl, in a mount namespace where
# /run/systemd/system exists; STUB_ENABLED: what `is-enabled` answers): the
# first install enables and starts the unit; an upgrade or a reinstall
# (re)starts it only if it is enabled, and never enables it.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
  dpkg-deb -e "$deb" "$out/ctrl"
  mkdir -p "$out/stub"
  cat >"$out/stub/systemctl" <<'STUB'
#!/bin/sh
echo "$*" >>"$SYSTEMCTL_LOG"
[ "$1" = is-enabled ] && exit "${STUB_ENABLED:-0}"
exit 0
STUB
  chmod +x "$out/stub/systemctl"
  # postinst ENABLED ARGS...: prints the systemctl calls it made, one per line.
  postinst() {
    local enabled=$1
    shift
    : >"$out/systemctl.log"
    PATH="$out/stub:$PATH" SYSTEMCTL_LOG="$out/systemctl.log" STUB_ENABLED=$enabled unshare -m sh -c \
      'mount -t tmpfs none /run && mkdir -p /run/systemd/system && exec sh "$0" "$@"' \
      "$out/ctrl/postinst" "$@" >/dev/null 2>&1 || echo "postinst $* failed"
    cat "$out/systemctl.log"
  }
  calls=$(postinst 0 configure)
  grep -qx "enable nfsedge.service" <<<"$calls" && grep -qx "restart nfsedge.service" <<<"$calls" ||
    { echo "the first install does not enable and start the unit: $calls"; fail=1; }
  calls=$(postinst 1 configure 0.9.0)
  if grep -q "^enable \|^restart \|^start " <<<"$calls"; then
    echo "an upgrade enables or starts a disabled unit: $calls"; fail=1
  fi
  calls=$(postinst 0 configure 0.9.0)
  if grep -q "^enable " <<<"$calls" || ! grep -qx "restart nfsedge.service" <<<"$calls"; then
    echo "an upgrade or reinstall does not restart an enabled unit, or enables it: $calls"; fail=1
  fi
fi
[ $fail = 0 ] && echo "deb_test: $(basename "$deb") OK"
exit $fail
