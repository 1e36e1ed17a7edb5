#!/usr/bin/env bash
# tools/test.sh: install what is needed, build with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/, run every test with ctest, build
# as the package does (Release, build-release/), check the Kubernetes
# manifests and the Helm chart with the real helm and kubectl
# (tools/test-k8s-manifests.sh), rehearse a Kubernetes node under podman
# with the chart's DaemonSet (tools/test-node.sh; KEPLER_NODE_REHEARSAL=0
# skips), then fuzz
# the parsers of untrusted input for KEPLER_FUZZ_SECONDS (default 60;
# 0 skips). Every step runs even when an earlier one failed (only a failed
# set-up or build stops it: there is nothing to test), and the summary at the
# end names each step that failed and how long each took. The configure's
# and the build's output go to build-asan/test-configure.log and
# test-build.log (their tail shown when they fail). Exit status 0 when all passed, else 1.
# Extra arguments go to ctest (e.g. -R config, -V).
set -uo pipefail
cd "$(dirname "$0")/.."

failed=() times=()
start_all=$SECONDS
echo "test.sh: about 15 minutes on a 2-core machine (14 min at 7b19488); tools/setup.sh first installs"
echo "test.sh: Debian packages (compilers, libraries, podman, runc, debootstrap, prometheus, ...) and pinned npm tools"
# step NAME COMMAND...: run it, its elapsed time said, remember a failure, go on
step() {
	local name=$1 rc t0=$SECONDS
	shift
	echo "test.sh: == $name (at $((SECONDS - start_all)) s)"
	"$@"
	rc=$?
	times+=("$name $((SECONDS - t0)) s")
	if [ $rc -eq 0 ]; then
		echo "test.sh: $name passed in $((SECONDS - t0)) s"
	else
		failed+=("$name (status $rc)")
		echo "test.sh: $name failed (status $rc) after $((SECONDS - t0)) s" >&2
	fi
	return $rc
}
summary() {
	echo "test.sh: $((SECONDS - start_all)) s in all: ${times[*]/%/;}"
	if [ ${#failed[@]} -eq 0 ]; then
		echo "test.sh: every step passed"
		exit 0
	fi
	echo "test.sh: ${#failed[@]} step(s) failed:" >&2
	printf '  - %s\n' "${failed[@]}" >&2
	exit 1
}
# quiet COMMAND...: its output into build-asan/test-LOG.log (NAME: the command's first word),
# the last 40 lines shown when it fails
quiet() {
	local log=build-asan/test-$1.log
	shift
	mkdir -p build-asan
	"$@" >"$log" 2>&1 && return 0
	local rc=$?
	echo "test.sh: the last lines of $log:" >&2
	tail -40 "$log" >&2
	return $rc
}

jobs=$(nproc 2>/dev/null || echo 2)
configure() { cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKEPLER_SANITIZE=ON >/dev/null; }
step setup bash tools/setup.sh || summary
step configure quiet configure configure || summary
step build quiet build cmake --build build-asan -j"$jobs" || summary

# LSan is part of ASan: leaks fail the tests; UBSan aborts on the first report.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run_ctest() { (cd build-asan && ctest --output-on-failure -j"$jobs" "$@"); }
step ctest run_ctest "$@"

# The optimized build the package and the image make: -O2 warns where -O0 does not
# (maybe-uninitialized), and warnings are errors.
release() {
	mkdir -p build-release
	cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DKEPLER_TESTS=OFF >build-release/log 2>&1 &&
		cmake --build build-release -j"$jobs" >>build-release/log 2>&1 ||
		{ grep -E -A3 'error|warning' build-release/log | head -40; return 1; }
	release_prefetches
}
# The per-process loops' prefetch hints are still in the optimized collector:
# GCC 12 once emitted nothing for them (an inline function whose only statement
# was a prefetch), which cost 15 % at 10,000 processes (docs/performance.md).
release_prefetches() {
	local f n
	command -v objdump >/dev/null || { echo "test.sh: no objdump: the prefetch check is skipped"; return 0; }
	for f in ledger_gen_prefetch_slot ebpf_collect kepler_informer_resolve; do
		n=$(objdump -d --no-show-raw-insn build-release/collectd/kepler-collectd |
			awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on && /\tprefetch/ { n++ } END { print n + 0 }')
		[ "$n" -ge 1 ] || { echo "test.sh: the release collector's $f has no prefetch left"; return 1; }
	done
}
step release-build release

# The kustomize manifests and the Helm chart: rendered by the real kubectl and
# helm (pinned), validated offline, compared with each other, their
# configurations read by the binaries just built (issue 61).
step k8s-manifests bash tools/test-k8s-manifests.sh build-asan

# A Kubernetes node rehearsed under podman with the project's image (issue 45);
# where podman cannot run, it says why and the step is a visible skip.
node_rehearsal() {
	local rc
	bash tools/test-node.sh
	rc=$?
	[ $rc -eq 77 ] && { echo "test.sh: node rehearsal skipped (the reason is above)"; return 0; }
	return $rc
}
if [ "${KEPLER_NODE_REHEARSAL:-1}" = 1 ]; then
	step node-rehearsal node_rehearsal
else
	echo "test.sh: node rehearsal skipped (KEPLER_NODE_REHEARSAL=0)"
fi

fuzz_secs=${KEPLER_FUZZ_SECONDS:-60}
if [ "$fuzz_secs" -gt 0 ]; then
	step fuzz tools/fuzz.sh "$fuzz_secs"
else
	echo "test.sh: fuzzing skipped (KEPLER_FUZZ_SECONDS=0)"
fi
summary
