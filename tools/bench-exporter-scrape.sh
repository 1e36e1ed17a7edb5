#!/usr/bin/env bash
# tools/bench-exporter-scrape.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [SCRAPES] [PER_SCRAPE]:
# what a gzip scrape costs kepler-exporter, as Prometheus scrapes it: both
# exporters (this build's and OTHER_EXPORTER, an older build) on one store
# of PROCESSES (10,000) fixture processes (store_probe); SCRAPES (8) times,
# PER_SCRAPE (3: 15 s scrapes of 5 s snapshots) new snapshots are committed,
# then each exporter is scraped once with Accept-Encoding: gzip. Prints,
# for each: its CPU time (every thread, /proc/PID/task/*/schedstat, so a
# loaded machine slows it less than wall time would) per scrape, its
# renderings per scrape (its "rendered in" debug lines), and the body size.
set -u
build=${1:?usage: bench-exporter-scrape.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [SCRAPES] [PER_SCRAPE]}
other=${2:?usage: bench-exporter-scrape.sh BUILD_DIR OTHER_EXPORTER [PROCESSES] [SCRAPES] [PER_SCRAPE]}
n=${3:-10000}
scrapes=${4:-8}
per=${5:-3}
probe=${STORE_PROBE:-$build/tests/store_probe} # STORE_PROBE: another build's (a release build without tests)
d=$(mktemp -d)
chmod 755 "$d"
ep=()
trap 'kill "${ep[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"' EXIT
cpu_ns() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%d\n", s }'; }
renders() { grep -c 'rendered in' "$1"; }
"$probe" write "$d/s" 1 nogroup "$n" >/dev/null || exit 1
names=("$other" "$build/readers/exporter/kepler-exporter")
for i in 0 1; do
	"${names[$i]}" --store.path "$d/s" --web.listen-address 127.0.0.1:$((29510 + i)) --log.level debug \
		>"$d/$i.log" 2>&1 &
	ep+=($!)
done
for i in 0 1; do # both serving, and warm: two scrapes of their first snapshot
	for _ in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:$((29510 + i))/metrics && break; sleep 0.1; done
	curl -s -o /dev/null -H 'Accept-Encoding: gzip' http://127.0.0.1:$((29510 + i))/metrics
done
declare -a c0 r0 size
for i in 0 1; do c0[$i]=$(cpu_ns "${ep[$i]}") r0[$i]=$(renders "$d/$i.log"); done
for _ in $(seq "$scrapes"); do
	for _ in $(seq "$per"); do
		"$probe" write "$d/s" 1 nogroup "$n" >/dev/null || exit 1
		sleep 0.3 # each exporter sees the commit (inotify) as it would between scrapes
	done
	for i in 0 1; do
		size[$i]=$(curl -s -H 'Accept-Encoding: gzip' http://127.0.0.1:$((29510 + i))/metrics | wc -c)
	done
done
for i in 0 1; do
	c=$(($(cpu_ns "${ep[$i]}") - c0[i])) r=$(($(renders "$d/$i.log") - r0[i]))
	printf '%s: %.1f ms of CPU a gzip scrape, %s renderings for %s scrapes (%.2f a scrape), %s bytes gzipped\n' \
		"${names[$i]}" "$(echo "$c / $scrapes / 1000000" | bc -l)" "$r" "$scrapes" \
		"$(echo "$r / $scrapes" | bc -l)" "${size[$i]}"
done
