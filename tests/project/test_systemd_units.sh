#!/usr/bin/env bash
# The systemd units as built: `systemd-analyze verify` passes (the man pages
# their Documentation= names included), `systemd-analyze security
# --offline=yes` scores them (the exporter must stay at 2.0 or below, the
# collector too: both are printed), and the collector starts and commits
# with the eBPF informer under exactly the unit's CapabilityBoundingSet
# (setpriv, as root; that part skips visibly without root or BPF).
# The ExecStart paths are pointed at the build tree's binaries.
# Usage: test_systemd_units.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
. "$(dirname "$0")/../lib.sh"
command -v systemd-analyze >/dev/null || skip "systemd-analyze missing (package systemd: tools/setup.sh)"
command -v man >/dev/null || skip "man missing (package man-db: tools/setup.sh)"

mkdir -p "$tmp/units" "$tmp/man/man1" "$tmp/man/man8"
cp "$build"/deploy/man/*.1.gz "$tmp/man/man1/" && cp "$build"/deploy/man/*.8.gz "$tmp/man/man8/" ||
	fail "no man pages in $build/deploy/man"
for unit in kepler-collectd kepler-exporter kepler-push kepler-carbon; do
	sed -e "s|^ExecStart=[^ ]*/kepler-collectd |ExecStart=$build/collectd/kepler-collectd |" \
		-e "s|^ExecStart=[^ ]*/kepler-exporter |ExecStart=$build/readers/exporter/kepler-exporter |" \
		-e "s|^ExecStart=[^ ]*/kepler-push |ExecStart=$build/readers/push/kepler-push |" \
		-e "s|^ExecStart=[^ ]*/kepler-carbon |ExecStart=$build/readers/carbon/kepler-carbon |" \
		"$build/deploy/$unit.service" >"$tmp/units/$unit.service"
done
out=$(cd "$tmp" && MANPATH=$tmp/man systemd-analyze verify "$tmp"/units/*.service 2>&1)
[ $? -eq 0 ] && [ -z "$out" ] && ok "systemd-analyze verify: the four units clean" || fail "systemd-analyze verify: $out"

for unit in kepler-exporter kepler-push kepler-carbon kepler-collectd; do
	score=$(cd "$tmp" && systemd-analyze security --offline=yes "$tmp/units/$unit.service" 2>&1 |
		sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
		ok "systemd-analyze security --offline=yes: $unit exposure $score (at most 2.0)"
	else
		fail "$unit exposure '${score:-none}', more than 2.0"
	fi
done

# the collector under the unit's bounding set, exactly
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP part: the collector under the unit's capabilities needs root and setpriv"
else
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$tmp/units/kepler-collectd.service" |
		tr ' ' '\n' | sed 's/^CAP_//' | tr 'A-Z' 'a-z' | sed 's/^/+/' | paste -sd,)
	setpriv --bounding-set=-all,"$caps" "$build/collectd/kepler-collectd" --store.path "$tmp/store" \
		--store.group "" --meter.source fake --informer ebpf --monitor.interval 200ms >"$tmp/c.log" 2>&1 &
	pid=$!
	pids+=($pid)
	for _ in $(seq 100); do
		"$build/readers/stdout/kepler-stdout" --store.path "$tmp/store" --seq 2 >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if grep -q "informer ebpf" "$tmp/c.log" && "$build/readers/stdout/kepler-stdout" --store.path "$tmp/store" --seq 2 >/dev/null 2>&1; then
		ok "the collector runs with the eBPF informer under the unit's bounding set ($caps)"
	elif grep -q "informer ebpf not used" "$tmp/c.log" && ! setpriv --bounding-set=-all,+bpf,+perfmon true 2>/dev/null; then
		echo "SKIP part: no BPF here: $(grep 'informer ebpf not used' "$tmp/c.log" | head -1)"
	else
		fail "the collector under the unit's bounding set ($caps): $(grep -v info "$tmp/c.log" | head -5)"
	fi
fi
finish systemd_units
