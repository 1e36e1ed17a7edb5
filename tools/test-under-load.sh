#!/usr/bin/env bash
# tools/test-under-load.sh [N] [CTEST ARGS...]: run the ctest suite of
# build-asan/ N times (default 3) while `stress-ng --cpu 4 --io 1` loads the
# machine, as a busy server or a shared CI machine would, and foreign churn
# runs beside the tests as other jobs do: processes that fork, exec short
# programs and rename themselves (prctl PR_SET_NAME to names the tests use:
# "short", "child", "worker-N") every few milliseconds; prints each run's
# failed tests and ends with "N passed, M failed". Exit status 0 only when
# every run passed. Builds first through tools/test.sh's set-up (no fuzzing).
# Not part of .ci/run (it takes N times the suite); run it after every change
# to a test that depends on timing.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
case $runs in '' | *[!0-9]*) echo "usage: $0 [N] [CTEST ARGS...]" >&2; exit 2 ;; esac

bash tools/setup.sh || exit 1
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKEPLER_SANITIZE=ON >/dev/null || exit 1
cmake --build build-asan -j"$(nproc 2>/dev/null || echo 2)" >/dev/null || exit 1
command -v stress-ng >/dev/null || { echo "test-under-load.sh: stress-ng missing" >&2; exit 1; }

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
logdir=build-asan/under-load
mkdir -p "$logdir"
stress-ng --cpu 4 --io 1 --timeout 0 --quiet &
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
trap 'kill $stress 2>/dev/null; pkill -P $churn 2>/dev/null; kill $churn 2>/dev/null; pkill -f kepler-foreign-churn 2>/dev/null; wait 2>/dev/null' EXIT
sleep 2
passed=0 failed=0
for i in $(seq "$runs"); do
	log=$logdir/run-$i.log
	start=$(date +%s)
	if (cd build-asan && ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@") >"$log" 2>&1; then
		passed=$((passed + 1)); result=passed
	else
		failed=$((failed + 1)); result=FAILED
	fi
	echo "run $i: $result in $(($(date +%s) - start)) s, load average $(cut -d' ' -f1-3 /proc/loadavg) ($log)"
	grep -E '^[0-9]+% tests passed|\*\*\*Failed|Failed +[0-9.]+ sec|\*\*\*Timeout|Not Run|Skipped' "$log" | sed 's/^/    /'
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
