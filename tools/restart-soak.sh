#!/usr/bin/env bash
# tools/restart-soak.sh: the collector killed (SIGKILL) at random moments,
# N times (default 50), under churn: short processes all the time, a
# container (a real cgroup in the hierarchy the collector maps, named as the
# kubelet names it) whose processes run and sleep, plain sleepers that wake
# now and then. Then every cumulative counter in the store (node zones,
# processes, containers, pods; energy and CPU time) is checked across all
# the runs: none may ever go down. Prints the decreases by kind (issue 45
# measured 1,292 process, 18 container and 10 pod decreases before).
# Usage: tools/restart-soak.sh [BUILD_DIR] [KILLS]   (about 2.5 s a kill)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
kills=${2:-50}
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
[ "$(id -u)" -eq 0 ] || { echo "restart-soak.sh: needs root (eBPF, cgroups)" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
cg=
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cg=/sys/fs/cgroup
else
	for d in /sys/fs/cgroup/cpu /sys/fs/cgroup/cpu,cpuacct; do [ -f "$d/cpu.shares" ] && { cg=$(readlink -f "$d"); break; }; done
fi
uid=5a0c0de0-1111-4222-8333-$(printf '%012d' $$)
ctr=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
path=$cg/kubepods-soak-$$/pod$uid/$ctr
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rmdir "$path" "$cg/kubepods-soak-$$/pod$uid" "$cg/kubepods-soak-$$" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$path" || { echo "restart-soak.sh: cannot create a cgroup under $cg" >&2; exit 2; }
# churn: short processes; the container: a worker that runs 0.2 s then sleeps 3 s; sleepers waking every 7 s
(while :; do for _ in $(seq 50); do /bin/true; done; sleep 0.2; done) &
pids+=($!)
(echo $BASHPID >"$path/cgroup.procs" && while :; do timeout 0.2 sh -c 'while :; do :; done'; sleep 3; done) &
pids+=($!)
for _ in 1 2 3; do
	python3 -c 'import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.05: pass
    time.sleep(7)' &
	pids+=($!)
done
for k in $(seq "$kills"); do
	"$collectd" --informer ebpf --store.path "$tmp/store" --meter.source fake --store.group "" \
		--monitor.interval 1s --log.level warn >>"$tmp/collectd.log" 2>&1 &
	c=$!
	sleep "$(python3 -c 'import random; print(round(random.uniform(1.2, 3.5), 2))')"
	kill -KILL $c
	wait $c 2>/dev/null
done
"$stdout" --store.path "$tmp/store" --all --format json >"$tmp/all.json" || { cat "$tmp/collectd.log"; exit 1; }
python3 - "$tmp/all.json" "$kills" <<'PY'
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
high, down, counted = {}, {}, 0
runs = 0
for s in snaps:
    runs += s['first']
    ids = [(('zone', z['name']), z['energy_uj']) for z in s['node']['zones']]
    for p in s['processes']:
        ids += [(('process', p['pid'], p['start_time_ns'], z['name']), z['energy_uj']) for z in p['zones']]
        ids.append((('process', p['pid'], p['start_time_ns'], 'cpu'), p['cpu_time_ns']))
    for kind, key in (('container', 'container_id'), ('pod', 'pod_id'), ('vm', 'vm_id')):
        for w in s[kind + 's']:
            ids += [((kind, w[key], z['name']), z['energy_uj']) for z in w['zones']]
            ids.append(((kind, w[key], 'cpu'), w['cpu_time_ns']))
    for k, v in ids:
        counted += 1
        if v < high.get(k, 0):
            down[k[0]] = down.get(k[0], 0) + 1
            if sum(down.values()) <= 5:
                print(f"  seq {s['seq']} (run {runs}): {k} went from {high[k]} to {v}")
        high[k] = max(high.get(k, 0), v)
print(f"{len(snaps)} snapshots over {runs} runs ({sys.argv[2]} SIGKILLs), {counted} counter readings of {len(high)} counters; "
      f"decreases: zone {down.get('zone', 0)}, process {down.get('process', 0)}, container {down.get('container', 0)}, "
      f"pod {down.get('pod', 0)}, vm {down.get('vm', 0)}")
sys.exit(1 if down else 0)
PY
