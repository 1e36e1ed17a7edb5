#!/usr/bin/env bash
# tools/bench-idle-liveness.sh [SLEEPERS] [INTERVALS]: what idle processes
# cost the eBPF informer (issue 59). SLEEPERS processes (default 10,000) of
# another job wake every WAKE seconds, run a few µs and sleep again; the
# collector (eBPF informer, fake meter, 1 s interval) runs beside them,
# once with WAKE 20 s and once with WAKE 2 s. For each: the collector's
# openat calls per interval (strace -c over INTERVALS intervals, default
# 20: most are /proc/PID/stat reads of idle processes, the question
# kill(pid, 0) now answers) and its CPU per interval from
# /proc/PID/stat (a separate window of INTERVALS intervals without strace).
# Prints one line per case. Needs root (eBPF), strace and cc.
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:-10000}
intervals=${2:-20}
build=${BUILD:-build-release}
[ "$(id -u)" -eq 0 ] || { echo "bench-idle-liveness.sh: needs root (eBPF)" >&2; exit 2; }
for t in strace cc; do command -v $t >/dev/null || { echo "bench-idle-liveness.sh: $t missing" >&2; exit 2; }; done
tmp=$(mktemp -d)
chmod 0755 "$tmp" # the collector, become kepler after start, reaches its store here
pids=()
pid_max=$(cat /proc/sys/kernel/pid_max)
cleanup() {
	for p in "${pids[@]}"; do kill -TERM -- -"$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	echo "$pid_max" >/proc/sys/kernel/pid_max
	[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
[ "$pid_max" -lt $((n * 2 + 40000)) ] && echo $((n * 2 + 40000)) >/proc/sys/kernel/pid_max
cc -O2 -o "$tmp/sleepers" tools/sleepers.c || exit 1
cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }
one() { # one WAKE_S
	local wake=$1 spid cpid t0 t1 opens tick
	"$tmp/sleepers" "$n" $((wake * 1000)) &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 600); do [ "$(pgrep -c -g "$spid")" -gt "$n" ] && break; sleep 0.2; done
	"$build/collectd/kepler-collectd" --store.path "$tmp/store-$wake" --store.group "" --meter.source fake \
		--monitor.interval 1s --informer ebpf >"$tmp/collector-$wake.log" 2>&1 &
	cpid=$!
	pids+=("$cpid")
	sleep $((wake + 5)) # the collector has met every sleeper at least once
	tick=$(getconf CLK_TCK)
	t0=$(cpu_ticks "$cpid")
	sleep "$intervals"
	t1=$(cpu_ticks "$cpid")
	timeout $((intervals + 5)) strace -f -c -e trace=openat -p "$cpid" -o "$tmp/strace-$wake" >/dev/null 2>&1 &
	sleep "$intervals"
	kill -INT $! 2>/dev/null
	wait $! 2>/dev/null
	opens=$(awk '$NF == "openat" { print $4 }' "$tmp/strace-$wake")
	printf 'wake every %2d s: %d sleepers; collector openat %s per interval (%s in %d s), CPU %.1f ms per interval\n' \
		"$wake" "$n" "$(awk -v o="${opens:-0}" -v i="$intervals" 'BEGIN { printf "%.1f", o / i }')" "${opens:-0}" \
		"$intervals" "$(awk -v a="$t0" -v b="$t1" -v t="$tick" -v i="$intervals" 'BEGIN { printf "%.2f", (b - a) * 1000 / t / i }')"
	kill "$cpid"
	wait "$cpid" 2>/dev/null
	kill -TERM -- -"$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	for _ in $(seq 300); do [ "$(pgrep -c -g "$spid")" -eq 0 ] && break; sleep 0.2; done
}
echo "bench-idle-liveness: $(git log --oneline -1 | cut -c1-12), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
one 20
one 2
