#!/usr/bin/env bash
# Readers follow the store through its life: kepler-stdout --follow,
# kepler-top and the exporter started before the store exists wait for it; when the store is
# deleted and a new collector creates a new one, both reattach and go on
# with the new store's snapshots (before: they served the deleted file
# forever, and /healthz blamed the collector).
# Usage: test_store_replaced.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
. "$(dirname "$0")/../lib.sh"
command -v curl >/dev/null || skip "curl missing"
command -v python3 >/dev/null || skip "python3 missing"
store=$tmp/store
run_collector() {
	"$collectd" --store.path "$store" --meter.source fake --informer procfs --monitor.interval "$1" \
		--store.group "" --log.level warn >>"$tmp/c.log" 2>&1 &
	cpid=$!
	pids+=($cpid)
}

"$build/readers/stdout/kepler-stdout" --store.path "$store" --follow --format json \
	>"$tmp/follow.json" 2>"$tmp/follow.log" &
fpid=$!
pids+=($fpid)
# kepler-top on a dumb terminal (script(1) gives it one): one screen per new snapshot, its
# header naming it (with no terminal at all it prints one screen, as --once)
if command -v script >/dev/null; then
	TERM=dumb script -qfec "$build/readers/top/kepler-top --store.path $store 2>$tmp/top.log" "$tmp/top.txt" >/dev/null 2>&1 </dev/null &
	tpid=$!
	pids+=($tpid)
fi
# port 0: the kernel picks a free one, the exporter says which (a random
# port could be taken by another test's connection running in parallel)
"$build/readers/exporter/kepler-exporter" --store.path "$store" --web.listen-address 127.0.0.1:0 \
	>"$tmp/e.log" 2>&1 &
pids+=($!)
port=
for _ in $(seq 100); do
	port=$(sed -n 's|.*started: http://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$tmp/e.log")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || fail "the exporter did not start: $(cat "$tmp/e.log")"
run_collector 100ms # the first store gets 50 snapshots (counted), the second one a second each:
wait_seq "$store" 50 || fail "the first store did not reach 50 snapshots" # the exporter serves the new one
first=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^kepler_snapshot_seq/ {print $2}') # when its seq is below
kill "$cpid"; wait "$cpid"
old_last=$("$build/readers/stdout/kepler-stdout" --store.path "$store" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
rm -rf "$store"
run_collector 1s
# the exporter notices within about a second; a loaded machine may take longer (a bound of 40 of the
# new store's snapshots, counted: past that its seq would pass the old store's 50)
while s=$(store_seq "$store"); [ "${s:-0}" -lt 40 ]; do
	sleep 0.2
	# what the exporter serves, then the new store's newest: never below what was served
	second=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^kepler_snapshot_seq/ {print $2}')
	new_last=$("$build/readers/stdout/kepler-stdout" --store.path "$store" --format json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["seq"])' 2>/dev/null) || continue
	[ -n "$second" ] && [ "$second" -le "$new_last" ] && [ "$second" -lt "$old_last" ] && break
done
health=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
echo "exporter: seq $first in the first store (its last $old_last), $second in the new one (its newest $new_last); /healthz $health"
# serving the new store: its seq is one the new store has, and below the old store's last
[ -n "$first" ] && [ -n "$second" ] && [ "$second" -le "$new_last" ] && [ "$second" -lt "$old_last" ] &&
	[ "$health" = 200 ] && ok "the exporter waited for the store, then followed the new one" ||
	fail "exporter: $(tail -3 "$tmp/e.log")"
grep -q "the store '$store' was \(removed\|replaced by a new one\)" "$tmp/e.log" ||
	fail "the exporter did not say the store went: $(cat "$tmp/e.log")"
# until it has printed a snapshot of the new store (its seq goes back), or 10 s
for _ in $(seq 50); do
	python3 -c 'import json,sys; s=[json.loads(l)["seq"] for l in open(sys.argv[1])]; sys.exit(0 if any(b < a for a, b in zip(s, s[1:])) else 1)' \
		"$tmp/follow.json" 2>/dev/null && break
	sleep 0.2
done
kill "$fpid"
wait "$fpid"
st=$?
python3 - "$tmp/follow.json" <<'PY'
import json, sys
seqs = [json.loads(l)['seq'] for l in open(sys.argv[1])]
print(f"kepler-stdout --follow printed seqs {seqs}")
back = sum(1 for a, b in zip(seqs, seqs[1:]) if b < a)
sys.exit(0 if back == 1 else 1)  # the old store's snapshots, then the new one's from its start
PY
[ $? = 0 ] && [ "$st" = 0 ] && ok "kepler-stdout --follow waited for the store, then followed the new one" ||
	fail "kepler-stdout --follow (status $st): $(cat "$tmp/follow.log")"
# kepler-top: its screens' snapshot numbers go back once, to the new store's, and on
if [ -n "${tpid:-}" ]; then
	top_seqs() { tr -d '\r' <"$tmp/top.txt" | sed -n 's/^kepler-top .* snapshot \([0-9]*\) .*/\1/p' | tr '\n' ' '; }
	went_back() { python3 -c 'import sys; s=[int(x) for x in sys.argv[1:]]; sys.exit(0 if any(b < a for a, b in zip(s, s[1:])) else 1)' $(top_seqs); }
	for _ in $(seq 100); do went_back && break; sleep 0.2; done
	kill "$tpid"
	wait "$tpid"
	went_back && ok "kepler-top followed the new store (screens of snapshots $(top_seqs | cut -c1-100)...)" ||
		fail "kepler-top did not follow the new store: snapshots $(top_seqs); $(tail -c 300 "$tmp/top.log")"
else
	echo "SKIP: kepler-top's part (no script(1) to give it a terminal)"
fi
finish store_replaced
