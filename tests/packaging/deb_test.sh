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
         ./usr/share/doc/nfsedge/config.md ./usr/share/doc/nfsedge/deploying.md \
         ./usr/share/doc/nfsedge/operating.md ./usr/share/doc/nfsedge/examples/grafana-dashboard.json; do
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
[ $fail = 0 ] && echo "deb_test: $(basename "$deb") OK"
exit $fail
