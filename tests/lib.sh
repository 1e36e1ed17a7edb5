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
# wait_metrics PORT FILE: until /metrics on PORT holds a snapshot (10 s at most), saved in FILE
wait_metrics() {
	for _ in $(seq 100); do
		curl -sf -o "$2" "http://127.0.0.1:$1/metrics" && grep -q '^kepler_snapshot_seq{' "$2" && return 0
		sleep 0.1
	done
	return 1
}
