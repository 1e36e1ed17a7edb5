#!/usr/bin/env bash
# bench_push.sh BUILD_DIR [SNAPSHOTS] [PROCESSES] [stable]: kepler-push's cost,
# for docs/performance.md. A store of SNAPSHOTS (720: an hour at 5 s) fixture
# snapshots of PROCESSES (10,000) processes each, 5 s apart (a node in churn:
# a seventh of the processes terminated in each snapshot, a different
# seventh each time, so 12 % of the series are new each snapshot; "stable":
# each process keeps its state, as on a steady node); a sink that
# takes every request (HTTP 200, body read and dropped); then, for each
# protocol (remote-write, OTLP):
#   backlog    the whole hour sent from a state one snapshot old, push.batch 60:
#              the wall time to drain it and how much faster than real time
#              that is, and kepler-push's CPU per snapshot;
#   one a time push.batch 1 and push.max-in-flight 1, as once caught up (one
#              request per new snapshot): CPU per snapshot and bytes per request.
# CPU is the kernel's accounting of the process (utime + stime of
# /proc/PID/stat), not wall time. Prints one line per measure. PUSH_ARGS:
# more options for kepler-push (--metrics.process.top 100, --metrics.level ...).
set -uo pipefail
build=$(cd "$1" && pwd)
nsnap=${2:-720}
nproc=${3:-10000}
shape=${4:-churn}
push=$build/readers/push/kepler-push
probe=$build/tests/store_probe
. "$(dirname "$0")/../lib.sh"
hz=$(getconf CLK_TCK)
echo "writing $nsnap snapshots of $nproc processes ($shape)..."
"$probe" write "$tmp/s" "$nsnap" nogroup "$nproc" "$shape" >/dev/null 2>"$tmp/probe.err" || { echo "store_probe: $(cat "$tmp/probe.err")"; exit 1; }
du -sh "$tmp/s" | awk '{print "store: " $1}'
port=$(free_port)
python3 "$(dirname "$0")/http_sink.py" "$port" &
pids+=($!)
eventually 30 curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" || { echo "the sink did not start"; exit 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# run PROTO BATCH [ARG...]: sends snapshots 2..nsnap; prints wall s, CPU s, requests
run() {
	local proto=$1 batch=$2 url state=$tmp/state-$1-$2-$# p t0 t1 c hwm
	shift 2
	mkdir -p "$state"
	[ "$proto" = otlp ] && url=(--push.otlp.url "http://127.0.0.1:$port/v1/metrics") ||
		url=(--push.remote-write.url "http://127.0.0.1:$port/api/v1/write")
	echo 1 >"$state/$proto.state"
	[ "$(id -u)" -ne 0 ] || chown -R nobody "$state" # started as root, kepler-push becomes push.user, nobody
	t0=$(date +%s%N)
	"$push" --store.path "$tmp/s" "${url[@]}" --push.state-dir "$state" --push.batch "$batch" ${PUSH_ARGS:-} "$@" --log.level debug >"$tmp/push-$proto-$batch.log" 2>&1 &
	p=$!
	pids+=($p)
	while [ "$(cat "$state/$proto.state" 2>/dev/null)" != "$nsnap" ]; do
		kill -0 $p 2>/dev/null || { echo "kepler-push died: $(tail -2 "$tmp/push-$proto-$batch.log")"; return 1; }
		sleep 0.05
	done
	t1=$(date +%s%N)
	c=$(cpu_ticks $p)
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$p/status")
	kill $p
	wait $p 2>/dev/null
	local bytes reqs
	bytes=$(grep -o 'sent snapshots [0-9]* to [0-9]* to [a-z-]*: [0-9]* bytes' "$tmp/push-$proto-$batch.log" | awk '{s += $(NF-1)} END {print s}')
	reqs=$(grep -o 'bytes in [0-9]* requests' "$tmp/push-$proto-$batch.log" | awk '{s += $3} END {print s}')
	awk -v p="$proto${*:+ $*}" -v b="$batch" -v n=$((nsnap - 1)) -v w=$((t1 - t0)) -v c="$c" -v hz="$hz" -v by="$bytes" -v r="$reqs" -v hwm="$hwm" 'BEGIN {
		ws = w / 1e9; cs = c / hz
		printf "%s, batch %-3d %d snapshots in %.1f s wall (%.0fx real time at 5 s), CPU %.2f s = %.2f ms a snapshot, %d requests of %.0f KiB on average, peak RSS %.0f MiB\n",
			p, b, n, ws, n * 5 / ws, cs, cs * 1000 / n, r, by / r / 1024, hwm / 1024 }'
}
# batch 1 with one request in flight: what a caught-up kepler-push does with each new snapshot
for proto in remote-write otlp; do
	run "$proto" 60
	run "$proto" 1 --push.max-in-flight 1
done
run otlp 1 --push.max-in-flight 1 --push.otlp.compression none
