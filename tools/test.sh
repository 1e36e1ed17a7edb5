#!/usr/bin/env bash
# tools/test.sh: install what is needed, build with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/, run every test with ctest, then
# fuzz the snapshot decoder for KEPLER_FUZZ_SECONDS (default 60; 0 skips).
# Extra arguments go to ctest (e.g. -R config, -V).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/setup.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKEPLER_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
# LSan is part of ASan: leaks fail the tests; UBSan aborts on the first report.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs" "$@")

fuzz_secs=${KEPLER_FUZZ_SECONDS:-60}
if [ "$fuzz_secs" -gt 0 ]; then
	tools/fuzz.sh "$fuzz_secs"
fi
