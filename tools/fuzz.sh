#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS]: build the libFuzzer targets with clang in
# build-fuzz/ and fuzz, for SECONDS in all (default 60), the snapshot
# decoder (two thirds, from a seed corpus of encoded snapshots) and the
# meters' parsers of sysfs numbers and power model files (one third).
# Exit status non-zero on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}

CC=clang cmake -S . -B build-fuzz -DKEPLER_FUZZ=ON -DKEPLER_BPF=OFF -DKEPLER_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

# fuzz TARGET SECONDS CORPUS MAX_LEN
fuzz() {
	local log=build-fuzz/$1.log rc
	echo "fuzz.sh: fuzzing $1 for ${2}s"
	set +e
	build-fuzz/tests/fuzz/$1 -max_total_time="$2" -max_len="$4" -print_final_stats=1 \
		-artifact_prefix=build-fuzz/ "$3" >"$log" 2>&1
	rc=$?
	set -e
	# libFuzzer's progress lines stay in the log; show the outcome.
	grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY' "$log" || true
	[ $rc -eq 0 ] || echo "fuzz.sh: $1 failed (status $rc); see $log and build-fuzz/crash-*" >&2
	return $rc
}

corpus=build-fuzz/corpus/decode
mkdir -p "$corpus"
build-fuzz/tests/fuzz/make_seeds "$corpus"
meter=build-fuzz/corpus/meter
mkdir -p "$meter"
printf '\x00240422366267\n' >"$meter/energy_uj"
{ printf '\x01'; cat collectd/models/generic-vm.yaml; } >"$meter/generic-vm.yaml"
rc=0
fuzz fuzz_decode $((secs * 2 / 3)) "$corpus" 65536 || rc=$?
fuzz fuzz_meter_input $((secs - secs * 2 / 3)) "$meter" 8192 || rc=$?
exit $rc
