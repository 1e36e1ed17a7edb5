#!/usr/bin/env bash
# tools/bench-churn-cost.sh [RATE] [INTERVALS] [ROUNDS]: what short-lived
# processes of *another* job cost the collector, per fork (issue 59).
# The release collector (eBPF informer, fake meter, 1 s interval) runs
# alone; then, ROUNDS times (default 3), it is measured for INTERVALS
# intervals (default 30) with no churn of ours, then as long again while
# a churner starts RATE processes a second (default 200: fork, exec of
# /bin/true, exit; in a process group of its own, nothing left behind).
# CPU is the collector's every thread's on-CPU time
# (/proc/PID/task/*/schedstat); the churner counts the processes it
# started. Per round it prints the CPU per interval of both windows and
# the difference per process started; then, in one more churn window under
# `strace -c`, the collector's openat and readlink calls per process
# started (what identifying a new process reads of /proc). Whatever else
# runs on the machine is in both windows alike; its churn is not ours, so
# only the difference counts. Needs root (eBPF), strace and cc.
# BUILD (default build-release) is the build directory.
set -uo pipefail
cd "$(dirname "$0")/.."
rate=${1:-200}
intervals=${2:-30}
rounds=${3:-3}
build=${BUILD:-build-release}
[ "$(id -u)" -eq 0 ] || { echo "bench-churn-cost.sh: needs root (eBPF)" >&2; exit 2; }
for t in strace cc; do command -v $t >/dev/null || { echo "bench-churn-cost.sh: $t missing" >&2; exit 2; }; done
[ -x "$build/collectd/kepler-collectd" ] || { echo "bench-churn-cost.sh: no $build/collectd/kepler-collectd (BUILD=...)" >&2; exit 2; }
tmp=$(mktemp -d)
chmod 0755 "$tmp" # the collector, become kepler after start, reaches its store here
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM -- -"$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
# RATE processes a second, paced on an absolute clock; prints how many it started when told to stop
cat >"$tmp/churner.c" <<'C'
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static volatile sig_atomic_t stop;
static void on_term(int s) { (void)s; stop = 1; }
int main(int argc, char **argv)
{
	long rate = atol(argv[1]), started = 0;
	struct timespec t;
	struct sigaction sa = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };

	setpgid(0, 0);
	sigaction(SIGCHLD, &sa, NULL); /* children reaped by the kernel */
	signal(SIGTERM, on_term);
	clock_gettime(CLOCK_MONOTONIC, &t);
	while (!stop) {
		pid_t p = fork();

		if (p == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		started += p > 0;
		t.tv_nsec += 1000000000L / rate;
		if (t.tv_nsec >= 1000000000L)
			t.tv_sec++, t.tv_nsec -= 1000000000L;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
	}
	printf("%ld\n", started);
	return 0;
}
C
cc -O2 -o "$tmp/churner" "$tmp/churner.c" || exit 1
cpu_ns() { # every thread of $1
	local s=0 v
	for f in /proc/"$1"/task/*/schedstat; do read -r v _ <"$f" 2>/dev/null && s=$((s + v)); done
	echo "$s"
}
"$build/collectd/kepler-collectd" --store.path "$tmp/store" --store.group "" --meter.source fake \
	--monitor.interval 1s --informer ebpf >"$tmp/collector.log" 2>&1 &
cpid=$!
pids+=("$cpid")
sleep 10 # start-up: every process of the machine identified once
kill -0 "$cpid" 2>/dev/null || { echo "bench-churn-cost.sh: the collector stopped:" >&2; cat "$tmp/collector.log" >&2; exit 1; }
churn() { # start the churner; its pid in $chp
	"$tmp/churner" "$rate" >"$tmp/started" &
	chp=$!
	pids+=("$chp")
}
unchurn() { # stop it; the processes it started in $started
	kill -TERM "$chp"
	wait "$chp" 2>/dev/null
	started=$(cat "$tmp/started")
}
echo "bench-churn-cost: $(git log --oneline -1 | cut -c1-12), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs, $rate processes a second, $intervals intervals a window"
for r in $(seq "$rounds"); do
	a0=$(cpu_ns "$cpid")
	sleep "$intervals"
	a1=$(cpu_ns "$cpid")
	churn
	sleep 2 # the churn's first processes met
	b0=$(cpu_ns "$cpid")
	s0=$(date +%s%N)
	sleep "$intervals"
	b1=$(cpu_ns "$cpid")
	s1=$(date +%s%N)
	unchurn
	# processes started within the measured window: the churner's rate over its length
	awk -v r="$r" -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" -v i="$intervals" -v n="$rate" \
		-v s0="$s0" -v s1="$s1" -v st="$started" 'BEGIN {
		quiet = (a1 - a0) / i / 1e6; busy = (b1 - b0) / i / 1e6; inwin = n * (s1 - s0) / 1e9;
		printf "round %d: %.2f ms per interval without churn, %.2f ms with it; %.1f us of collector CPU per process started (%d started, %.0f in the window)\n", r, quiet, busy, (b1 - b0 - (a1 - a0) * (s1 - s0) / 1e9 / i) / inwin / 1e3, st, inwin }'
done
traced() { # count the collector's /proc calls for INTERVALS s into $tmp/strace-$1
	timeout $((intervals + 5)) strace -f -c -e trace=openat,readlink,readlinkat -p "$cpid" -o "$tmp/strace-$1" \
		>/dev/null 2>&1 &
	local spid=$!
	sleep "$intervals"
	kill -INT "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
}
traced quiet
churn
sleep 2
traced churn
unchurn
for k in openat readlink readlinkat; do
	q=$(awk -v k=$k '$NF == k { print $4 }' "$tmp/strace-quiet")
	c=$(awk -v k=$k '$NF == k { print $4 }' "$tmp/strace-churn")
	awk -v k=$k -v q="${q:-0}" -v c="${c:-0}" -v n="$rate" -v i="$intervals" 'BEGIN {
		if (q + c) printf "under strace: %s %d without churn, %d with it in %d s: %.2f per process started\n", k, q, c, i, (c - q) / (n * i) }'
done
