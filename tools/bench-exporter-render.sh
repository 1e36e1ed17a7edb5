#!/usr/bin/env bash
# tools/bench-exporter-render.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [ROUNDS]:
# how long kepler-exporter takes to render a snapshot of PROCESSES (10,000)
# fixture processes (store_probe: hostile names, 3 zones), against
# OTHER_EXPORTER (an older build, say) in the same run: both on one store;
# ROUNDS (8) times, a new snapshot is committed and each exporter scraped
# once, so that each renders it; prints the render times each logged
# ("rendered in X ms", wall time; the first rendering, into fresh memory,
# left out). EXPORTER_ARGS: more options for both (--metrics.process.top 100).
set -u
build=${1:?usage: bench-exporter-render.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [ROUNDS]}
other=${2:?usage: bench-exporter-render.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [ROUNDS]}
n=${3:-10000}
rounds=${4:-8}
probe=$build/tests/store_probe
d=$(mktemp -d)
chmod 755 "$d"
ep=()
trap 'kill "${ep[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
"$probe" write "$d/s" 1 nogroup "$n" >/dev/null || exit 1
port=29500
for e in "$other" "$build/readers/exporter/kepler-exporter"; do
	# shellcheck disable=SC2086 # EXPORTER_ARGS: options, split
	"$e" --store.path "$d/s" --web.listen-address 127.0.0.1:$port --log.level debug ${EXPORTER_ARGS:-} \
		>"$d/$port.log" 2>&1 &
	ep+=($!)
	port=$((port + 1))
done
sleep 1
for _ in $(seq "$rounds"); do
	"$probe" write "$d/s" 1 nogroup "$n" >/dev/null || exit 1
	sleep 0.3
	curl -s -o /dev/null http://127.0.0.1:29500/metrics
	curl -s -o /dev/null http://127.0.0.1:29501/metrics
done
echo "$other: $(grep -o 'rendered in [0-9.]* ms' "$d/29500.log" | awk '{print $3}' | tail -n +2 | tr '\n' ' ')ms"
echo "$build: $(grep -o 'rendered in [0-9.]* ms' "$d/29501.log" | awk '{print $3}' | tail -n +2 | tr '\n' ' ')ms"
