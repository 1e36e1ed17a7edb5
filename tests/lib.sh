# Shared by the shell tests (source it after `build=$1`): a scratch folder
# $tmp removed at exit; the PIDs a test appends to $pids, and only those,
# stopped at exit; commands appended to $at_exit run after them (tmux
# sessions, cgroups); ok/fail lines counted in $fails; `finish NAME` ends
# the test with exit 0 when nothing failed, else 1. Skips are exit 77.
# KEPLER_TEST_KEEP=1 keeps $tmp (logs, stores) of a test that failed.
tmp=$(mktemp -d)
# traversable: the collector, started as root, becomes another user and still
# reads the fake trees and token files the tests put here
chmod 0755 "$tmp"
chmod 0755 "$tmp"
pids=()
at_exit=()
kepler_test_cleanup() {
	local p h
	# a process's own children first (own_pids' unshare waits for its child and ignores SIGTERM)
	for p in "${pids[@]}"; do pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for h in "${at_exit[@]}"; do eval "$h"; done
	if [ -n "${KEPLER_TEST_KEEP:-}" ] && [ "$fails" -gt 0 ]; then
		echo "kept: $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap kepler_test_cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; exit 77; }
finish() {
	[ "$fails" -eq 0 ] && echo "all $1 checks passed"
	exit $((fails > 0))
}
# free_port: a TCP port of 127.0.0.1 free a moment ago
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# test_certs NAME CN: in $tmp a test CA (ca.crt, ca.key) and NAME.crt, NAME.key for 127.0.0.1 signed by it
test_certs() {
	(cd "$tmp" &&
		{ [ -f ca.crt ] || openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 \
			-subj "/CN=test-$1-ca"; } &&
		openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" &&
		printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 2 \
			-extfile san.ext) >/dev/null 2>&1
}
# start_exporter_for STORE PORT [ARG...]: the exporter of $build on 127.0.0.1:PORT (log $tmp/exporter-PORT.log)
start_exporter_for() {
	local store=$1 port=$2
	shift 2
	"$build/readers/exporter/kepler-exporter" --store.path "$store" --web.listen-address "127.0.0.1:$port" "$@" \
		>"$tmp/exporter-$port.log" 2>&1 &
	pids+=($!)
}
# wait_metrics PORT FILE: until /metrics on PORT holds a snapshot, saved in
# FILE (60 s at most: a bound for what never comes, not a deadline)
wait_metrics() {
	for _ in $(seq 600); do
		curl -sf -o "$2" "http://127.0.0.1:$1/metrics" && grep -q '^kepler_snapshot_seq{' "$2" && return 0
		sleep 0.1
	done
	return 1
}
# eventually SECONDS CMD...: true as soon as CMD succeeds, tried every 0.5 s;
# false if it never did within SECONDS (a bound for what never comes, not a
# deadline: choose it generous, a loaded machine runs everything late)
eventually() {
	local n=$(($1 * 2))
	shift
	for _ in $(seq $n); do
		"$@" && return 0
		sleep 0.5
	done
	return 1
}
# store_seq STORE: the seq of the store's newest snapshot (nothing when none reads)
store_seq() {
	"$build/readers/stdout/kepler-stdout" --store.path "$1" --format json 2>/dev/null |
		sed -n 's/^{"seq":\([0-9]*\),.*/\1/p' | head -1
}
# wait_seq STORE MIN: until the store holds snapshot MIN, however slowly a
# loaded machine runs the collector (120 s at most: a bound for a collector
# that stopped, not a deadline); false if it never came
wait_seq() {
	local s
	for _ in $(seq 600); do
		s=$(store_seq "$1")
		[ -n "$s" ] && [ "$s" -ge "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
# A /proc/stat the test writes, as LXCFS gives a container its own. Where
# other jobs keep every CPU busy, the node's CPU use cannot follow a test's
# workload; the tests that need it to (an idle power learned, a model
# fitted) then run the collector where this file is /proc/stat.
# machine_saturated: true when this machine's CPUs were over 90 % busy for the last 2 s.
machine_saturated() {
	python3 - <<'PY'
import time
def busy():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f) - f[3] - f[4], sum(f)
b0, t0 = busy(); time.sleep(2); b1, t1 = busy()
raise SystemExit(0 if t1 > t0 and (b1 - b0) / (t1 - t0) > 0.9 else 1)
PY
}
# fake_stat_start FILE [ENERGY_UJ LOG IDLE_W BUSY_W]: FILE in /proc/stat's format (this machine's CPUs
# and other lines), its counters advanced every 0.1 s at the busy fraction in FILE.use (0 to 1, written
# by the test; 0.1 at first), rewritten in place (its counters only grow, so no stale tail is left).
# With ENERGY_UJ (a fake powercap counter), the same tick advances it by IDLE_W + BUSY_W x that
# fraction and logs "wall_ns energy_uj" to LOG: a meter that follows this node's use in step with it.
fake_stat_start() {
	echo 0.1 >"$1.use"
	python3 - "$@" <<'PY' &
import os, sys, time
path = sys.argv[1]
meter = sys.argv[2:6]
if meter:
    mfd, mlog = os.open(meter[0], os.O_WRONLY), open(meter[1], "w", buffering=1)
    energy, idle_w, busy_w = float(open(meter[0]).read()), float(meter[2]), float(meter[3])
lines = open("/proc/stat").read().splitlines()
ncpu = sum(1 for l in lines if l.startswith("cpu") and l[3:4].isdigit())
rest = "".join(l + "\n" for l in lines if not l.startswith("cpu"))
busy, idle, hz = [0] * ncpu, [0] * ncpu, os.sysconf("SC_CLK_TCK")
def text():
    # the kernel's spacing ("cpu  " then single spaces); counters only grow, so the text never shrinks
    row = lambda name, b, i: "%s %d 0 0 %d 0 0 0 0 0 0\n" % (name, b, i)
    return row("cpu ", sum(busy), sum(idle)) + "".join(row("cpu%d" % c, busy[c], idle[c]) for c in range(ncpu)) + rest
open(path, "w").write(text())
fd = os.open(path, os.O_WRONLY)
last = time.monotonic()
while True:
    time.sleep(0.1)
    now = time.monotonic()
    try:
        use = min(max(float(open(path + ".use").read()), 0.0), 1.0)
    except ValueError:
        continue
    ticks = (now - last) * hz
    for c in range(ncpu):
        busy[c] += round(ticks * use)
        idle[c] += round(ticks * (1 - use))
    if meter:
        energy += (idle_w + busy_w * use) * (now - last) * 1e6
        os.pwrite(mfd, b"%d\n" % energy, 0)  # grows only: no stale tail
        mlog.write("%d %d\n" % (time.time_ns(), energy))
    last = now
    os.pwrite(fd, text().encode(), 0)
PY
	pids+=($!)
	for _ in $(seq 50); do [ -s "$1" ] && return 0; sleep 0.1; done
	return 1
}
# with_fake_stat FILE CMD... &: CMD in a private mount namespace where FILE is bound over /proc/stat.
# Run it in the background only: it execs (unshare, sh, then CMD, each in place of the last), so $!
# is CMD's PID and stopping that PID stops CMD (a subshell left in between once leaked collectors
# that ran on after their test).
with_fake_stat() {
	local f=$1
	shift
	exec unshare -m --propagation private sh -c 'mount --bind "$0" /proc/stat && exec "$@"' "$f" "$@"
}

# never_waited LOG LIMIT_MS: from a collector's debug log (--log.level debug), its own time to build
# each snapshot ("snapshot N: ..., X ms;"), which a loop waiting on a slow meter or peer would
# stretch to that peer's timeout, and a loaded machine only by its scheduling: prints
# "N snapshots, the longest X ms", fails when none were logged or one took LIMIT_MS or more.
# (Not the interval between snapshots: on a busy machine that is the scheduler's, not ours.)
never_waited() {
	sed -n 's/.*debug: snapshot [0-9]*: .*, \([0-9.]*\) ms;.*/\1/p' "$1" |
		awk -v lim="$2" '{ n++; if ($1 > w) w = $1 } END { printf "%d snapshots, the longest built in %.1f ms", n, w; exit !(n > 0 && w < lim) }'
}

# own_pids CMD... &: CMD in its own PID namespace with its own /proc (unshare --mount-proc), so that
# a collector there sees only its own processes, never the host's (another job's 10,000): the
# fixture of tests that push or export a store. Run it in the background only: $! is unshare's,
# which ignores SIGTERM while CMD runs; stop CMD, its child (pkill -P $!), as the cleanup does.
own_pids() { exec unshare --pid --fork --mount-proc --kill-child=TERM "$@"; }
# stop_own PID: stop what `own_pids CMD &` runs (PID is unshare's): its child, then waits for
# unshare, which returns the child's status
stop_own() {
	pkill -TERM -P "$1" 2>/dev/null
	wait "$1"
}
# seq_at_least STORE N: the store has its Nth snapshot
seq_at_least() {
	local s
	s=$(store_seq "$1")
	[ -n "$s" ] && [ "$s" -ge "$2" ]
}
# own_until 'CHECK' CMD...: CMD (a collector) in its own PID namespace (own_pids) until CHECK (a
# shell command) succeeds or CMD ends, however late a loaded machine runs it (at most 10 minutes),
# then stopped. Redirect its output as CMD's. Returns CMD's status.
own_until() {
	local check=$1 p
	shift
	own_pids "$@" &
	p=$!
	pids+=($p)
	for _ in $(seq 3000); do
		kill -0 "$p" 2>/dev/null || break
		eval "$check" >/dev/null 2>&1 && break
		sleep 0.2
	done
	stop_own "$p"
}

