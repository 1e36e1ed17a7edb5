#!/usr/bin/env bash
# kepler-exporter under load, against real HTTP on loopback.
#   bench_exporter.sh BUILD_DIR load     the load test (ctest): wrk at 64
#        connections for 30 s on a 10,000-process snapshot, with 50 idle
#        connections held open: zero errors, RSS bounded, others served.
#   bench_exporter.sh BUILD_DIR bench|kepler|process-exporter
#        figures for docs/performance.md (bench: both):
#        scrape latency p50/p99 and scrapes/s for 1,000 and 10,000
#        processes (plain and gzip), and prometheus-process-exporter
#        reporting the same number of live processes, one group each.
set -uo pipefail
build=$1
mode=${2:-bench}
exporter=$build/readers/exporter/kepler-exporter
probe=$build/tests/store_probe
command -v wrk >/dev/null || { echo "SKIP: wrk missing (tools/setup.sh installs it)"; exit 77; }
. "$(dirname "$0")/../lib.sh"
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# exporter_on N: a store with one snapshot of N processes and an exporter on it; sets $port $epid
exporter_on() {
	"$probe" write "$tmp/s$1" 1 nogroup "$1" >/dev/null 2>&1 || { fail "store_probe write $1"; return 1; }
	"$exporter" --store.path "$tmp/s$1" --web.listen-address 127.0.0.1:0 >"$tmp/e$1.log" 2>&1 &
	epid=$!
	pids+=($epid)
	for _ in $(seq 100); do
		port=$(sed -n 's|.*started: http://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$tmp/e$1.log")
		[ -n "$port" ] && grep -q '^kepler_snapshot_seq' <<<"$(curl -s "http://127.0.0.1:$port/metrics")" && return 0
		sleep 0.1
	done
	fail "exporter on $1 processes did not serve: $(cat "$tmp/e$1.log")"
	return 1
}

# wrk_line LABEL URL CONNS SECONDS [HEADER]: "p50 p99 req/s errors"
wrk_run() {
	local out
	out=$(wrk -t"$(( $3 < 2 ? 1 : 2 ))" -c"$3" -d"$4"s --timeout 10s --latency ${5:+-H "$5"} "$2" 2>&1)
	local p50 p99 rps errs
	p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
	errs=$( (grep -E 'Socket errors|Non-2xx' <<<"$out" || true) | tr '\n' ' ')
	echo "$p50 $p99 $rps ${errs:-none}"
}

if [ "$mode" = load ]; then
	# ASan builds keep freed memory in a quarantine (256 MB by default), which
	# would read as growth: keep it small so that RSS means something there too
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1
	exporter_on 10000 || exit 1
	url=http://127.0.0.1:$port/metrics
	size=$(curl -s "$url" | wc -c)
	gz=$(curl -s -H 'Accept-Encoding: gzip' "$url" | wc -c)
	base=$(rss_kib $epid)
	for i in $(seq 50); do exec {fd}<>/dev/tcp/127.0.0.1/$port; idle+=($fd); done
	# errors are what the exporter does wrong (a reset, a non-2xx): how slow a scrape gets is the
	# machine's, printed, never a deadline (on a saturated 2-CPU machine 64 of them took up to 10 s)
	wrk -t2 -c64 -d30s --timeout 120s "$url" >"$tmp/wrk.out" 2>&1 &
	wpid=$!
	sleep 15
	code=$(curl -s -m 60 -o /dev/null -w '%{http_code} %{time_total}' "$url")
	wait $wpid
	for fd in "${idle[@]}"; do exec {fd}>&-; done
	cat "$tmp/wrk.out" | sed 's/^/  wrk: /' | grep -v '^  wrk: *$'
	reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk.out")
	# wrk counts a "timeout" when a latency does not fit its 120 s histogram: in a
	# 30 s run only a wall-clock step (gettimeofday under a loaded VM) makes one, so
	# timeouts are printed above but are not the exporter's errors; resets are
	sockerr=$(sed -n 's/.*Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\),.*/\1 \2 \3/p' "$tmp/wrk.out")
	if grep -q 'Non-2xx' "$tmp/wrk.out" || { [ -n "$sockerr" ] && [ "$sockerr" != "0 0 0" ]; } ||
		[ "${reqs:-0}" -lt 10 ]; then
		fail "errors under load: $(grep -E 'Socket errors|Non-2xx|requests in' "$tmp/wrk.out")"
	else
		ok "64 connections for 30 s on a 10,000-process snapshot ($size bytes, $gz gzipped): $reqs scrapes, no reset and no non-2xx$(grep -o ', timeout [1-9][0-9]*' "$tmp/wrk.out")"
	fi
	[ "${code%% *}" = 200 ] && ok "a scrape during the load, beside 50 idle connections: $code s" ||
		fail "scrape beside idle connections: $code"
	after=$(rss_kib $epid) peak=$(hwm_kib $epid)
	# bounded: the rendering plus at most a few copies in flight, not growth with requests
	[ "$peak" -lt $((base + 4 * size / 1024 + 65536)) ] && [ "$after" -lt $((base + 2 * size / 1024 + 65536)) ] &&
		ok "RSS $((base / 1024)) MiB before, $((after / 1024)) MiB after, peak $((peak / 1024)) MiB" ||
		fail "RSS grew: $base KiB before, $after KiB after, peak $peak KiB"
	exit $((fails > 0))
fi

[ "$mode" = process-exporter ] && kepler_counts="" || kepler_counts="1000 10000"
[ -n "$kepler_counts" ] && echo "kepler-exporter (cached scrapes; 1 connection for latency, 8 for throughput, 10 s each):"
for n in $kepler_counts; do
	exporter_on "$n" || continue
	url=http://127.0.0.1:$port/metrics
	size=$(curl -s "$url" | wc -c)
	gz=$(curl -s -H 'Accept-Encoding: gzip' "$url" | wc -c)
	read -r p50 p99 _ e1 < <(wrk_run lat "$url" 1 10)
	read -r _ _ rps e2 < <(wrk_run tput "$url" 8 10)
	read -r g50 g99 _ e3 < <(wrk_run glat "$url" 1 10 "Accept-Encoding: gzip")
	read -r _ _ grps e4 < <(wrk_run gtput "$url" 8 10 "Accept-Encoding: gzip")
	printf '  %5d processes: plain %s bytes: p50 %s p99 %s, %s scrapes/s; gzip %s bytes: p50 %s p99 %s, %s scrapes/s; errors: %s %s %s %s; RSS %s MiB\n' \
		"$n" "$size" "$p50" "$p99" "$rps" "$gz" "$g50" "$g99" "$grps" "$e1" "$e2" "$e3" "$e4" $(( $(hwm_kib $epid) / 1024 ))
	kill $epid; wait $epid 2>/dev/null
done

[ "$mode" = kepler ] && exit $((fails > 0))
if ! command -v prometheus-process-exporter >/dev/null; then
	echo "prometheus-process-exporter missing: no comparison"
	exit $((fails > 0))
fi
cat >"$tmp/pe.yml" <<'YML'
process_names:
  - name: "{{.Comm}}-{{.PID}}"
    cmdline: ['.+']
YML
echo "prometheus-process-exporter, one group per process (same live processes, same wrk settings):"
for n in 1000 10000; do
	sleepers=()
	for i in $(seq "$n"); do sleep 600 & sleepers+=($!); done
	while [ "$(pgrep -c -x sleep)" -lt "$n" ]; do sleep 1; done
	pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	prometheus-process-exporter -config.path "$tmp/pe.yml" -threads=false -gather-smaps=false \
		-web.listen-address 127.0.0.1:$pport >"$tmp/pe.log" 2>&1 &
	ppid=$!
	pids+=($ppid)
	url=http://127.0.0.1:$pport/metrics
	# it reads every process before it listens
	for _ in $(seq 240); do curl -s -o /dev/null -m 60 "$url" && break; sleep 0.5; done
	curl -s -m 60 "$url" >/dev/null
	size=$(curl -s -m 60 "$url" | wc -c)
	read -r p50 p99 _ e1 < <(wrk_run lat "$url" 1 10)
	read -r _ _ rps e2 < <(wrk_run tput "$url" 8 10)
	printf '  %5d processes: plain %s bytes: p50 %s p99 %s, %s scrapes/s; errors: %s %s\n' \
		"$n" "$size" "$p50" "$p99" "$rps" "$e1" "$e2"
	kill $ppid; wait $ppid 2>/dev/null
	kill "${sleepers[@]}" 2>/dev/null
	wait "${sleepers[@]}" 2>/dev/null
done
exit $((fails > 0))
