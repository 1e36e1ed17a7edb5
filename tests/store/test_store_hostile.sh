#!/usr/bin/env bash
# A hostile member of the store's group cannot harm the collector. As user
# nobody in group nogroup (the store's group here) it tries to truncate,
# scribble on and lock every file in the store while a collector runs, and
# holds what locks it can while the collector restarts: every write is
# refused (readers take no lock and need no write access; lock.mdb and
# writer.lock are the collector's alone, 0600), the locks it can take (on
# data.mdb, which it may read) change nothing, and the collector neither
# dies nor stops committing. Then the case of a store left by an older
# kepler-c whose lock.mdb readers could write: scribbled on by the hostile
# user, who also holds a lock on it as an old reader did, it does not stop a
# collector from starting (the lock file is made anew at every start).
# The collector runs as uid 64999 after start (collector.user), the owner
# of the store; the hostile user is another. Needs root (setpriv, chown);
# skips otherwise.
# Usage: test_store_hostile.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
probe=$build/tests/store_probe
. "$(dirname "$0")/../lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null || ! command -v flock >/dev/null; then
	skip "needs root, setpriv and flock to act as another member of the store's group"
fi
chmod 0755 "$tmp"
store=$tmp/store
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
py=/usr/bin/python3 # Debian's (python3-jsonschema pulls it in), not a per-user one nobody cannot run
[ -x "$py" ] || skip "no $py"
mkdir -m 0777 "$tmp/marks"
# as nobody: open FILE in MODE, take LOCKS on it (flock and/or lockf, shared or exclusive),
# say so in $tmp/marks/NAME, and hold them until killed (at most 60 s)
hold_locks() {
	# setpriv itself (not the as_nobody function, a subshell): $! is the process that holds the locks
	setpriv --reuid=65534 --regid=65534 --clear-groups "$py" -c 'import fcntl, sys, time
f = open(sys.argv[1], sys.argv[2])
for kind in sys.argv[3].split(","):
    op = fcntl.LOCK_EX if kind.endswith("x") else fcntl.LOCK_SH
    (fcntl.flock if kind.startswith("flock") else fcntl.lockf)(f, op | fcntl.LOCK_NB)
open(sys.argv[4], "w").write("held")
time.sleep(60)' "$1" "$2" "$3" "$tmp/marks/$4" &
	pids+=($!)
	for _ in $(seq 50); do [ -s "$tmp/marks/$4" ] && return 0; sleep 0.1; done
	return 1
}

start_collector() {
	"$collectd" --store.path "$store" --meter.source fake --informer procfs --monitor.interval 100ms \
		--store.group nogroup --collector.user 64999 --log.level warn >>"$tmp/c.log" 2>&1 &
	cpid=$!
	pids+=($cpid)
}
newest() { "$probe" read "$store" 2>/dev/null || echo 0; }
# wait until the newest seq passes $1 (up to 30 s); prints it
wait_past() {
	local s
	for _ in $(seq 300); do
		s=$(newest)
		[ "$s" -gt "$1" ] && { echo "$s"; return 0; }
		sleep 0.1
	done
	echo "$s"
	return 1
}

start_collector
s0=$(wait_past 0) || fail "the collector committed nothing"
[ "$(stat -c %a:%G "$store/data.mdb")" = "640:nogroup" ] || fail "data.mdb is $(stat -c %a:%G "$store/data.mdb")"
[ "$(stat -c %a "$store/lock.mdb")" = 600 ] || fail "lock.mdb is $(stat -c %a "$store/lock.mdb")"

# the reader's own view works: it reads
out=$(as_nobody "$probe" read "$store" 2>&1) && [ "$out" -ge "$s0" ] && ok "a group member reads (seq $out)" ||
	fail "a group member cannot read: $out"

# every write it tries is refused
for f in data.mdb lock.mdb writer.lock; do
	as_nobody truncate -s 0 "$store/$f" 2>/dev/null && fail "nobody truncated $f"
	as_nobody bash -c "head -c 128 /dev/zero | tr '\\0' '\\377' | dd of='$store/$f' conv=notrunc status=none" \
		2>/dev/null && fail "nobody scribbled on $f"
	as_nobody flock -n -x "$store/$f" true 2>/dev/null && [ "$f" != data.mdb ] && fail "nobody locked $f"
done
as_nobody touch "$store/intruder" 2>/dev/null && fail "nobody created a file in the store"
as_nobody rm -f "$store/lock.mdb" 2>/dev/null
[ -e "$store/lock.mdb" ] || fail "nobody removed lock.mdb"
ok "truncating, scribbling on and locking every store file as a group member: all refused but a lock on data.mdb"

# hold every lock it can take on data.mdb (flock, and a POSIX record lock) from here on
hold_locks "$store/data.mdb" rb flock_s,lockf_s data-locks || fail "setup: nobody could not lock data.mdb"
s1=$(newest)
s2=$(wait_past $((s1 + 5))) && ok "the collector commits while a group member holds locks ($s1 -> $s2)" ||
	fail "the collector stopped committing under a hostile reader's locks ($s1 -> $s2)"
kill -0 "$cpid" 2>/dev/null || fail "the collector died"

# a restart with the locks still held (the stopped collector commits a last snapshot: wait past that)
kill "$cpid"; wait "$cpid"
s2=$(newest)
start_collector
s3=$(wait_past "$s2") && ok "a restarted collector commits under the hostile reader's locks ($s2 -> $s3)" ||
	fail "a restarted collector did not commit ($s2 -> $s3): $(tail -3 "$tmp/c.log")"

# a store from an older kepler-c: lock.mdb writable by the group, scribbled on and locked
kill "$cpid"; wait "$cpid"
s3=$(newest)
chgrp nogroup "$store/lock.mdb" && chmod 0660 "$store/lock.mdb"
as_nobody bash -c "head -c 128 /dev/zero | tr '\\0' '\\377' | dd of='$store/lock.mdb' conv=notrunc status=none" ||
	fail "setup: could not scribble on an old-style lock.mdb"
hold_locks "$store/lock.mdb" rb lockf_s old-lock || fail "setup: nobody could not lock the old lock.mdb"
start_collector
s4=$(wait_past "$s3") && ok "an old lock.mdb, scribbled on and locked by a reader, does not stop the collector ($s3 -> $s4)" ||
	fail "the collector did not start over a hostile old lock.mdb ($s3 -> $s4): $(tail -3 "$tmp/c.log")"
mode=$(stat -c %a "$store/lock.mdb")
[ "$mode" = 600 ] || fail "the new lock.mdb is $mode"
out=$(as_nobody "$probe" read "$store" 2>&1) && [ "$out" -ge "$s4" ] && ok "the group member still reads (seq $out)" ||
	fail "a group member cannot read after all that: $out"
kill -0 "$cpid" 2>/dev/null || fail "the collector died"
grep -q "error" "$tmp/c.log" && fail "the collector logged errors: $(grep error "$tmp/c.log" | head -3)"
finish store_hostile
