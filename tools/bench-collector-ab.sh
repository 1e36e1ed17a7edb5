#!/usr/bin/env bash
# tools/bench-collector-ab.sh OTHER_BUILD [BUILD] [PROCESSES] [SECONDS] [ROUNDS]:
# two builds' collectors at once on one population (issue 59: "at most
# turn 3's cost"), which takes the machine's drift between runs out of the
# comparison. PROCESSES sleepers of another job (default 1,000; tools/sleepers.c)
# wake every 2 s; each round starts the collector of OTHER_BUILD and of
# BUILD (default build) together, the order swapped each round, each with
# its own store (1 s interval, fake meter, eBPF when root, else procfs),
# and after 15 s of start-up reads each one's on-CPU time
# (/proc/PID/schedstat) over SECONDS (default 40). ROUNDS (default 4)
# rounds, a line each, then the medians. BENCH_PIN=1: each collector on a
# CPU of its own (taskset: CPUs 0 and 1), swapped every other round, so
# that a slower CPU weighs on both alike. Needs cc; stops only what it started.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
other=${1:?usage: bench-collector-ab.sh OTHER_BUILD [BUILD] [PROCESSES] [SECONDS] [ROUNDS]}
build=${2:-build}
n=${3:-1000}
secs=${4:-40}
rounds=${5:-4}
for b in "$other" "$build"; do
	[ -x "$b/collectd/kepler-collectd" ] || { echo "bench-collector-ab.sh: no $b/collectd/kepler-collectd" >&2; exit 2; }
done
command -v cc >/dev/null || { echo "bench-collector-ab.sh: cc missing" >&2; exit 2; }
tmp=$(mktemp -d)
chmod 0755 "$tmp" # a collector that drops to kepler after start reaches its store here
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -n "${spid:-}" ] && kill -TERM -- -"$spid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
cc -O2 -o "$tmp/sleepers" tools/sleepers.c || exit 1
"$tmp/sleepers" "$n" 2000 &
spid=$!
for _ in $(seq 600); do [ "$(pgrep -c -g "$spid")" -gt "$n" ] && break; sleep 0.2; done
start() { # BUILD NAME [CPU]: a collector of BUILD into its own store (on CPU alone if given); its pid in $started
	rm -rf "${tmp:?}/$2"
	${3:+taskset -c "$3"} "$1/collectd/kepler-collectd" --store.path "$tmp/$2" --store.group "" --monitor.interval 1s \
		--meter.source fake --log.level warn >"$tmp/$2.log" 2>&1 &
	started=$!
	pids+=("$started")
}
ns() { awk '{ print $1 }' /proc/"$1"/schedstat; }
for r in $(seq "$rounds"); do
	ca="" cb=""
	if [ -n "${BENCH_PIN:-}" ]; then # each on its own CPU, swapped every other round
		ca=$(((r / 2) % 2)) cb=$((1 - (r / 2) % 2))
	fi
	if [ $((r % 2)) = 1 ]; then
		start "$other" a $ca; a=$started; start "$build" b $cb; b=$started
	else
		start "$build" b $cb; b=$started; start "$other" a $ca; a=$started
	fi
	sleep 15
	a0=$(ns $a) b0=$(ns $b)
	sleep "$secs"
	a1=$(ns $a) b1=$(ns $b)
	kill $a $b
	wait $a $b 2>/dev/null
	ua=$(((a1 - a0) / 1000 / secs)) ub=$(((b1 - b0) / 1000 / secs))
	echo "$n processes, round $r: $other $ua us an interval${ca:+ (CPU $ca)}, $build $ub us an interval${cb:+ (CPU $cb)} (load $(cut -d' ' -f1 /proc/loadavg))"
	echo "$ua $ub" >>"$tmp/rounds"
done
sort -n -k1,1 "$tmp/rounds" | awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; print m }' >"$tmp/ma"
sort -n -k2,2 "$tmp/rounds" | awk '{ b[NR] = $2 } END { m = NR % 2 ? b[(NR + 1) / 2] : (b[NR / 2] + b[NR / 2 + 1]) / 2; print m }' >"$tmp/mb"
awk -v a="$(cat "$tmp/ma")" -v b="$(cat "$tmp/mb")" -v n="$n" -v o="$other" -v t="$build" \
	'BEGIN { printf "%d processes, medians: %s %.0f us, %s %.0f us an interval (%+.1f %%)\n", n, o, a, t, b, (b - a) * 100 / a }'
