#!/usr/bin/env bash
# tools/test-package.sh: the Debian package, end to end, as an operator gets
# it. Builds it (cpack -G DEB, release build under /usr), runs lintian on
# it, then installs it into a clean Debian 12 root (debootstrap
# --variant=minbase bookworm, made once in $KEPLER_TEST_ROOT, default
# /var/tmp/kepler-bookworm, and copied for each run) with dpkg -i and
# apt-get -f install resolving its dependencies from Debian's archive.
# There it checks what the maintainer scripts made (the group and user
# kepler, the store directory 0750 root:kepler), runs the installed collector (fake
# meter, procfs informer: a chroot has no RAPL) and exporter (as a user in
# group kepler, no root) from their installed paths with the unit files'
# command lines, and scrapes /metrics. Then dpkg --purge must leave no file
# of the package behind but the store, which it keeps.
# Too slow for .ci/run (about 3 minutes, the first run 2 more for
# debootstrap); run it after changing deploy/ or the install rules.
# Needs root and Debian's archive. Exit status 0 when every check passed.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
base=${KEPLER_TEST_ROOT:-/var/tmp/kepler-bookworm}
mirror=${KEPLER_TEST_MIRROR:-http://deb.debian.org/debian}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
[ "$(id -u)" -eq 0 ] || { echo "test-package.sh: needs root (debootstrap, chroot)" >&2; exit 2; }

need=()
for p in debootstrap lintian; do command -v "$p" >/dev/null || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
	echo "test-package.sh: installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || exit 1
fi

# 1. the package
bash tools/setup.sh || exit 1
cmake -S . -B build-pkg -DCMAKE_BUILD_TYPE=Release -DKEPLER_TESTS=OFF -DCMAKE_INSTALL_PREFIX=/usr >/dev/null &&
	cmake --build build-pkg -j"$(nproc)" >/dev/null && (cd build-pkg && rm -f ./*.deb && cpack -G DEB >/dev/null) ||
	{ echo "test-package.sh: the package does not build" >&2; exit 1; }
deb=$(ls "$src"/build-pkg/kepler-c_*.deb)
echo "package: $(basename "$deb"), $(stat -c %s "$deb") bytes; $(dpkg-deb -f "$deb" Depends)"

# 2. lintian: no error, no warning (information tags are printed)
lint=$(lintian --info --display-level '>=info' "$deb" 2>&1 | grep -v 'running with root privileges')
grep -E '^[EW]:' <<<"$lint" && fail "lintian reports errors or warnings" || ok "lintian: no error, no warning"
grep -E '^I:' <<<"$lint" | sed 's/^/  /'

# 3. a clean Debian 12 root, copied from the one made once
if [ ! -f "$base/.kepler-complete" ]; then
	rm -rf "$base"
	echo "debootstrap --variant=minbase bookworm $base (once)"
	debootstrap --variant=minbase bookworm "$base" "$mirror" >"$base.log" 2>&1 ||
		{ echo "test-package.sh: debootstrap failed: $(tail -3 "$base.log")" >&2; exit 1; }
	touch "$base/.kepler-complete"
fi
root=$(mktemp -d /var/tmp/kepler-pkg.XXXXXX)
cleanup() {
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for m in proc dev/pts dev; do umount -l "$root/$m" 2>/dev/null; done
	rm -rf "$root"
}
trap cleanup EXIT
cp -a "$base/." "$root/"
mount -t proc proc "$root/proc" && mount --bind /dev "$root/dev" && mount -t devpts devpts "$root/dev/pts" ||
	{ echo "test-package.sh: cannot mount in the chroot" >&2; exit 1; }
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }

# 4. install: dpkg -i (its dependencies missing), then apt-get -f install
in_root dpkg -i "/tmp/$(basename "$deb")" >"$root.dpkg.log" 2>&1
in_root apt-get update -qq >/dev/null 2>&1
if in_root env DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq >"$root.apt.log" 2>&1 &&
	[ "$(in_root dpkg-query -W -f='${Status}' kepler-c)" = "install ok installed" ]; then
	ok "dpkg -i + apt-get -f install: kepler-c installed with its dependencies"
else
	fail "install: $(tail -5 "$root.dpkg.log" "$root.apt.log")"
fi
in_root getent group kepler >/dev/null && ok "postinst made the group kepler" || fail "no group kepler"
kuser=$(in_root getent passwd kepler)
[ "$(cut -d: -f4 <<<"$kuser")" = "$(in_root getent group kepler | cut -d: -f3)" ] && [ "$(cut -d: -f7 <<<"$kuser")" = /usr/sbin/nologin ] &&
	ok "postinst made the user kepler (group kepler, no login): $kuser" || fail "user kepler: '$kuser'"
# (numeric: the chroot's kepler is not the host's)
perm=$(stat -c '%a %u:%g' "$root/var/lib/kepler/store" 2>&1)
[ "$perm" = "750 0:$(in_root getent group kepler | cut -d: -f3)" ] && ok "the store directory is 0750 root:kepler" ||
	fail "the store directory is '$perm', want 750 root:kepler"
[ -z "$(ls "$root"/etc/systemd/system/*.wants/kepler-* 2>/dev/null)" ] && ok "nothing enabled or started by the package" ||
	fail "the package enabled a unit"

# 5. the installed binaries, as the units start them
unitdir=$(dirname "$(in_root dpkg -L kepler-c | grep 'kepler-collectd.service$')")
collectd_cmd=$(sed -n 's/^ExecStart=//p' "$root$unitdir/kepler-collectd.service")
exporter_cmd=$(sed -n 's/^ExecStart=//p' "$root$unitdir/kepler-exporter.service")
port=$((20000 + RANDOM % 20000))
# shellcheck disable=SC2086 # the unit's command line, split as systemd splits it
chroot "$root" $collectd_cmd --meter.source fake --informer procfs --monitor.interval 1s >"$root.collectd.log" 2>&1 &
# shellcheck disable=SC2086
chroot --userspec=nobody:nogroup --groups=kepler "$root" $exporter_cmd \
	--web.listen-address "127.0.0.1:$port" >"$root.exporter.log" 2>&1 &
metrics=
for _ in $(seq 60); do
	metrics=$(curl -sf "http://127.0.0.1:$port/metrics") && grep -q '^kepler_node_cpu_joules_total' <<<"$metrics" && break
	sleep 0.5
done
if grep -q '^kepler_node_cpu_joules_total' <<<"$metrics" && grep -q '^kepler_process_cpu_joules_total' <<<"$metrics"; then
	ok "the installed collector ('$collectd_cmd' + a fake meter) and exporter (as nobody in group kepler) serve $(grep -c '^kepler_' <<<"$metrics") kepler series"
else
	fail "no kepler metrics: $(tail -3 "$root.collectd.log" "$root.exporter.log")"
fi
held=$(grep -o 'privileges: now .*' "$root.collectd.log")
owner=$(stat -c %u "$root/var/lib/kepler/store/data.mdb" 2>&1)
grep -q "^privileges: now kepler (uid $(cut -d: -f3 <<<"$kuser")) in kepler" <<<"$held" && [ "$owner" = "$(cut -d: -f3 <<<"$kuser")" ] &&
	ok "the installed collector became kepler after start and owns the store's files: $held" ||
	fail "collector privileges: '$held', data.mdb owner $owner"
for p in $(jobs -p); do kill "$p" 2>/dev/null; done
wait 2>/dev/null

# 6. purge: nothing of the package left but the store
files=$(in_root dpkg -L kepler-c | while read -r f; do [ -f "$root$f" ] && echo "$f"; done)
in_root dpkg --purge kepler-c >"$root.purge.log" 2>&1 || fail "dpkg --purge: $(tail -3 "$root.purge.log")"
left=$(for f in $files; do [ -e "$root$f" ] && echo "$f"; done)
[ -z "$left" ] && ok "dpkg --purge removed all $(wc -w <<<"$files") files of the package" || fail "left after purge: $left"
[ ! -e "$root/etc/kepler" ] || fail "/etc/kepler left after purge: $(ls -A "$root/etc/kepler")"
[ -f "$root/var/lib/kepler/store/data.mdb" ] && ok "the store is kept: $(ls "$root/var/lib/kepler/store" | paste -sd' ')" ||
	fail "the store was not kept"
rm -f "$root".*
[ $fails -eq 0 ] && echo "test-package.sh: every check passed" || echo "test-package.sh: $fails check(s) failed"
exit $((fails > 0))
