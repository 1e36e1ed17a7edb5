#!/usr/bin/env bash
# tools/restart-soak.sh: the collector killed (SIGKILL) at random moments,
# N times (default 100), under churn: short processes all the time; a pod's
# container (a real cgroup in the hierarchy the collector maps, named as the
# kubelet names it) whose processes run and sleep, exec another program
# (pieces of their account, bpf/cputime.bpf.c) and end; a process moved in
# and out of that container every 0.7 s; a VM (a hypervisor process, its
# -uuid naming it) that ends and comes back under the same id every ~2.5 s;
# plain sleepers that wake now and then. An exporter serves the store all
# along and is scraped every second. Then every cumulative counter in the
# store (node zones, processes, containers, pods, VMs; energy and CPU time)
# is checked across all the runs, and every counter series of the
# exporter's scrapes: none may ever go down. A process series of the
# exporter (its labels have no start time) may go down only where its pid
# was reused, which the store shows (two start times): counted apart.
# Prints the decreases by kind (issue 45 measured 1,292 process, 18
# container and 10 pod decreases before).
# Usage: tools/restart-soak.sh [BUILD_DIR] [KILLS]   (about 2.5 s a kill)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
kills=${2:-100}
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
exporter=$build/readers/exporter/kepler-exporter
port=$((20000 + $$ % 20000))
[ "$(id -u)" -eq 0 ] || { echo "restart-soak.sh: needs root (eBPF, cgroups)" >&2; exit 2; }
tmp=$(mktemp -d)
failed=1
chmod 755 "$tmp" # the collector runs as collector.user after start
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
	if [ "$failed" = 0 ]; then rm -rf "$tmp"; else echo "restart-soak.sh: kept $tmp (store, logs, scrapes)" >&2; fi
}
trap cleanup EXIT
mkdir -p "$path" || { echo "restart-soak.sh: cannot create a cgroup under $cg" >&2; exit 2; }
# churn: short processes; the container: a worker that runs 0.2 s then sleeps 3 s; sleepers waking every 7 s
(while :; do for _ in $(seq 50); do /bin/true; done; sleep 0.2; done) &
pids+=($!)
(echo $BASHPID >"$path/cgroup.procs" && while :; do timeout 0.2 sh -c 'while :; do :; done'; sleep 3; done) &
pids+=($!)
# in the container: a program that runs a while, then execs another that does (each exec cuts a piece)
loop='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
(echo $BASHPID >"$path/cgroup.procs" && while :; do sh -c "$loop; exec sh -c '$loop'"; sleep 0.5; done) &
pids+=($!)
# moved in and out of the container every 0.7 s while it runs (each move cuts a piece)
python3 -c 'import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.1: pass
    time.sleep(0.2)' &
mover=$!
pids+=($mover)
(while :; do echo $mover >"$path/cgroup.procs"; sleep 0.7; echo $mover >"$cg/kubepods-soak-$$/cgroup.procs"; sleep 0.7; done) 2>/dev/null &
pids+=($!)
# a VM: a hypervisor process (bash named so, as tests/readers/test_prometheus.sh does: it forks its sleep
# rather than exec it, as a hypervisor stays itself) that ends and comes back under the same id
mkdir -p "$tmp/bin" && cp "$(command -v bash)" "$tmp/bin/qemu-system-x86_64"
(while :; do "$tmp/bin/qemu-system-x86_64" -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 1.5; exit 0' \
	-uuid 5a0c0de0-2222-4333-8444-$(printf '%012d' $$) -name guest=soak-vm; sleep 0.5; done) &
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
	if [ "$k" -eq 1 ]; then
		# the exporter, once the store exists, serves it across every restart; scraped every second
		until [ -e "$tmp/store/data.mdb" ]; do sleep 0.1; done
		"$exporter" --store.path "$tmp/store" --web.listen-address "127.0.0.1:$port" --log.level warn \
			>>"$tmp/exporter.log" 2>&1 &
		pids+=($!)
		mkdir -p "$tmp/scrapes"
		(n=0; while :; do n=$((n + 1)); curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/scrapes/$n" 2>/dev/null; sleep 1; done) &
		pids+=($!)
	fi
	sleep "$(python3 -c 'import random; print(round(random.uniform(1.2, 3.5), 2))')"
	kill -KILL $c
	wait $c 2>/dev/null
done
"$stdout" --store.path "$tmp/store" --all --format json >"$tmp/all.json" || { cat "$tmp/collectd.log"; exit 1; }
python3 - "$tmp/all.json" "$kills" "$tmp/scrapes" <<'PY'
import json, os, re, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
starts = {}
for s in snaps:
    for p in s['processes']:
        starts.setdefault(p['pid'], set()).add(p['start_time_ns'] // 10000000)  # whole ticks: a piece's offset is not another start
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
print(f"store: {len(snaps)} snapshots over {runs} runs ({sys.argv[2]} SIGKILLs), {counted} counter readings of {len(high)} counters; "
      f"decreases: zone {down.get('zone', 0)}, process {down.get('process', 0)}, container {down.get('container', 0)}, "
      f"pod {down.get('pod', 0)}, vm {down.get('vm', 0)}")
line = re.compile(r'^(kepler_\w+_total)(\{[^}]*\})? (\S+)$')
xhigh, xdown, reused, scrapes, xcount = {}, {}, 0, 0, 0
files = sorted(os.listdir(sys.argv[3]), key=int) if os.path.isdir(sys.argv[3]) else []
for f in files:
    text = open(os.path.join(sys.argv[3], f)).read()
    if not text:
        continue
    scrapes += 1
    for l in text.splitlines():
        m = line.match(l)
        if not m:
            continue
        if m.group(1) == 'kepler_collector_cpu_seconds_total':
            continue  # the collector process's own CPU time: documented to restart at 0 with it
        k, v = m.group(1) + (m.group(2) or ''), float(m.group(3))
        xcount += 1
        if v < xhigh.get(k, 0):
            pid = re.search(r'pid="(\d+)"', k)
            if m.group(1).startswith('kepler_process_') and pid and len(starts.get(int(pid.group(1)), ())) > 1:
                reused += 1
            else:
                kind = m.group(1).split('_')[1]
                xdown[kind] = xdown.get(kind, 0) + 1
                if sum(xdown.values()) <= 5:
                    print(f"  scrape {f}: {k} went from {xhigh[k]} to {v}")
        xhigh[k] = max(xhigh.get(k, 0), v)
print(f"exporter: {scrapes} scrapes, {xcount} counter samples of {len(xhigh)} series; decreases: "
      + (', '.join(f'{k} {v}' for k, v in sorted(xdown.items())) or 'none')
      + f" (process series of a reused pid: {reused})")
sys.exit(1 if down or xdown or not scrapes else 0)
PY
failed=$?
exit "$failed"
