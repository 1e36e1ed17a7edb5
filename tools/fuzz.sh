#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: build the libFuzzer targets with clang in
# build-fuzz/ and fuzz the snapshot decoder for SECONDS (default 60) from a
# seed corpus of encoded snapshots. Exit status non-zero on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}

CC=clang cmake -S . -B build-fuzz -DKEPLER_FUZZ=ON -DKEPLER_BPF=OFF -DKEPLER_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
corpus=build-fuzz/corpus/decode
mkdir -p "$corpus"
build-fuzz/tests/fuzz/make_seeds "$corpus"
echo "fuzz.sh: fuzzing the snapshot decoder for ${secs}s"
log=build-fuzz/fuzz_decode.log
set +e
build-fuzz/tests/fuzz/fuzz_decode -max_total_time="$secs" -max_len=65536 -print_final_stats=1 \
	-artifact_prefix=build-fuzz/ "$corpus" >"$log" 2>&1
rc=$?
set -e
# libFuzzer's progress lines stay in the log; show the outcome.
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY' "$log" || true
[ $rc -eq 0 ] || echo "fuzz.sh: the fuzzer failed (status $rc); see $log and build-fuzz/crash-*" >&2
exit $rc
