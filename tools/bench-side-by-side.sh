#!/usr/bin/env bash
# tools/bench-side-by-side.sh [--informer ebpf] BUILD_DIR [PROCESSES] [SECONDS] [SCRAPE_SECONDS]
#
# What each exporter costs on the same node, measured in the same run:
# kepler-c (kepler-collectd + kepler-exporter, 5 s interval),
# prometheus-node-exporter (its RAPL collector only: three files) and
# prometheus-process-exporter (one group per process, the comparable
# per-process work), on a fake powercap tree whose counters a writer
# advances (50 W package, 5 W DRAM). Each is scraped (gzip) every
# SCRAPE_SECONDS; its CPU time over SECONDS after a 15 s warm-up (every
# thread, /proc/PID/task/*/schedstat) and its resident memory at the end
# are printed, with kepler-c's ratio to each.
#
# --informer procfs (the default): one tool after the other, each in a PID
# namespace of its own (unshare --pid --mount-proc) holding PROCESSES
# sleeping processes (default 1000) and two busy ones (stress-ng at 10 %
# load); SECONDS 60, SCRAPE_SECONDS 5 by default.
# --informer ebpf: the three at once on the host's own processes, as an
# operator runs them (the eBPF program sees every process of the node;
# node_exporter with its default collectors on the host's /proc and /sys):
# PROCESSES sleepers of another job waking every 2 s for a few µs
# (tools/sleepers.c) and two busy ones beside what the host runs already;
# SCRAPE_SECONDS 15 by default (issue 59's method); the exporter's own CPU
# per gzip scrape and its renderings per scrape (its debug log's
# "rendered in" lines) are printed too. Run it three times and
# take the medians; on a loaded host the figures say so (the load average
# is printed).
# Root (namespaces, eBPF); Debian packages prometheus-node-exporter,
# prometheus-process-exporter, stress-ng (tools/setup.sh), cc. Figures for
# docs/performance.md; not a test.
set -euo pipefail

usage() {
	sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}
[ "${1:-}" = -h ] || [ "${1:-}" = --help ] && usage 0
informer=procfs
if [ "${1:-}" = --informer ]; then
	informer=${2:-}
	shift 2 || usage
fi
case $informer in procfs | ebpf) ;; *) usage ;; esac
[ $# -ge 1 ] || usage
build=$(cd "$1" && pwd)
n=${2:-1000}
secs=${3:-60}
scrape=${4:-5}
[ "$informer" = ebpf ] && scrape=${4:-15}
root=$(cd "$(dirname "$0")/.." && pwd)
warmup=15

for tool in unshare cc prometheus-node-exporter prometheus-process-exporter stress-ng curl; do
	command -v "$tool" >/dev/null || { echo "bench-side-by-side.sh: $tool missing (tools/setup.sh installs it)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench-side-by-side.sh: needs root (PID namespaces)" >&2; exit 1; }

tmp=$(mktemp -d /tmp/kepler-sbs-XXXXXX)
chmod 755 "$tmp"
pids=()
group= # the sleepers' process group (--informer ebpf)
pid_max=$(cat /proc/sys/kernel/pid_max)
cleanup() {
	for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	[ -n "$group" ] && kill -KILL -- -"$group" 2>/dev/null
	wait 2>/dev/null || true
	# until the sleepers are gone: 10,000 exiting at once load the host for
	# seconds, and a run started right after would measure them (it did: load 650)
	for _ in $(seq 600); do
		[ -n "$group" ] && pgrep -g "$group" >/dev/null || break
		sleep 0.2
	done
	echo "$pid_max" >/proc/sys/kernel/pid_max
	rm -rf "$tmp"
}
trap cleanup EXIT

"$root/tools/fake-sysfs.sh" "$tmp/sys" --dram >/dev/null
pkg=$(dirname "$(readlink -f "$tmp/sys/class/powercap/intel-rapl:0/energy_uj")")
dram=$(dirname "$(readlink -f "$tmp/sys/class/powercap/intel-rapl:0:0/energy_uj")")
(
	e=$(cat "$pkg/energy_uj") d=$(cat "$dram/energy_uj")
	while :; do
		sleep 1
		e=$((e + 50000000)) d=$((d + 5000000))
		echo $e 1<>"$pkg/energy_uj" # in place, growing: no reader sees a torn file
		echo $d 1<>"$dram/energy_uj"
	done
) &
pids+=($!)

cat >"$tmp/pe.yml" <<'YML'
process_names:
  - name: "{{.Comm}}-{{.PID}}"
    cmdline: ['.+']
YML

# The namespace's init: the workload, then the exporter command "$@"; it
# stays until killed (--kill-child takes everything in it along).
cat >"$tmp/ns.sh" <<'SH'
#!/bin/bash
n=$1; shift
for ((i = 0; i < n; i++)); do sleep 100000 & done
stress-ng --cpu 2 --cpu-load 10 --quiet &
"$@" &
wait
SH
chmod 755 "$tmp/ns.sh"

# cpu_ns PID...: CPU time of every thread of these host PIDs, in ns
cpu_ns() {
	local sum=0 p t v
	for p in "$@"; do
		for t in /proc/"$p"/task/*/schedstat; do
			read -r v _ <"$t" 2>/dev/null || continue
			sum=$((sum + v))
		done
	done
	echo $sum
}

rss_kib() {
	local sum=0 p v
	for p in "$@"; do
		v=$(awk '/^VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
		sum=$((sum + ${v:-0}))
	done
	echo $sum
}

# find_pids MARK COMM...: host PIDs of the processes named COMM whose command line holds MARK
find_pids() {
	local mark=$1 c p
	shift
	for c in "$@"; do
		pgrep -x -- "$c" | while read -r p; do
			grep -qaF -- "$mark" /proc/"$p"/cmdline 2>/dev/null && echo "$p"
		done
	done
}

# run NAME PORT MARK "COMM..." COMMAND...: start it in its own namespace, measure the processes COMM
run() {
	local name=$1 port=$2 mark=$3 comms=$4 ns t0 t1 c0 c1 body=0 scrapes=0 fails=0 end measured
	shift 4
	unshare --pid --fork --mount-proc --kill-child "$tmp/ns.sh" "$n" "$@" >"$tmp/$name.log" 2>&1 &
	ns=$!
	pids+=("$ns")
	sleep "$warmup"
	# shellcheck disable=SC2086 # a list of names
	mapfile -t measured < <(find_pids "$mark" $comms)
	if [ ${#measured[@]} -eq 0 ]; then
		echo "bench-side-by-side.sh: $name did not start; its log:" >&2
		tail -5 "$tmp/$name.log" >&2
		return 1
	fi
	c0=$(cpu_ns "${measured[@]}")
	t0=$(date +%s%N)
	end=$((t0 + secs * 1000000000))
	while [ "$(date +%s%N)" -lt $end ]; do
		if curl -sf -H 'Accept-Encoding: gzip' -o "$tmp/body" "http://127.0.0.1:$port/metrics"; then
			body=$(stat -c %s "$tmp/body")
			scrapes=$((scrapes + 1))
		else
			fails=$((fails + 1))
		fi
		sleep "$scrape"
	done
	c1=$(cpu_ns "${measured[@]}")
	t1=$(date +%s%N)
	printf '%s %d %d %d %d %d\n' "$name" $(((c1 - c0) * 60000 / ((t1 - t0) / 1000))) \
		"$(rss_kib "${measured[@]}")" "$body" $scrapes $fails >>"$tmp/results"
	kill -KILL "$ns" 2>/dev/null || true # unshare --fork ignores SIGTERM; --kill-child takes the namespace along
	wait "$ns" 2>/dev/null || true
	sleep 2
}

# run_all: the three at once on the host's processes (--informer ebpf)
run_all() {
	local names=(node_exporter process-exporter kepler-c) ports=(29100 29256 28283) c0=() body=() ok=() bad=() i t0 t1 end c1 e0 e1 r0 r1
	local -a tool0 tool1 tool2
	cc -O2 -o "$tmp/sleepers" "$root/tools/sleepers.c"
	[ "$pid_max" -lt $((n * 2 + 40000)) ] && echo $((n * 2 + 40000)) >/proc/sys/kernel/pid_max
	"$tmp/sleepers" "$n" 2000 &
	group=$!
	for _ in $(seq 600); do [ "$(pgrep -c -g "$group")" -gt "$n" ] && break; sleep 0.2; done
	stress-ng --cpu 2 --cpu-load 10 --quiet &
	pids+=($!)
	# the collector's cgroups are the host's; its powercap tree the fake one
	mkdir -p "$tmp/sys/fs"
	ln -s /sys/fs/cgroup "$tmp/sys/fs/cgroup"
	# node_exporter as operators run it: its default collectors, on the host's /proc and /sys
	prometheus-node-exporter --web.listen-address=127.0.0.1:29100 >"$tmp/node_exporter.log" 2>&1 &
	tool0=($!)
	prometheus-process-exporter -config.path "$tmp/pe.yml" -threads=false -gather-smaps=false \
		-web.listen-address 127.0.0.1:29256 >"$tmp/process-exporter.log" 2>&1 &
	tool1=($!)
	"$build/collectd/kepler-collectd" --store.path "$tmp/store" --host.sysfs "$tmp/sys" --meter.source rapl \
		--informer ebpf --monitor.interval 5s --log.level warn >"$tmp/kepler-c.log" 2>&1 &
	tool2=($!)
	sleep 2
	"$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:28283 \
		--log.level debug >"$tmp/exporter.log" 2>&1 &
	tool2+=($!)
	pids+=("${tool0[@]}" "${tool1[@]}" "${tool2[@]}")
	sleep "$warmup"
	for i in 0 1 2; do
		local -n t=tool$i
		kill -0 "${t[@]}" 2>/dev/null || { echo "bench-side-by-side.sh: ${names[$i]} did not start: $(tail -3 "$tmp/${names[$i]}.log")" >&2; return 1; }
		c0[$i]=$(cpu_ns "${t[@]}") body[$i]=0 ok[$i]=0 bad[$i]=0
	done
	e0=$(cpu_ns "${tool2[1]}")
	r0=$(grep -c 'rendered in' "$tmp/exporter.log")
	t0=$(date +%s%N)
	end=$((t0 + secs * 1000000000))
	# a scrape of each at once every SCRAPE_SECONDS (a slow one does not delay the others' next)
	local k=0 next now
	while [ "$(date +%s%N)" -lt $end ]; do
		for i in 0 1 2; do
			curl -sf --max-time "$scrape" -H 'Accept-Encoding: gzip' -o "$tmp/body$i" \
				"http://127.0.0.1:${ports[$i]}/metrics" && echo ok >"$tmp/got$i" || echo bad >"$tmp/got$i" &
		done
		# shellcheck disable=SC2046 # (three pids, split on purpose)
		wait $(jobs -p | tail -3)
		for i in 0 1 2; do
			if [ "$(cat "$tmp/got$i")" = ok ]; then
				body[$i]=$(stat -c %s "$tmp/body$i")
				ok[$i]=$((ok[i] + 1))
			else
				bad[$i]=$((bad[i] + 1))
			fi
		done
		k=$((k + 1))
		next=$((t0 + k * scrape * 1000000000))
		now=$(date +%s%N)
		[ $next -gt "$now" ] && sleep "$(awk -v d=$((next - now)) 'BEGIN { printf "%.3f", d / 1e9 }')"
	done
	t1=$(date +%s%N)
	e1=$(cpu_ns "${tool2[1]}")
	r1=$(grep -c 'rendered in' "$tmp/exporter.log")
	awk -v c=$((e1 - e0)) -v r=$((r1 - r0)) -v n="${ok[2]}" 'BEGIN {
		printf "kepler-exporter alone: %.1f ms of CPU a gzip scrape, %d renderings for %d scrapes (%.2f a scrape)\n", c / 1e6 / (n ? n : 1), r, n, r / (n ? n : 1) }'
	for i in 0 1 2; do
		local -n t=tool$i
		c1=$(cpu_ns "${t[@]}")
		printf '%s %d %d %d %d %d\n' "${names[$i]}" $(((c1 - c0[i]) * 60000 / ((t1 - t0) / 1000))) \
			"$(rss_kib "${t[@]}")" "${body[$i]}" "${ok[$i]}" "${bad[$i]}" >>"$tmp/results"
	done
}

# the procfs case's kepler-c in its namespace
cat >"$tmp/kepler.sh" <<SH
#!/bin/bash
"$build/collectd/kepler-collectd" --store.path "$tmp/store" --host.sysfs "$tmp/sys" --meter.source rapl \\
	--informer procfs --monitor.interval 5s --log.level warn &
sleep 2
exec "$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:28283 --log.level warn
SH
chmod 755 "$tmp/kepler.sh"
: >"$tmp/results"
if [ "$informer" = ebpf ]; then
	echo "bench-side-by-side.sh: all at once on the host: $n sleepers waking every 2 s + 2 busy processes beside the host's $(find /proc -maxdepth 1 -name "[0-9]*" 2>/dev/null | wc -l), ${secs}s after ${warmup}s, a gzip scrape of each every ${scrape}s; load $(cut -d' ' -f1-3 /proc/loadavg); $(git -C "$root" log --oneline -1 | cut -c1-12)"
	run_all
else
	echo "bench-side-by-side.sh: $n sleeping + 2 busy processes per namespace, ${secs}s each after ${warmup}s, a scrape every ${scrape}s"
	run node_exporter 29100 "$tmp/sys" prometheus-node prometheus-node-exporter --web.listen-address=127.0.0.1:29100 \
		--collector.disable-defaults --collector.rapl --path.sysfs="$tmp/sys"
	run process-exporter 29256 "$tmp/pe.yml" prometheus-proc prometheus-process-exporter -config.path "$tmp/pe.yml" \
		-threads=false -gather-smaps=false -web.listen-address 127.0.0.1:29256
	run kepler-c 28283 "$tmp/store" "kepler-collectd kepler-exporter" "$tmp/kepler.sh"
fi

# $2: µs of CPU a minute, $3: KiB
awk -v n="$n" '
	{ name[NR] = $1; cpu[NR] = $2 / 1000; rss[NR] = $3 / 1024; body[NR] = $4; ok[NR] = $5; bad[NR] = $6; k[$1] = NR }
	END {
		printf "| exporter | processes | CPU a minute | RSS | body (gzip) | scrapes (failed) |\n|---|---|---|---|---|---|\n"
		for (i = 1; i <= NR; i++)
			printf "| %s | %d | %.1f ms | %.1f MiB | %d B | %d (%d) |\n", name[i], n, cpu[i], rss[i], body[i], ok[i], bad[i]
		kc = cpu[k["kepler-c"]]
		if (kc > 0)
			printf "kepler-c / node_exporter: %.1f x; kepler-c / process-exporter: %.3f x (%.1f x cheaper)\n",
				kc / cpu[k["node_exporter"]], kc / cpu[k["process-exporter"]], cpu[k["process-exporter"]] / kc
	}' "$tmp/results"
