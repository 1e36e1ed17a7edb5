#!/usr/bin/env bash
# bench_push_catchup.sh BUILD_DIR [PROCESSES] [MINUTES] [DELAY_MS] [IN_FLIGHT...]: how fast
# kepler-push catches up after an outage with a slow receiver, for
# docs/performance.md. A store of MINUTES (10) of fixture snapshots 5 s apart,
# PROCESSES (10,000) processes each (stable: every series in every snapshot);
# a remote-write receiver (rw_receiver) that takes DELAY_MS (1000) to answer
# each request, serving each connection on its own thread, and that decodes
# every request and checks each series' samples arrive in order, once each;
# then for each IN_FLIGHT (1 4 8): kepler-push from a state at the first
# snapshot (the outage's backlog) with --push.max-in-flight IN_FLIGHT, until
# it has acknowledged the last. Prints per run the wall time, how many times
# faster than real time it caught up, its CPU, and the receiver's verdict
# (samples, series, out of order, repeated, each series' fewest and most
# samples, which must both be the backlog's snapshots). FAIL_EVERY=N: the
# receiver answers every N-th request 503 without taking it (retried alone).
# Exit 1 when a verdict is wrong.
set -uo pipefail
build=$(cd "$1" && pwd)
nproc=${2:-10000}
minutes=${3:-10}
delay=${4:-1000}
shift $(($# < 4 ? $# : 4))
flights=("$@")
[ ${#flights[@]} -gt 0 ] || flights=(1 4 8)
push=$build/readers/push/kepler-push
probe=$build/tests/store_probe
recv=$build/tests/rw_receiver
. "$(dirname "$0")/../lib.sh"
nsnap=$((minutes * 12 + 1))
hz=$(getconf CLK_TCK)
echo "writing $nsnap snapshots of $nproc processes (stable), 5 s apart..."
"$probe" write "$tmp/s" "$nsnap" nogroup "$nproc" stable >/dev/null 2>"$tmp/probe.err" || { echo "store_probe: $(cat "$tmp/probe.err")"; exit 1; }
bad=0
for n in "${flights[@]}"; do
	rm -f "$tmp/port"
	"$recv" "$tmp/port" "$delay" ${FAIL_EVERY:-} 2>"$tmp/recv.err" &
	r=$!
	pids+=($r)
	eventually 30 test -s "$tmp/port" || { echo "rw_receiver did not start: $(cat "$tmp/recv.err")"; exit 1; }
	port=$(cat "$tmp/port")
	state=$tmp/state-$n
	mkdir -p "$state"
	echo 1 >"$state/remote-write.state"
	[ "$(id -u)" -ne 0 ] || chown -R nobody "$state"
	t0=$(date +%s%N)
	"$push" --store.path "$tmp/s" --push.remote-write.url "http://127.0.0.1:$port/api/v1/write" --push.state-dir "$state" \
		--push.max-in-flight "$n" --log.level debug >"$tmp/push-$n.log" 2>&1 &
	p=$!
	pids+=($p)
	while [ "$(cat "$state/remote-write.state" 2>/dev/null)" != "$nsnap" ]; do
		kill -0 $p 2>/dev/null || { echo "kepler-push died: $(tail -2 "$tmp/push-$n.log")"; exit 1; }
		sleep 0.05
	done
	t1=$(date +%s%N)
	c=$(awk '{print $14 + $15}' "/proc/$p/stat")
	kill $p
	wait $p 2>/dev/null
	v=$(curl -s "http://127.0.0.1:$port/stats")
	kill $r
	wait $r 2>/dev/null
	awk -v n="$n" -v s=$((nsnap - 1)) -v w=$((t1 - t0)) -v c="$c" -v hz="$hz" -v m="$minutes" -v d="$delay" 'BEGIN {
		printf "max-in-flight %d: %d minutes of backlog (%d snapshots) in %.1f s at %d ms a request: %.1fx real time, CPU %.2f s; ", n, m, s, w / 1e9, d, s * 5 / (w / 1e9), c / hz }'
	echo "receiver: $v"
	jq -e --argjson s $((nsnap - 1)) '.out_of_order == 0 and .repeated == 0 and .bad == 0 and .fewest == $s and .most == $s' <<<"$v" >/dev/null ||
		{ echo "FAIL: every series should have $((nsnap - 1)) samples, in order, none repeated"; bad=1; }
done
exit $bad
