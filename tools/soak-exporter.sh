#!/usr/bin/env bash
# tools/soak-exporter.sh [BUILD_DIR [MINUTES [PROCESSES]]]: the exporter's
# memory over a long run (issue 26). Starts PROCESSES (default 10000) real
# sleeping processes, the collector (fake meter, procfs informer, 1 s
# interval) on a fresh store, and the exporter on it; scrapes /metrics every
# second for MINUTES (default 30) and samples the exporter's RssAnon and
# RssFile (/proc/PID/status) each minute. Prints one line a minute and the
# verdict: the last sample at most 1.2 x the fifth minute's and at most
# 64 MiB (with fewer than 5 minutes: against the first sample).
# Exit status 0 when both hold, 1 otherwise, 2 when it could not run.
# Slow by design: not part of .ci/run. Needs root (10,000 processes and the
# collector's start-up privileges). Use a Release build for figures.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
minutes=${2:-30}
nprocs=${3:-10000}
collectd=$build/collectd/kepler-collectd
exporter=$build/readers/exporter/kepler-exporter
for f in "$collectd" "$exporter"; do
	[ -x "$f" ] || { echo "soak-exporter.sh: $f missing: build first (cmake --build $build)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "soak-exporter.sh: needs root" >&2; exit 2; }
tmp=$(mktemp -d /tmp/kepler-soak.XXXXXX)
chmod 755 "$tmp" # the collector and the exporter both become nobody after start
pids=()
sleepers_pgid=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "$sleepers_pgid" ] && kill -- -"$sleepers_pgid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# the sleepers: one process group, so that they are stopped together by its id
setsid bash -c "for ((i = 0; i < $nprocs; i++)); do sleep 100000 & done; wait" &
sleepers_pgid=$!
for _ in $(seq 600); do
	n=$(pgrep -c -g "$sleepers_pgid" -x sleep)
	[ "${n:-0}" -ge "$nprocs" ] && break
	sleep 0.1
done
echo "soak: $n sleeping processes started"

"$collectd" --store.path "$tmp/store" --store.group "" --meter.source fake --informer procfs \
	--monitor.interval 1s >"$tmp/collectd.log" 2>&1 &
pids+=($!)
"$exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:0 >"$tmp/exporter.log" 2>&1 &
epid=$!
pids+=($epid)
port= ready=
for _ in $(seq 600); do
	port=$(sed -n 's|.*started: http://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$tmp/exporter.log")
	# the whole page first: grep -q would stop reading it (pipefail: curl fails on SIGPIPE)
	[ -n "$port" ] && curl -sf -o "$tmp/page" "http://127.0.0.1:$port/metrics" &&
		grep -q '^kepler_process_cpu_joules_total' "$tmp/page" && ready=1 && break
	kill -0 "$epid" 2>/dev/null || break
	sleep 0.2
done
[ -n "$ready" ] || {
	echo "soak-exporter.sh: no process series served: $(tail -3 "$tmp/exporter.log") $(tail -3 "$tmp/collectd.log")" >&2
	exit 2
}
url=http://127.0.0.1:$port/metrics
series=$(curl -s "$url" | grep -c '^kepler_process_cpu_joules_total')
echo "soak: exporter pid $epid on $url, $series process series; $minutes minute(s)"

kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
samples=()
start=$(date +%s)
scrapes=0 failed=0
for ((m = 1; m <= minutes; m++)); do
	while [ $(($(date +%s) - start)) -lt $((m * 60)) ]; do
		curl -sf -o /dev/null "$url" && scrapes=$((scrapes + 1)) || failed=$((failed + 1))
		sleep 1
	done
	kill -0 "$epid" 2>/dev/null || { echo "soak-exporter.sh: the exporter died: $(tail -3 "$tmp/exporter.log")" >&2; exit 1; }
	anon=$(kib "$epid" RssAnon) file=$(kib "$epid" RssFile)
	total=$((anon + file))
	samples+=("$total")
	seq=$(curl -s "$url" | sed -n 's/^kepler_snapshot_seq[^ ]* \([0-9.e+]*\)$/\1/p' | head -1)
	printf 'minute %2d: RssAnon %6d KiB, RssFile %6d KiB, total %6d KiB; snapshot %s; %d scrapes, %d failed\n' \
		"$m" "$anon" "$file" "$total" "${seq:-?}" "$scrapes" "$failed"
done
ref_i=4
[ ${#samples[@]} -ge 5 ] || ref_i=0
ref=${samples[$ref_i]} last=${samples[-1]}
limit=$((64 * 1024))
echo "soak: last $last KiB, reference (minute $((ref_i + 1))) $ref KiB, ratio $(awk -v a="$last" -v b="$ref" 'BEGIN {printf "%.2f", a / b}'), limit 64 MiB"
if [ "$last" -le $((ref * 12 / 10)) ] && [ "$last" -le $limit ] && [ "$failed" -eq 0 ]; then
	echo "soak-exporter.sh: bounded"
	exit 0
fi
echo "soak-exporter.sh: NOT bounded (or scrapes failed: $failed)"
exit 1
