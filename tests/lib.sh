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
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
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
