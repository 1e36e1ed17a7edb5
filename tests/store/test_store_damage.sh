#!/usr/bin/env bash
# A damaged store gives errors, never signals: data.mdb truncated at seven
# sizes (0, 100 bytes, one page, two pages, half, one page short, one byte
# short; below two pages the collector keeps the file aside and begins a
# new store, as nothing in it can be read);
# kepler-stdout, kepler-dataset and kepler-collectd each exit with a status
# below 128 and a message (the store damaged, with how to recover; or not
# initialized yet for a file without its two meta pages, which a collector
# killed while creating the store leaves and the next one repairs), and the
# exporter stays up and says so in /healthz. Then the same under running
# binaries, at six sizes again: the file truncated while a collector, an
# exporter and kepler-stdout --follow have it open and mapped. And --store.move-damaged,
# which keeps the damaged file aside and begins a new store. Then LMDB's meta
# pages zeroed under running binaries: the newest one (the collector restores
# it from the other, nothing stops), then both (no process aborts; the
# collector stops saying so; --store.move-damaged begins a new store). And
# lock.mdb truncated or overwritten under the running collector: it goes on;
# at rest, the same: it sets the file up anew. And data.mdb
# deleted under it: noticed, said once, a new one made. And random bytes over
# every k-th page at rest: no signal; the collector refuses (or with
# --store.move-damaged begins a new store), readers say so.
# Usage: test_store_damage.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
. "$(dirname "$0")/../lib.sh"
command -v curl >/dev/null || skip "curl missing"

"$collectd" --store.path "$tmp/s" --meter.source fake --informer procfs --monitor.interval 100ms \
	--store.group "" --log.level warn >"$tmp/c.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$tmp/s" 25 || fail "the collector made no 25 snapshots"
kill "$cpid"; wait "$cpid"
size=$(stat -c %s "$tmp/s/data.mdb")
"$build/readers/stdout/kepler-stdout" --store.path "$tmp/s" >/dev/null || fail "the whole store does not read"
port=$((20000 + RANDOM % 20000))
for cut in 0 100 4096 8192 $((size / 2 / 4096 * 4096)) $((size - 4096)) $((size - 1)); do
	rm -rf "$tmp/c"
	cp -a "$tmp/s" "$tmp/c" # as the collector left it: its owner and group
	truncate -s "$cut" "$tmp/c/data.mdb"
	if [ "$cut" -lt 8192 ]; then want="not initialized yet"; else want="is damaged: data.mdb is $cut bytes"; fi
	for cmd in "$build/readers/stdout/kepler-stdout --store.path $tmp/c" \
		"$build/readers/dataset/kepler-dataset --store.path $tmp/c --level process" \
		"$collectd --store.path $tmp/c --meter.source fake --informer procfs --store.group '' --monitor.interval 100ms"; do
		name=$(basename "${cmd%% *}")
		timeout 120 bash -c "$cmd" >/dev/null 2>"$tmp/err" &
		p=$!
		# readers end by themselves, and a collector refuses a damaged store, however
		# late a loaded machine runs them; a collector runs on a file too short for LMDB's
		# two meta pages (it keeps a non-empty one aside and begins a new store): stopped
		# once it has started (its signal handlers in place: it exits 0 on SIGINT)
		runs=false
		[ "$name" = kepler-collectd ] && [ "$cut" -lt 8192 ] && runs=true
		for _ in $(seq 1800); do
			kill -0 "$p" 2>/dev/null || break
			$runs && grep -q "started: informer" "$tmp/err" && break
			sleep 0.1
		done
		$runs && kill -INT "$p" 2>/dev/null
		wait "$p"
		st=$?
		if [ "$st" -ge 128 ]; then
			fail "cut at $cut: $name ended with status $st: $(head -c 200 "$tmp/err")"
		elif $runs && [ "$st" -ne 0 ]; then
			fail "cut at $cut: the collector did not begin a new store (status $st): $(grep -v ' info: ' "$tmp/err" | head -c 300)"
		elif $runs && [ "$cut" -gt 0 ] && ! { grep -q "data file was $cut bytes, too short for its two meta pages: nothing in it could be read; kept as" "$tmp/err" &&
			[ "$(stat -c %s "$tmp/c"/data.mdb.damaged-*)" = "$cut" ]; }; then
			fail "cut at $cut: the collector did not keep the short file aside saying so: $(grep -v ' info: ' "$tmp/err" | head -c 300)"
		elif ! $runs && ! grep -q "$want" "$tmp/err"; then
			fail "cut at $cut: $name (status $st) did not say '$want': $(head -c 300 "$tmp/err")"
		fi
	done
	"$build/readers/exporter/kepler-exporter" --store.path "$tmp/c" --web.listen-address "127.0.0.1:$port" \
		>"$tmp/e.log" 2>&1 &
	e=$!
	for _ in $(seq 600); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
	body=$(curl -s "http://127.0.0.1:$port/healthz")
	curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
	if ! kill -0 "$e" 2>/dev/null; then
		wait "$e"
		st=$?
		[ "$st" -lt 128 ] || fail "cut at $cut: kepler-exporter died with status $st"
	else
		kill "$e"; wait "$e"
	fi
	[ "$cut" -lt 8192 ] || grep -q "damaged" <<<"$body$(cat "$tmp/e.log")" ||
		fail "cut at $cut: the exporter did not say the store is damaged: $body"
	[ "$cut" -ge 8192 ] || grep -q "snapshot" <<<"$body" ||
		fail "cut at $cut: the exporter does not serve the collector's new store: $body"
	echo "cut at $cut bytes: every binary said so, none died of a signal"
done
ok "a truncated data.mdb at 7 sizes: messages, no signal; below two pages the collector keeps the file aside and begins a new store"

# Random bytes over every k-th page of a stopped store (the meta pages kept): LMDB trusts
# its pages, so the collector walks every tree before its first write (a write on a
# damaged free-page list overruns the heap, which no fault guard catches) and its reads
# and LMDB's own assertions are guarded. For each k: the collector exits 1 saying the
# store is damaged, or runs; with --store.move-damaged it keeps the file aside and begins
# a new store (or, where the damage is met only by a write, stops saying so); readers
# answer or say so. No binary ends by a signal (before: SIGBUS or SIGABRT at start).
damaged_runs=0 moved=0
for k in 2 3 5 7 11 13; do
	for move in "" --store.move-damaged; do
		rm -rf "$tmp/k"
		cp -a "$tmp/s" "$tmp/k"
		python3 - "$tmp/k/data.mdb" "$k" <<'PY'
import os, random, sys
path, k = sys.argv[1], int(sys.argv[2])
random.seed(k)
pages = os.path.getsize(path) // 4096
with open(path, "r+b") as f:
    for pg in range(2, pages):
        if pg % k == 0:
            f.seek(pg * 4096)
            f.write(random.randbytes(4096))
PY
		# it refuses the store (and exits), or starts (said in its log: its signal handlers are in
		# place) and is then stopped by SIGINT (it exits 0); however late a loaded machine gets there
		"$collectd" --store.path "$tmp/k" --meter.source fake --informer procfs \
			--store.group "" --monitor.interval 100ms $move >"$tmp/k.log" 2>&1 &
		c=$!
		for _ in $(seq 1800); do
			kill -0 $c 2>/dev/null || break
			grep -q "started: informer" "$tmp/k.log" && break
			sleep 0.1
		done
		kill -INT $c 2>/dev/null
		wait $c
		st=$?
		if [ $st -ge 128 ]; then
			fail "every ${k}th page damaged${move:+ ($move)}: the collector ended with status $st: $(grep -v ' info: ' "$tmp/k.log" | head -c 300)"
		elif [ $st -ne 0 ] && ! grep -q "damaged" "$tmp/k.log"; then
			fail "every ${k}th page damaged${move:+ ($move)}: the collector exited $st without saying why: $(tail -c 300 "$tmp/k.log")"
		fi
		[ $st -ne 0 ] && damaged_runs=$((damaged_runs + 1))
		if [ -n "$move" ] && ls "$tmp/k"/data.mdb.damaged-* >/dev/null 2>&1; then
			moved=$((moved + 1))
			grep -q "kept as" "$tmp/k.log" || fail "every ${k}th page: the damaged file kept without a word"
		fi
		for cmd in "$build/readers/stdout/kepler-stdout --store.path $tmp/k" \
			"$build/readers/report/kepler-report --store.path $tmp/k --since -1h --by node"; do
			timeout 120 bash -c "$cmd" >/dev/null 2>"$tmp/err"
			st=$?
			[ $st -lt 124 ] || fail "every ${k}th page damaged: $(basename "${cmd%% *}") ended with status $st: $(grep -E "error|ERROR|SUMMARY" "$tmp/err" | head -c 300)"
		done
	done
done
ok "random bytes over every k-th page (k = 2 .. 13): no signal from the collector, kepler-stdout or kepler-report; the collector refused $damaged_runs of 12 runs saying so, --store.move-damaged kept $moved of 6 damaged files aside and began a new store"

# Random bytes over every k-th page of the live store, under a running collector (stopped
# for the write, then let go), an exporter and kepler-stdout --follow: no process ends by a
# signal; the collector goes on or stops saying the store is damaged (with
# --store.move-damaged: keeps the file aside and begins a new store, going on); the exporter
# stays up
random_under_running() { # $1: k, $2: "" or --store.move-damaged
	local rc re rs st c_said="went on"
	rm -rf "$tmp/r"
	# in a directory the dropped collector may write (the image's 2775 root:kepler): it moves files there
	mkdir -p "$tmp/r" && chmod 1777 "$tmp/r"
	"$collectd" --store.path "$tmp/r" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group "" $2 >"$tmp/r-c.log" 2>&1 &
	rc=$!
	pids+=($rc)
	wait_seq "$tmp/r" 20 || fail "random bytes under running: no 20 snapshots"
	"$build/readers/exporter/kepler-exporter" --store.path "$tmp/r" --web.listen-address "127.0.0.1:$port" \
		>"$tmp/r-e.log" 2>&1 &
	re=$!
	pids+=($re)
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/r" --follow --format json >/dev/null 2>"$tmp/r-s.log" &
	rs=$!
	pids+=($rs)
	for _ in $(seq 600); do grep -q kepler_node <<<"$(curl -s "http://127.0.0.1:$port/metrics")" && break; sleep 0.1; done
	kill -STOP "$rc"
	python3 - "$tmp/r/data.mdb" "$1" <<'PY'
import os, random, sys
path, k = sys.argv[1], int(sys.argv[2])
random.seed(100 + k)
pages = os.path.getsize(path) // 4096
with open(path, "r+b") as f:
    for pg in range(2, pages):
        if pg % k == 0:
            f.seek(pg * 4096)
            f.write(random.randbytes(4096))
PY
	before=$(store_seq "$tmp/r" 2>/dev/null)
	kill -CONT "$rc"
	# until the collector has committed 5 more or stopped, however late it runs
	for _ in $(seq 600); do
		kill -0 "$rc" 2>/dev/null || break
		[ "$(store_seq "$tmp/r" 2>/dev/null || echo 0)" -ge $((${before:-0} + 5)) ] && break
		sleep 0.1
	done
	curl -s -o /dev/null "http://127.0.0.1:$port/metrics"
	body=$(curl -s "http://127.0.0.1:$port/healthz")
	if ! kill -0 "$rc" 2>/dev/null; then
		wait "$rc"
		st=$?
		c_said="stopped ($st)"
		[ "$st" -lt 128 ] || fail "every page numbered a multiple of ${1} under running binaries${2:+ ($2)}: the collector ended with status $st: $(grep -v ' info: ' "$tmp/r-c.log" | head -c 300)"
		[ "$st" -eq 0 ] || grep -q "damaged" "$tmp/r-c.log" || fail "every page numbered a multiple of ${1} under running: the collector exited $st without saying why: $(tail -c 300 "$tmp/r-c.log")"
	fi
	if [ -n "$2" ] && ls "$tmp/r"/data.mdb.damaged-* >/dev/null 2>&1; then
		c_said="$c_said, kept the file aside"
		# and went on into a new store: it commits, the exporter and kepler-stdout --follow follow it
		kill -0 "$rc" 2>/dev/null && grep -q "kept as '$tmp/r/data.mdb.damaged-.*'; a new store begins" "$tmp/r-c.log" &&
			wait_seq "$tmp/r" 5 && c_said="$c_said and began a new store, which has $(store_seq "$tmp/r") snapshots" ||
			fail "every page numbered a multiple of ${1} under running ($2): the file kept aside, but no new store: $(grep -v ' info: ' "$tmp/r-c.log" | tail -c 400)"
	elif [ -n "$2" ] && ! kill -0 "$rc" 2>/dev/null; then
		fail "every page numbered a multiple of ${1} under running ($2): the collector stopped without keeping the file aside: $(grep -v ' info: ' "$tmp/r-c.log" | tail -c 400)"
	fi
	for p in $re $rs; do
		if ! kill -0 "$p" 2>/dev/null; then
			wait "$p"
			st=$?
			[ "$st" -lt 128 ] || fail "every page numbered a multiple of ${1} under running binaries: pid $p (a reader) ended with status $st"
		fi
	done
	kill -0 "$re" 2>/dev/null || fail "every page numbered a multiple of ${1} under running binaries: the exporter stopped: $(tail -c 300 "$tmp/r-e.log")"
	kill "$rc" "$re" "$rs" 2>/dev/null
	wait "$rc" "$re" "$rs" 2>/dev/null
	echo "every page numbered a multiple of ${1} under running binaries${2:+ ($2)}: the collector $c_said; the exporter up (/healthz: $(head -c 120 <<<"$body"))"
}
for k in 3 7; do
	random_under_running $k ""
	random_under_running $k --store.move-damaged
done
[ $fails -eq 0 ] && ok "random bytes over every k-th page of the live store (k = 3, 7) under a running collector, an exporter and kepler-stdout --follow: no signal"

# --store.move-damaged: the collector keeps a cut data file aside and begins a new store
for cut in 8192 $((size / 2 / 4096 * 4096)); do
	rm -rf "$tmp/m"
	cp -r "$tmp/s" "$tmp/m"
	truncate -s "$cut" "$tmp/m/data.mdb"
	"$collectd" --store.path "$tmp/m" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group "" --store.move-damaged >"$tmp/m.log" 2>&1 &
	p=$!
	pids+=($p)
	for _ in $(seq 600); do "$build/readers/stdout/kepler-stdout" --store.path "$tmp/m" >/dev/null 2>&1 && break; sleep 0.1; done
	kill "$p"; wait "$p"
	kept=$(ls "$tmp/m"/data.mdb.damaged-* 2>/dev/null)
	if [ -n "$kept" ] && [ "$(stat -c %s "$kept")" = "$cut" ] &&
		grep -q "warn: the store's data file was damaged: kept as '$kept'; a new store begins" "$tmp/m.log" &&
		"$build/readers/stdout/kepler-stdout" --store.path "$tmp/m" >/dev/null; then
		echo "data.mdb cut at $cut: --store.move-damaged kept it ($(basename "$kept")) and began a new store"
	else
		fail "--store.move-damaged, cut at $cut: kept '$kept' ($(stat -c %s "$kept" 2>&1)); log: $(grep -v info "$tmp/m.log" | head -c 600)"
	fi
done
[ $fails -eq 0 ] && ok "--store.move-damaged kept a data.mdb cut at two pages and at half aside and began a new store"

# truncated under running binaries (a collector, an exporter, kepler-stdout
# --follow), at six sizes of the live file
under_running() { # $1: which cut (0 4096 8192 half short1page short1byte)
	local live cut uc ue us body name p log st
	rm -rf "$tmp/u"
	"$collectd" --store.path "$tmp/u" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group "" >"$tmp/u-c.log" 2>&1 &
	uc=$!
	pids+=($uc)
	for _ in $(seq 600); do "$build/readers/stdout/kepler-stdout" --store.path "$tmp/u" >/dev/null 2>&1 && break; sleep 0.1; done
	"$build/readers/exporter/kepler-exporter" --store.path "$tmp/u" --web.listen-address "127.0.0.1:$port" \
		>"$tmp/u-e.log" 2>&1 &
	ue=$!
	pids+=($ue)
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/u" --follow --format json >/dev/null 2>"$tmp/u-s.log" &
	us=$!
	pids+=($us)
	for _ in $(seq 600); do grep -q kepler_node <<<"$(curl -s "http://127.0.0.1:$port/metrics")" && break; sleep 0.1; done
	# a few more snapshots, so the file reaches past its first pages
	wait_seq "$tmp/u" $(($(store_seq "$tmp/u") + 10)) || fail "no 10 more snapshots"
	live=$(stat -c %s "$tmp/u/data.mdb")
	case $1 in
	half) cut=$((live / 2 / 4096 * 4096)) ;;
	short1page) cut=$((live - 4096)) ;;
	short1byte) cut=$((live - 1)) ;;
	*) cut=$1 ;;
	esac
	# A commit in flight when the file is cut writes its pages past the cut, so
	# the file grows back with a hole the size check cannot see: cut again,
	# until a cut lands between commits (the collector then checks before its next)
	local grew tries=0
	while [ $((tries += 1)) -le 20 ]; do
		truncate -s "$cut" "$tmp/u/data.mdb"
		grew=0
		for _ in $(seq 600); do
			kill -0 "$uc" 2>/dev/null || break
			[ "$(stat -c %s "$tmp/u/data.mdb")" -gt "$cut" ] && grew=1 && break
			sleep 0.1
		done
		[ $grew = 1 ] || break
	done
	for _ in $(seq 600); do kill -0 "$uc" 2>/dev/null || break; sleep 0.1; done
	# the follower waits for the store to be repaired or replaced, saying so
	for _ in $(seq 600); do grep -q "waiting for it to be repaired or replaced" "$tmp/u-s.log" && break; sleep 0.1; done
	body=$(curl -s "http://127.0.0.1:$port/healthz")
	if kill -0 "$uc" 2>/dev/null; then
		fail "cut to $cut of $live under it: the collector is still running: $(tail -c 300 "$tmp/u-c.log")"
		kill "$uc"
	fi
	wait "$uc"
	st=$?
	if [ "$st" -ge 128 ] || [ "$st" -eq 0 ] || ! grep -q "is damaged" "$tmp/u-c.log"; then
		fail "cut to $cut of $live under it: the collector ended with status $st: $(tail -c 300 "$tmp/u-c.log")"
	fi
	kill -0 "$us" 2>/dev/null && grep -q "is damaged.*; waiting for it to be repaired or replaced" "$tmp/u-s.log" ||
		fail "cut to $cut of $live under it: kepler-stdout --follow: $(tail -c 300 "$tmp/u-s.log")"
	if ! kill -0 "$ue" 2>/dev/null || ! grep -q "damaged" <<<"$body$(cat "$tmp/u-e.log")"; then
		fail "cut to $cut of $live under it: the exporter: $body $(tail -c 300 "$tmp/u-e.log")"
	fi
	if [ "$1" = half ]; then
		# a new collector, with --store.move-damaged, replaces it: kepler-stdout --follow follows the new store
		"$collectd" --store.path "$tmp/u" --meter.source fake --informer procfs --monitor.interval 100ms \
			--store.group "" --store.move-damaged >"$tmp/u-c2.log" 2>&1 &
		uc=$!
		pids+=($uc)
		for _ in $(seq 1800); do grep -q "the store reads again" "$tmp/u-s.log" && break; kill -0 "$us" 2>/dev/null || break; sleep 0.1; done
		grep -q "the store reads again: following it from snapshot 1$" "$tmp/u-s.log" &&
			ok "kepler-stdout --follow waited on the damaged store, then followed the new one the next collector began" ||
			fail "following the replaced store: $(tail -c 300 "$tmp/u-s.log")"
		kill "$uc"
		wait "$uc"
	fi
	kill "$ue" "$us" 2>/dev/null
	wait "$ue" "$us"
	echo "cut to $cut of $live bytes under running binaries: the collector exited saying so, the exporter and kepler-stdout --follow say so and wait"
}
for cut in 0 4096 8192 half short1page short1byte; do under_running $cut; done
ok "data.mdb cut at 6 sizes under running binaries: messages, no signal; the followers wait for a repair or a new store"

# meta pages damaged under running binaries: LMDB keeps two so that one can be lost
# zero_meta DIR WHICH: WHICH is newest, older or both (the pages LMDB's meta pages are)
zero_meta() {
	python3 - "$1/data.mdb" "$2" <<'PY'
import struct, sys
path, which = sys.argv[1], sys.argv[2]
with open(path, 'r+b') as f:
    head = f.read(160)
    psize = struct.unpack_from('<I', head, 40)[0]
    f.seek(psize)
    t = [struct.unpack_from('<Q', head, 144)[0], struct.unpack_from('<Q', f.read(160), 144)[0]]
    newest = 0 if t[0] > t[1] else 1
    pages = [0, 1] if which == 'both' else [newest] if which == 'newest' else [1 - newest]
    for pg in pages:
        f.seek(pg * psize)
        f.write(b'\0' * psize)
    print(' '.join(f'{pg} (transaction {t[pg]})' for pg in pages))
PY
}
meta_under_running() { # $1: newest or both
	local uc ue us body zeroed st
	rm -rf "$tmp/m2"
	"$collectd" --store.path "$tmp/m2" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group "" >"$tmp/m2-c.log" 2>&1 &
	uc=$!
	pids+=($uc)
	for _ in $(seq 600); do "$build/readers/stdout/kepler-stdout" --store.path "$tmp/m2" >/dev/null 2>&1 && break; sleep 0.1; done
	"$build/readers/exporter/kepler-exporter" --store.path "$tmp/m2" --web.listen-address "127.0.0.1:$port" \
		>"$tmp/m2-e.log" 2>&1 &
	ue=$!
	pids+=($ue)
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/m2" --follow --format json >/dev/null 2>"$tmp/m2-s.log" &
	us=$!
	pids+=($us)
	for _ in $(seq 600); do grep -q kepler_node <<<"$(curl -s "http://127.0.0.1:$port/metrics")" && break; sleep 0.1; done
	# the collector stopped while the pages are zeroed: a commit in between
	# would rewrite one of them (it raced one on a loaded machine)
	kill -STOP "$uc"
	zeroed=$(zero_meta "$tmp/m2" "$1")
	kill -CONT "$uc"
	# until the collector has said what it found (or stopped), however late it runs
	for _ in $(seq 600); do
		[ "$1" = older ] && break
		grep -q "restored from meta page\|both meta pages of data.mdb are damaged" "$tmp/m2-c.log" && break
		kill -0 "$uc" 2>/dev/null || break
		sleep 0.1
	done
	# until the exporter has seen it, however late a loaded machine lets it look (3 min at most: a
	# bound for what never comes; 30 s was not enough once, under load)
	for _ in $(seq 1800); do
		[ "$1" = newest ] && break
		grep -q damaged <<<"$(curl -s "http://127.0.0.1:$port/healthz")" && break
		sleep 0.1
	done
	# both damaged: until the collector, having said so, has also exited (it stops; a loaded machine
	# runs its exit late: 3 min at most)
	for _ in $(seq 1800); do
		[ "$1" = both ] || break
		kill -0 "$uc" 2>/dev/null || break
		sleep 0.1
	done
	body=$(curl -s "http://127.0.0.1:$port/healthz")
	for p in $uc $ue $us; do
		if ! kill -0 "$p" 2>/dev/null; then
			wait "$p"
			st=$?
			[ "$st" -ge 128 ] && fail "meta page(s) $zeroed zeroed: pid $p died of signal $((st - 128))"
		fi
	done
	if [ "$1" = older ]; then
		# the next commit writes that page anyway; every follower rides through until then
		wait_seq "$tmp/m2" $(($(store_seq "$tmp/m2") + 3)) || fail "older meta page zeroed: no more commits"
		kill -0 "$uc" 2>/dev/null && kill -0 "$us" 2>/dev/null && kill -0 "$ue" 2>/dev/null &&
			"$build/readers/stdout/kepler-stdout" --store.path "$tmp/m2" >/dev/null 2>"$tmp/m2-new.log" &&
			ok "the older meta page ($zeroed) zeroed under running binaries: the collector, the exporter and kepler-stdout --follow go on; a new reader opens the store" ||
			fail "older meta page zeroed: $(tail -c 300 "$tmp/m2-s.log") $(cat "$tmp/m2-new.log" 2>/dev/null)"
	elif [ "$1" = newest ]; then
		kill -0 "$uc" 2>/dev/null && kill -0 "$us" 2>/dev/null && kill -0 "$ue" 2>/dev/null &&
			grep -q "was damaged (.*): restored from meta page" "$tmp/m2-c.log" &&
			"$build/readers/stdout/kepler-stdout" --store.path "$tmp/m2" >/dev/null 2>"$tmp/m2-new.log" &&
			ok "the newest meta page ($zeroed) zeroed under running binaries: the collector restored it from the other ($(grep -o 'at most the last commit is lost' "$tmp/m2-c.log" | head -1)); every process goes on; a new reader opens the store" ||
			fail "newest meta page zeroed: $(grep -i meta "$tmp/m2-c.log" | head -2) $(cat "$tmp/m2-new.log" 2>/dev/null)"
	else
		! kill -0 "$uc" 2>/dev/null && grep -q "both meta pages of data.mdb are damaged" "$tmp/m2-c.log" &&
			kill -0 "$ue" 2>/dev/null && grep -q "damaged" <<<"$body" &&
			ok "both meta pages zeroed under running binaries: no process aborts; the collector stops saying so, the exporter stays up saying so" ||
			fail "both meta pages zeroed: collector $(tail -c 300 "$tmp/m2-c.log"); exporter $body"
		"$collectd" --store.path "$tmp/m2" --meter.source fake --informer procfs --monitor.interval 100ms \
			--store.group "" --store.move-damaged --log.level info >"$tmp/m2-m.log" 2>&1 &
		uc=$!
		pids+=($uc)
		for _ in $(seq 600); do
			ls "$tmp/m2"/data.mdb.damaged-* >/dev/null 2>&1 && [ -s "$tmp/m2/data.mdb" ] && break
			kill -0 "$uc" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$uc" 2>/dev/null && ls "$tmp/m2"/data.mdb.damaged-* >/dev/null 2>&1 &&
			ok "--store.move-damaged keeps a store with both meta pages gone aside and begins a new one" ||
			fail "move-damaged after both meta pages: $(tail -c 400 "$tmp/m2-m.log")"
		kill "$uc" 2>/dev/null
		wait "$uc" 2>/dev/null
	fi
	kill "$uc" "$ue" "$us" 2>/dev/null
	wait "$uc" "$ue" "$us" 2>/dev/null
}
meta_under_running older
meta_under_running newest
meta_under_running both

# lock.mdb truncated under the running collector (0 bytes, then half): it gives the file its
# size back, opens the store again and goes on; nothing dies of SIGBUS
rm -rf "$tmp/l"
# (debug: a store refusing again within a minute of its last refusal is said at debug level)
"$collectd" --store.path "$tmp/l" --meter.source fake --informer procfs --monitor.interval 100ms \
	--store.group "" --log.level debug >"$tmp/l-c.log" 2>&1 &
lc=$!
pids+=($lc)
for _ in $(seq 600); do "$build/readers/stdout/kepler-stdout" --store.path "$tmp/l" >/dev/null 2>&1 && break; sleep 0.1; done
lsize=$(stat -c %s "$tmp/l/lock.mdb")
for cut in 0 $((lsize / 2)); do
	before=$(store_seq "$tmp/l")
	truncate -s "$cut" "$tmp/l/lock.mdb"
	# until a later commit reads (or the collector is gone), however late it runs
	for _ in $(seq 300); do
		kill -0 "$lc" 2>/dev/null || break
		after=$(store_seq "$tmp/l")
		[ "${after:-0}" -gt "${before:-0}" ] && break
		sleep 0.2
	done
	if kill -0 "$lc" 2>/dev/null && [ "${after:-0}" -gt "${before:-0}" ]; then
		echo "lock.mdb cut to $cut of $lsize bytes under the collector: it goes on (seq $before -> $after)"
	else
		fail "lock.mdb cut to $cut: collector alive: $(kill -0 "$lc" 2>/dev/null && echo yes || echo no), seq $before -> $after: $(grep -v '^ ' "$tmp/l-c.log" | tail -2)"
	fi
done
# random bytes over it (LMDB's header, mutex and reader table) under the collector: noticed
# before LMDB takes the mutex from it, the store opened again (which sets the file up anew)
for round in 1 2; do
	before=$(store_seq "$tmp/l")
	head -c "$lsize" /dev/urandom | dd of="$tmp/l/lock.mdb" conv=notrunc status=none
	for _ in $(seq 300); do
		kill -0 "$lc" 2>/dev/null || break
		after=$(store_seq "$tmp/l")
		[ "${after:-0}" -gt "${before:-0}" ] && break
		sleep 0.2
	done
	kill -0 "$lc" 2>/dev/null && [ "${after:-0}" -gt "${before:-0}" ] &&
		echo "lock.mdb overwritten with random bytes under the collector ($round): it goes on (seq $before -> $after)" ||
		fail "lock.mdb garbage ($round): collector alive: $(kill -0 "$lc" 2>/dev/null && echo yes || echo no), seq $before -> $after: $(grep -v '^ ' "$tmp/l-c.log" | tail -2)"
done
kill "$lc"
wait "$lc"
st=$?
[ "$st" -lt 128 ] && grep -q "lock.mdb was cut short under the collector (0 of $lsize bytes): its size restored" "$tmp/l-c.log" &&
	grep -q "lock.mdb was overwritten under the collector (its header is no longer LMDB's); the store is opened again" "$tmp/l-c.log" &&
	ok "lock.mdb truncated twice and overwritten twice under the running collector: said, the store opened again, commits go on; it stops cleanly (status $st)" ||
	fail "lock.mdb: the collector ended with status $st: $(grep -v '^ ' "$tmp/l-c.log" | tail -3)"
# and at rest: cut to 0, to 100 bytes, or random bytes: the collector sets it up anew, readers never read it
for how in 0 100 garbage; do
	if [ $how = garbage ]; then head -c "$lsize" /dev/urandom >"$tmp/l/lock.mdb"; else truncate -s $how "$tmp/l/lock.mdb"; fi
	before=$(store_seq "$tmp/l")
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/l" >/dev/null 2>"$tmp/err" || fail "lock.mdb $how at rest: kepler-stdout: $(cat "$tmp/err")"
	"$collectd" --store.path "$tmp/l" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group "" >"$tmp/l-c.log" 2>&1 &
	lc=$!
	pids+=($lc)
	wait_seq "$tmp/l" $((before + 3)) || fail "lock.mdb $how at rest: no commits: $(grep -v '^ ' "$tmp/l-c.log" | tail -2)"
	kill "$lc"
	wait "$lc"
	st=$?
	[ "$st" -eq 0 ] || fail "lock.mdb $how at rest: the collector ended with status $st: $(tail -c 300 "$tmp/l-c.log")"
done
[ $fails -eq 0 ] && ok "lock.mdb cut to 0 or 100 bytes or overwritten at rest: readers read, the collector sets it up anew and commits"

# data.mdb deleted under the running collector (in a directory it may write, as the image's
# 2775 root:kepler): noticed at the next commit, said once, a new file made, commits go on
rm -rf "$tmp/d"
mkdir -p "$tmp/d/store" && chmod 1777 "$tmp/d/store"
"$collectd" --store.path "$tmp/d/store" --meter.source fake --informer procfs --monitor.interval 100ms \
	--store.group "" >"$tmp/d-c.log" 2>&1 &
dc=$!
pids+=($dc)
for _ in $(seq 600); do "$build/readers/stdout/kepler-stdout" --store.path "$tmp/d/store" >/dev/null 2>&1 && break; sleep 0.1; done
rm "$tmp/d/store/data.mdb"
for _ in $(seq 600); do
	grep -q 'data.mdb was deleted under the collector' "$tmp/d-c.log" && [ -n "$(store_seq "$tmp/d/store")" ] && break
	kill -0 "$dc" 2>/dev/null || break
	sleep 0.1
done
sleep 0.5 # a few commits more: the deletion is still said once
if kill -0 "$dc" 2>/dev/null && [ "$(grep -c 'data.mdb was deleted under the collector' "$tmp/d-c.log")" = 1 ] &&
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/d/store" >/dev/null 2>&1; then
	ok "data.mdb deleted under the running collector: said once, a new store made, readers read it"
else
	fail "data.mdb deleted: $(grep -v '^ ' "$tmp/d-c.log" | tail -3)"
fi
kill "$dc"
wait "$dc"
finish store_damage
