#!/usr/bin/env bash
# tools/bench-exporter-idle.sh BUILD_DIR [OTHER_EXPORTER...]: the CPU time of
# kepler-exporter (all its threads, from /proc/PID/task/*/schedstat, in ns)
# over 90 s with nobody scraping, beside one collector (fake meter, 5 s
# interval) and 1,000 sleeping processes; OTHER_EXPORTER binaries (an older
# build, say) are measured in the same run for comparison. Needs root.
set -u
build=${1:?usage: bench-exporter-idle.sh BUILD_DIR [OTHER_EXPORTER...]}
shift
d=$(mktemp -d)
chmod 755 "$d"
sl=()
trap 'kill "${ep[@]}" $c "${sl[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 1000); do sleep 600 & sl+=($!); done
"$build/collectd/kepler-collectd" --store.path "$d/s" --meter.source fake --monitor.interval 5s --store.group "" \
	--log.level warn &
c=$!
sleep 6
ep=() bins=("$build/readers/exporter/kepler-exporter" "$@")
port=29400
for e in "${bins[@]}"; do
	"$e" --store.path "$d/s" --web.listen-address 127.0.0.1:$port --log.level warn &
	ep+=($!)
	port=$((port + 1))
done
sleep 3
cpu() { cat /proc/$1/task/*/schedstat | awk '{s += $1} END {print s}'; }
t0=()
for p in "${ep[@]}"; do t0+=($(cpu $p)); done
sleep 90
for i in "${!ep[@]}"; do
	t1=$(cpu ${ep[$i]})
	awk -v a=$t1 -v b=${t0[$i]} -v e="${bins[$i]}" \
		'BEGIN { printf "%s: %.1f ms CPU in 90 s unscraped (%.1f ms a minute)\n", e, (a - b) / 1e6, (a - b) / 1.5e6 }'
done
