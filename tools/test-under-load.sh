#!/usr/bin/env bash
# tools/test-under-load.sh [N]: run the whole test command, tools/test.sh, N
# times in a row (default 2) on a machine loaded as a busy shared server is:
#   - stress-ng --cpu 8 --io 2 (on this project's 2 cores: a load of 10+);
#   - foreign churn: processes that fork, exec short programs and rename
#     themselves (prctl PR_SET_NAME to names the tests use: "short", "child",
#     "worker-N") every few milliseconds, as other jobs do;
#   - 10,000 sleeping processes of another job (KEPLER_SLEEPERS to change),
#     which any test that looked at the host's processes would meet.
# Prints each run's steps and times, and ends with "N passed, M failed" and
# the load average. Exit status 0 only when every run passed. Not part of
# .ci/run (it takes N times the test command and loads the machine); run it
# after a change to a test that depends on timing, and before closing an
# issue that touches them. Logs: build-asan/under-load/run-N.log.
# Raises kernel.pid_max to 131072 while it runs (the sleepers and the tests'
# own processes), and puts it back.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-2}
sleepers=${KEPLER_SLEEPERS:-10000}
case $runs in '' | *[!0-9]*) echo "usage: $0 [N]" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "test-under-load.sh: needs root (as tools/test.sh)" >&2; exit 2; }

bash tools/setup.sh || exit 1
command -v stress-ng >/dev/null || { echo "test-under-load.sh: stress-ng missing" >&2; exit 1; }
logdir=build-asan/under-load
mkdir -p "$logdir"

pid_max=$(cat /proc/sys/kernel/pid_max)
[ "$pid_max" -lt 131072 ] && echo 131072 >/proc/sys/kernel/pid_max
stress-ng --cpu 8 --io 2 --timeout 0 --quiet &
stress=$!
# foreign churn: four processes that rename themselves, fork and exec beside the tests
python3 -c 'import ctypes, os, random, time  # kepler-foreign-churn
libc = ctypes.CDLL(None)
for _ in range(2):
    os.fork()
while True:
    libc.prctl(15, ctypes.c_char_p(random.choice([b"short", b"child", b"worker-%d" % random.randint(0, 9)])), 0, 0, 0)
    if random.random() < 0.05:
        os.system("true")
    time.sleep(0.002)' &
churn=$!
# another job's sleeping processes: sleep(1) each (a few hundred KiB of its own), in their own group
setsid bash -c 'for i in $(seq '"$sleepers"'); do sleep 1000000 & done; wait' </dev/null >/dev/null 2>&1 &
sleepers_pid=$!
stop() {
	kill "$stress" 2>/dev/null
	pkill -P "$churn" 2>/dev/null
	kill "$churn" 2>/dev/null
	pkill -f kepler-foreign-churn 2>/dev/null
	kill -TERM -- -"$sleepers_pid" 2>/dev/null # the sleepers' process group
	wait 2>/dev/null
	echo "$pid_max" >/proc/sys/kernel/pid_max
}
trap stop EXIT
# until the sleepers are all there (counted, however slowly a loaded machine forks them)
for _ in $(seq 600); do
	[ "$(pgrep -c -g "$sleepers_pid" -x sleep)" -ge "$sleepers" ] && break
	sleep 1
done
echo "test-under-load.sh: stress-ng --cpu 8 --io 2, foreign churn, $(pgrep -c -g "$sleepers_pid" -x sleep) sleeping processes; load average $(cut -d' ' -f1-3 /proc/loadavg); $(ls /proc | grep -c '^[0-9]') processes on the host"

passed=0 failed=0
for i in $(seq "$runs"); do
	log=$logdir/run-$i.log
	start=$(date +%s)
	if bash tools/test.sh >"$log" 2>&1; then
		passed=$((passed + 1)); result=passed
	else
		failed=$((failed + 1)); result=FAILED
	fi
	echo "run $i: $result in $(($(date +%s) - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg) ($log)"
	grep -E '^test.sh: [0-9]+ s in all|tests passed|\*\*\*Failed|\*\*\*Timeout|Not Run|Skipped|step\(s\) failed|^  - ' "$log" | sed 's/^/    /'
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
