#!/usr/bin/env bash
# store.sync: what each commit waits for, as the system calls show it
# (strace). full: an fdatasync per commit and the meta page written through
# a descriptor opened O_DSYNC (LMDB's default); data: the fdatasync, the
# meta page written plainly; none: neither. Each store then reads whole.
# Usage: test_store_sync.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
. "$(dirname "$0")/../lib.sh"
command -v strace >/dev/null || skip "strace missing (tools/setup.sh installs it)"
strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace refused)"
for mode in full data none; do
	# until the store holds 6 commits however slowly a loaded machine runs
	# the traced collector (no fixed window: a busy machine gave 1 to 3)
	strace -f -y -e trace=openat,fdatasync,pwrite64 -o "$tmp/$mode.trace" \
		"$collectd" --store.path "$tmp/$mode" --meter.source fake --informer procfs \
		--monitor.interval 200ms --store.group "" --log.level warn --store.sync "$mode" 2>"$tmp/$mode.log" &
	tracer=$!
	for _ in $(seq 600); do
		seq=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/$mode" --format json 2>/dev/null |
			jq -r '.seq' 2>/dev/null | head -1)
		[ -n "$seq" ] && [ "$seq" -ge 6 ] && break
		kill -0 $tracer 2>/dev/null || break
		sleep 0.2
	done
	# the collector, not strace: it stops on SIGINT and strace ends with it
	pkill -INT -P $tracer 2>/dev/null || kill -INT $tracer 2>/dev/null
	wait $tracer
	# descriptors of data.mdb opened O_DSYNC, then the writes through them
	dsync_fds=$(grep 'data.mdb' "$tmp/$mode.trace" | grep 'openat(' | grep O_DSYNC |
		sed -n 's/.*= \([0-9]*\)<.*/\1/p' | sort -u | tr '\n' ' ')
	syncs=$(grep -c 'fdatasync(' "$tmp/$mode.trace")
	writes=$(grep -c 'pwrite64(' "$tmp/$mode.trace")
	dsync_writes=0
	for fd in $dsync_fds; do
		dsync_writes=$((dsync_writes + $(grep -c "pwrite64($fd<" "$tmp/$mode.trace")))
	done
	commits=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/$mode" --format json 2>/dev/null |
		jq -r '.seq' 2>/dev/null | head -1)
	echo "$mode: $syncs fdatasync, $writes pwrite64 ($dsync_writes through O_DSYNC), last seq ${commits:-none}"
	[ -n "$commits" ] && [ "$commits" -ge 5 ] || fail "$mode: the store does not read whole after the run"
	case $mode in
	full)
		[ "$syncs" -ge 5 ] && [ "$dsync_writes" -ge 5 ] && ok "full: data synced and the meta page written O_DSYNC" ||
			fail "full: want an fdatasync and an O_DSYNC meta write per commit" ;;
	data)
		[ "$syncs" -ge 5 ] && [ "$dsync_writes" -eq 0 ] && [ "$writes" -ge 5 ] &&
			ok "data: data synced, the meta page written and left to the kernel" ||
			fail "data: want an fdatasync per commit and plain meta writes" ;;
	none)
		[ "$syncs" -eq 0 ] && [ "$dsync_writes" -eq 0 ] && [ "$writes" -ge 5 ] && ok "none: nothing waited for" ||
			fail "none: want no fdatasync and no O_DSYNC write" ;;
	esac
done
"$collectd" --store.path "$tmp/x" --store.sync sometimes --meter.source fake 2>"$tmp/bad.log"
rc=$?
[ "$rc" -ne 0 ] && grep -q "store.sync" "$tmp/bad.log" && ok "an unknown store.sync is refused: $(head -1 "$tmp/bad.log")" ||
	fail "an unknown store.sync was not refused (rc $rc)"
finish store_sync
