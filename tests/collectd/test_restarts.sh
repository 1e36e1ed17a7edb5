#!/usr/bin/env bash
# Counters never go backwards across collector restarts (issue 45): a
# workload that sleeps through three restarts (the eBPF informer reports a
# process only once it runs again) keeps its place in every snapshot and
# continues from its totals when it wakes.
#
# The real collector with the eBPF informer; a process in a container shaped
# as the kubelet makes it (its pod from the cgroup path) and a plain one run
# 0.3 s of CPU each, then block on a FIFO. The collector is stopped three
# times (SIGTERM, SIGKILL, SIGTERM: a rollout, an OOM kill, a rollout) and
# started again; then the workloads wake and run again. Checks, over every
# snapshot in the store: each process, its container and pod are in every
# snapshot from their first, no cumulative counter (energy per zone, CPU
# time) of any of them ever goes down, and each ends above where it was
# before the restarts. And a second container of the pod that ran once and
# ended (gone from the snapshots after monitor.terminated-ttl, before the
# restarts) comes back under its id after them from its totals: the
# collector's memory of it is in the store.
# Usage: test_restarts.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (eBPF, cgroups)"
command -v python3 >/dev/null || skip "python3 missing"
store=$tmp/store
start_collector() {
	"$collectd" --informer ebpf --store.path "$store" --meter.source fake --store.group "" \
		--monitor.interval 1s --monitor.terminated-ttl 2s --log.level info >>"$tmp/collectd.log" 2>&1 &
	cpid=$!
	pids+=($cpid)
	sleep 2.5
	kill -0 $cpid 2>/dev/null
}
start_collector || skip "the eBPF informer does not load here: $(tail -1 "$tmp/collectd.log")"

# the hierarchy containers are in (as the collector finds it: cgroup_tree.h)
cg=
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cg=/sys/fs/cgroup
else
	for d in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do [ -f "$d/cpu.shares" ] && { cg=$(readlink -f "$d"); break; }; done
fi
[ -n "$cg" ] || skip "no cgroup hierarchy with the cpu controller"
h=$(head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n')
uid="${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"
ctr=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
path=$cg/kubepods-restart-$$/pod$uid/$ctr
ctr2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
path2=$cg/kubepods-restart-$$/pod$uid/$ctr2
mkdir -p "$path" "$path2" || skip "cannot create a cgroup under $cg"
at_exit+=("rmdir '$path' '$path2' '$cg/kubepods-restart-$$/pod$uid' '$cg/kubepods-restart-$$' 2>/dev/null")
# a second container of the pod that runs once and ends (restarted later under the same id)
# (0.3 s of CPU the first time, 0.05 s the second: back from 0 it would show less than before)
once() { (echo $BASHPID >"$path2/cgroup.procs" && exec python3 -c "import time
t = time.process_time()
while time.process_time() - t < $1: pass"); }

mkfifo "$tmp/wake-a" "$tmp/wake-b"
# burn 0.3 s of CPU, sleep until woken, burn again, then sleep until stopped
sleeper='import sys, time
def burn(s):
    t = time.process_time()
    while time.process_time() - t < s: pass
burn(0.3)
open(sys.argv[1]).read()
burn(0.3)
time.sleep(600)'
(echo $BASHPID >"$path/cgroup.procs" && exec python3 -c "$sleeper" "$tmp/wake-a") &
a=$!
python3 -c "$sleeper" "$tmp/wake-b" &
b=$!
pids+=($a $b)
once 0.3
sleep 3 # past monitor.terminated-ttl: the ended container leaves the snapshots

for sig in TERM KILL TERM; do
	kill -$sig $cpid
	wait $cpid 2>/dev/null
	start_collector || fail "the collector did not start again after SIG$sig: $(tail -3 "$tmp/collectd.log")"
	sleep 2
done
echo go >"$tmp/wake-a"
echo go >"$tmp/wake-b"
once 0.05 # the ended container back under its id, after three restarts
sleep 3
kill $cpid
wait $cpid 2>/dev/null
grep -o "resuming the totals.*" "$tmp/collectd.log" | sed 's/^/  /'
"$stdout" --store.path "$store" --all --format json >"$tmp/all.json" 2>"$tmp/stdout.err" ||
	fail "kepler-stdout: $(cat "$tmp/stdout.err")"
python3 - "$tmp/all.json" "$a" "$b" "$ctr" "$uid" "$ctr2" <<'PY' || fails=$((fails + 1))
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
pa, pb, ctr, uid, ctr2 = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def energy(u):
    return sum(z['energy_uj'] for z in u['zones'])
def find(s):
    out = {}
    for p in s['processes']:
        if p['pid'] in (pa, pb) and p['state'] == 'running':
            out['process %d' % p['pid']] = p
    out.update({'container': c for c in s['containers'] if c['container_id'] == ctr})
    out.update({'pod': p for p in s['pods'] if p['pod_id'] == uid})
    out.update({'ended container': c for c in s['containers'] if c['container_id'] == ctr2})
    return out
bad, first, high, missing, restarts = 0, {}, {}, {}, 0
for s in snaps:
    restarts += s['first']
    seen = find(s)
    for k, u in seen.items():
        first.setdefault(k, (restarts, energy(u), u['cpu_time_ns']))
        for what, v in (('energy', energy(u)), ('cpu time', u['cpu_time_ns'])):
            if v < high.get((k, what), 0):
                print(f"FAIL: seq {s['seq']}: {k} {what} went from {high[(k, what)]} to {v}")
                bad += 1
            high[(k, what)] = max(high.get((k, what), 0), v)
    for k in first:
        if k not in seen and not s['first'] and k != 'ended container':
            missing[k] = missing.get(k, 0) + 1
want = ['process %d' % pa, 'process %d' % pb, 'container', 'pod']
for k in want:
    if k not in first:
        print(f"FAIL: {k} never in the store"); bad += 1; continue
    r0, e0, c0 = first[k]
    print(f"{'ok' if not missing.get(k) else 'FAIL'}: {k}: first seen in run {r0} at {e0 / 1e6:.3f} J, "
          f"{c0 / 1e6:.0f} ms; at the end {high[(k, 'energy')] / 1e6:.3f} J, {high[(k, 'cpu time')] / 1e6:.0f} ms; "
          f"missing from {missing.get(k, 0)} snapshots after its first")
    bad += missing.get(k, 0) > 0
    if high[(k, 'cpu time')] < c0 + 250e6:
        print(f"FAIL: {k} did not go on from its totals after the restarts"); bad += 1
# the ended container: gone from the snapshots for three restarts, back under its id from its totals
k = 'ended container'
if k not in first:
    print(f"FAIL: {k} never in the store"); bad += 1
else:
    r0, e0, c0 = first[k]
    before = max((find(s)[k]['cpu_time_ns'] for s in snaps[:len(snaps) // 2] if k in find(s)), default=0)
    gone = sum(1 for s in snaps if not find(s).get(k))
    good = before >= 250e6 and high[(k, 'cpu time')] >= before + 40e6
    print(f"{'ok' if good else 'FAIL'}: the ended container: {before / 1e6:.0f} ms in run {r0}, absent from {gone} snapshots, "
          f"back in run {restarts} at {high[(k, 'cpu time')] / 1e6:.0f} ms, {high[(k, 'energy')] / 1e6:.3f} J (from its totals)")
    bad += not good
print(f"{len(snaps)} snapshots, {restarts} runs of the collector")
if restarts != 4:
    print("FAIL: expected 4 runs"); bad += 1
sys.exit(bad > 0)
PY
finish restarts
