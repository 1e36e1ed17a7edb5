#!/usr/bin/env bash
# tools/bench-push-ab.sh OTHER_BUILD [BUILD] [ROUNDS] [PROCESSES]: two builds'
# kepler-push, one request a snapshot, alternated over one store (issue 59:
# "bench_push per snapshot ... before and after"), which takes most of the
# machine's drift between runs out of the comparison. One store of 120
# stable snapshots of PROCESSES (10,000) processes (BUILD's store_probe);
# a sink that takes every request (HTTP 200); then ROUNDS (10) rounds, each
# running OTHER_BUILD's and BUILD's kepler-push (the order swapped each
# round) from a state one snapshot old with push.batch 1 and
# push.max-in-flight 1 until it has sent the 119 others, and reading its
# CPU (utime + stime of /proc/PID/stat) and peak RSS (VmHWM). A line a
# round, then the medians. Stops only what it started.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
other=${1:?usage: bench-push-ab.sh OTHER_BUILD [BUILD] [ROUNDS] [PROCESSES]}
build=${2:-build}
rounds=${3:-10}
nproc=${4:-10000}
nsnap=120
for b in "$other" "$build"; do
	[ -x "$b/readers/push/kepler-push" ] || { echo "bench-push-ab.sh: no $b/readers/push/kepler-push" >&2; exit 2; }
done
[ -x "$build/tests/store_probe" ] || { echo "bench-push-ab.sh: no $build/tests/store_probe" >&2; exit 2; }
# shellcheck source=tests/lib.sh
. tests/lib.sh
hz=$(getconf CLK_TCK)
"$build/tests/store_probe" write "$tmp/s" "$nsnap" nogroup "$nproc" stable >/dev/null 2>"$tmp/probe.err" ||
	{ echo "store_probe: $(cat "$tmp/probe.err")"; exit 1; }
port=$(free_port)
python3 tests/bench/http_sink.py "$port" &
pids+=($!)
eventually 30 curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" || { echo "the sink did not start"; exit 1; }
# one BUILD: prints "CPU_MS_A_SNAPSHOT PEAK_RSS_MIB"
one() {
	local state=$tmp/state-$RANDOM p hwm
	mkdir -p "$state"
	echo 1 >"$state/remote-write.state"
	[ "$(id -u)" -ne 0 ] || chown -R nobody "$state" # as root, kepler-push becomes push.user, nobody
	"$1/readers/push/kepler-push" --store.path "$tmp/s" --push.remote-write.url "http://127.0.0.1:$port/api/v1/write" \
		--push.state-dir "$state" --push.batch 1 --push.max-in-flight 1 --log.level warn >"$state.log" 2>&1 &
	p=$!
	pids+=("$p")
	while [ "$(cat "$state/remote-write.state" 2>/dev/null)" != "$nsnap" ]; do
		kill -0 $p 2>/dev/null || { echo "kepler-push died: $(tail -2 "$state.log")" >&2; return 1; }
		sleep 0.05
	done
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status")
	awk -v n=$((nsnap - 1)) -v hz="$hz" -v hwm="$hwm" '{ printf "%.2f %.0f\n", ($14 + $15) / hz * 1000 / n, hwm / 1024 }' "/proc/$p/stat"
	kill $p
	wait $p 2>/dev/null
}
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		a=$(one "$other") || exit 1
		b=$(one "$build") || exit 1
	else
		b=$(one "$build") || exit 1
		a=$(one "$other") || exit 1
	fi
	echo "$nproc processes, round $r: $other ${a% *} ms a snapshot (${a#* } MiB), $build ${b% *} ms (${b#* } MiB) (load $(cut -d' ' -f1 /proc/loadavg))"
	echo "${a% *} ${b% *}" >>"$tmp/rounds"
done
awk -v o="$other" -v b="$build" -v n="$nproc" '
	{ a[NR] = $1; c[NR] = $2 }
	function median(x, k,   i, j, t) {
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		return k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2
	}
	END { ma = median(a, NR); mb = median(c, NR)
		printf "%d processes, medians: %s %.2f ms, %s %.2f ms a snapshot (%+.1f %%)\n", n, o, ma, b, mb, (mb - ma) * 100 / ma }' "$tmp/rounds"
