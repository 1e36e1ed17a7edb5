#!/usr/bin/env bash
# PID namespaces, with real ones (unshare --pid --fork --mount-proc):
# 1. The collector inside a PID namespace: eBPF would report host PIDs that
#    its /proc does not show, so it says why and falls back to procfs; the
#    processes then carry the namespace's PIDs, names, executables and the
#    CPU time its /proc shows (the burners are stopped before the last
#    snapshot, so that the figures compare exactly).
# 2. The collector on the host (eBPF when it loads) and a burner that is
#    PID 1 of its own namespace: charged >= 99 % of its kernel CPU time.
# Usage: test_pid_namespace.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root for unshare --pid"
command -v unshare >/dev/null || skip "unshare missing"
command -v python3 >/dev/null || skip "python3 missing"
unshare --pid --fork --mount-proc true 2>/dev/null || skip "unshare --pid --fork --mount-proc does not work here"
cp /bin/dash "$tmp/kepler-nsburn"

# 1. inside the namespace
cat >"$tmp/inside.sh" <<SH
"$tmp/kepler-nsburn" -c 'while :; do :; done' & b1=\$!
"$tmp/kepler-nsburn" -c 'while :; do :; done' & b2=\$!
"$collectd" --store.path "$tmp/store" --meter.source fake --monitor.interval 1s --store.group "" \
	--log.level info >"$tmp/collectd.log" 2>&1 & c=\$!
sleep 4
kill -STOP \$b1 \$b2
sleep 0.2
for p in \$b1 \$b2; do echo "\$p \$(cut -d' ' -f14,15 /proc/\$p/stat)"; done >"$tmp/burners.txt"
sleep 1.5
kill \$c; wait \$c
kill -KILL \$b1 \$b2
wait 2>/dev/null
SH
timeout 60 unshare --pid --fork --mount-proc bash "$tmp/inside.sh" || fail "the run in the namespace failed"
if grep -q "informer ebpf not used, falling back to procfs: /proc shows a PID namespace other than the host's" \
	"$tmp/collectd.log"; then
	ok "inside a PID namespace: eBPF refused with the reason, procfs used"
elif grep -q "informer procfs" "$tmp/collectd.log"; then
	ok "inside a PID namespace: procfs used (eBPF not available here: $(grep -m1 'not used' "$tmp/collectd.log"))"
else
	fail "inside a PID namespace the collector used: $(grep -m1 'informer' "$tmp/collectd.log")"
fi
"$stdout" --store.path "$tmp/store" --format json >"$tmp/last.json" || fail "kepler-stdout: $(cat "$tmp/collectd.log")"
python3 - "$tmp/last.json" "$tmp/burners.txt" "$tmp/kepler-nsburn" "$(getconf CLK_TCK)" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
tick = 1e9 / int(sys.argv[4])
procs = {p['pid']: p for p in s['processes']}
bad = 0
for line in open(sys.argv[2]):
    pid, ut, st = map(int, line.split())
    p = procs.get(pid)
    want = (ut + st) * tick
    if not p:
        print(f"FAIL: namespace PID {pid} not in the snapshot (PIDs there: {sorted(procs)[:10]}...)"); bad += 1; continue
    print(f"pid {pid}: {p['comm']} {p['exe']}, {p['cpu_time_ns']/1e6:.0f} ms; its /proc says {want/1e6:.0f} ms")
    if p['comm'] != 'kepler-nsburn' or p['exe'] != sys.argv[3] or p['cpu_time_ns'] != want:
        print("FAIL: name, executable or CPU time differ from the namespace's /proc"); bad += 1
if max(procs) > 1000:
    print(f"FAIL: a PID above the namespace's few ({max(procs)}): host PIDs reported"); bad += 1
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "the namespace's PIDs, names, executables and CPU time" || fail "processes inside the namespace (above)"

# 2. PID 1 of a namespace, seen from the host
"$collectd" --store.path "$tmp/store2" --meter.source fake --monitor.interval 1s --store.group "" \
	--log.level info >"$tmp/collectd2.log" 2>&1 &
cpid=$!
pids+=($cpid)
sleep 1.5
unshare --pid --fork "$tmp/kepler-nsburn" -c 'while :; do :; done' &
upid=$!
pids+=($upid)
for _ in $(seq 50); do inner=$(pgrep -P "$upid" | head -1); [ -n "$inner" ] && break; sleep 0.1; done
[ -n "${inner:-}" ] || fail "no process in the new namespace"
grep -q "^NSpid:.*[[:space:]]1$" "/proc/$inner/status" || fail "the burner is not PID 1 of its namespace"
sleep 4
kill -STOP "$inner"
sleep 0.2
kernel=$(cut -d' ' -f1 "/proc/$inner/schedstat")
sleep 1.5
kill "$cpid"; wait "$cpid" 2>/dev/null
kill -KILL "$inner" "$upid" 2>/dev/null
wait "$upid" 2>/dev/null
"$stdout" --store.path "$tmp/store2" --format json >"$tmp/last2.json" || fail "kepler-stdout: $(cat "$tmp/collectd2.log")"
python3 - "$tmp/last2.json" "$inner" "$kernel" "$(grep -m1 -o 'informer [a-z]*' "$tmp/collectd2.log")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
pid, kernel = int(sys.argv[2]), int(sys.argv[3])
p = next((p for p in s['processes'] if p['pid'] == pid), None)
if not p:
    print(f"FAIL: host PID {pid} (PID 1 of its namespace) not in the snapshot"); sys.exit(1)
print(f"PID 1 of a namespace (host PID {pid}, {sys.argv[4]}): charged {p['cpu_time_ns']/1e6:.1f} ms of its {kernel/1e6:.1f} ms ({p['cpu_time_ns']/kernel*100:.2f} %)")
sys.exit(0 if p['cpu_time_ns'] >= 0.99 * kernel and p['comm'] == 'kepler-nsburn' else 1)
PY
[ $? = 0 ] && ok "PID 1 of a namespace charged >= 99 % of its kernel CPU time" || fail "PID 1 of a namespace (above)"
finish pid_namespace
