#!/usr/bin/env bash
# Readers never read the host: no source under readers/ names a path under
# /proc or /sys (but /proc/self/, the reader's own figures); no reader binary links libbpf, libcap or libelf, or holds
# any of the collector's host readers (procfs, sysfs, cpuinfo, informers).
# Each binary reads its own part of struct kepler_config only: no source of
# collectd/ or readers/NAME/ names another binary's part (cfg->exporter.*...).
# Usage: test_readers_isolation.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1 build=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

hits=$(grep -rnE '"/(proc|sys)(/|")' "$src/readers" --include='*.c' --include='*.h' | grep -v '"/proc/self/')
[ -z "$hits" ] && ok "no path under /proc or /sys in readers/" || fail "readers name host paths: $hits"

# which part of struct kepler_config each folder may read
declare -A own=([collectd]=collectd [readers/exporter]=exporter [readers/passthrough]=passthrough
	[readers/stdout]=out [readers/top]=top [readers/dataset]=dataset [readers/train]=train
	[readers/report]=report [readers/push]=push)
# (cfg->metrics, what the Prometheus families hold, is shared by kepler-exporter and kepler-push)
parts='collectd|exporter|passthrough|out|top|dataset|train|report|push'
for dir in "${!own[@]}"; do
	[ -d "$src/$dir" ] || { fail "$dir: no such folder"; continue; }
	hits=$(grep -rnE "\bcfg(->|\.)($parts)\." "$src/$dir" --include='*.c' --include='*.h' |
		grep -vE "cfg(->|\.)${own[$dir]}\.")
	[ -z "$hits" ] && ok "$dir reads only its own options (${own[$dir]})" ||
		fail "$dir reads another binary's options: $hits"
done

readers=("$build"/readers/*/kepler-*)
[ ${#readers[@]} -ge 4 ] || fail "reader binaries not found under $build/readers"
for b in "${readers[@]}"; do
	[ -x "$b" ] || continue
	libs=$(ldd "$b" | grep -E 'libbpf|libcap|libelf')
	[ -z "$libs" ] && ok "$(basename "$b") links no libbpf, libcap or libelf" ||
		fail "$(basename "$b") links: $libs"
	syms=$(nm "$b" 2>/dev/null | grep -E ' T kepler_(procfs|sysfs|cpuinfo_read|cpuinfo_parse|informer|meter|cgroup)' | head -3)
	[ -z "$syms" ] && ok "$(basename "$b") holds none of the collector's host readers" ||
		fail "$(basename "$b") holds: $syms"
done
[ "$fails" -eq 0 ] && echo "all readers_isolation checks passed"
exit $((fails > 0))
