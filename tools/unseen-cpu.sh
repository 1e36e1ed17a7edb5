#!/usr/bin/env bash
# tools/unseen-cpu.sh: how much busy CPU time the informer's processes do not
# account for, and whether a process gets the energy of its own CPU time
# only (issue 46). The real collector with the fake meter, for SECONDS
# (default 30) at 1 s intervals, beside a steady burner (a quarter of a CPU)
# and churn: short processes (about 2 ms of CPU each, 100 a second) that
# the procfs informer never sees. Prints, over the run, for the package
# zone: the unattributed share of the active energy, and the burner's share
# of the active energy against its share of the node's busy CPU time
# (/proc/stat).
# Usage: tools/unseen-cpu.sh [BUILD_DIR] [ebpf|procfs] [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
informer=${2:-procfs}
secs=${3:-30}
[ "$(id -u)" -eq 0 ] || [ "$informer" = procfs ] || { echo "unseen-cpu.sh: eBPF needs root" >&2; exit 2; }
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/collectd/kepler-collectd" --informer "$informer" --store.path "$tmp/store" --meter.source fake \
	--store.group "" --monitor.interval 1s --log.level warn >"$tmp/collectd.log" 2>&1 &
pids+=($!)
sleep 2
python3 -c 'import time
while True:
    t = time.process_time()
    while time.process_time() - t < 0.025: pass
    time.sleep(0.075)' &
burner=$!
pids+=($burner)
(while :; do
	for _ in $(seq 10); do sh -c 'i=0; while [ $i -lt 1000 ]; do i=$((i + 1)); done'; done
	sleep 0.05
done) &
pids+=($!)
sleep "$secs"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null
"$build/readers/stdout/kepler-stdout" --store.path "$tmp/store" --all --format json >"$tmp/all.json" ||
	{ cat "$tmp/collectd.log"; exit 1; }
python3 - "$tmp/all.json" "$burner" "$informer" "$secs" <<'PY'
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])][2:]  # the burner and churn started after the second
burner = int(sys.argv[2])
active = unatt = mine = busy = cpu = listed = 0
for s in snaps:
    z = s['node']['zones'][0]
    active += z['active_delta_uj']
    unatt += z.get('unattributed_delta_uj', 0)
    busy += s['node']['cpu_busy_delta_ns']
    listed += sum(p['cpu_time_delta_ns'] for p in s['processes'])
    for p in s['processes']:
        if p['pid'] == burner:
            mine += p['zones'][0]['delta_uj']
            cpu += p['cpu_time_delta_ns']
print(f"{sys.argv[3]}, {len(snaps)} intervals of ~1 s: listed processes' CPU time {100 * listed / busy:.1f} % of the node's busy time; "
      f"unattributed {100 * unatt / active:.2f} % of the active energy")
print(f"the burner: {100 * cpu / busy:.1f} % of the busy CPU time, {100 * mine / active:.1f} % of the active energy")
PY
