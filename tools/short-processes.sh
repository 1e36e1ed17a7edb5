#!/usr/bin/env bash
# tools/short-processes.sh: Prometheus series under short-process churn
# (issue 46). The real collector (eBPF informer as root, else procfs; the
# fake meter; 1 s intervals) and two exporters on the same store, one with
# metrics.process.fold (the default) and one without, while a spawner
# starts about 100 short processes a second (a shell loop of ~2 ms of CPU
# each). Both are scraped every 2 s for SECONDS (default 120). Prints, for
# each exporter: the process series (kepler_process_* label sets) seen in
# all, how many new ones appeared a minute after the first 20 s, and, for
# every scrape of the folding one, the largest gap per zone between the
# process watts plus the unattributed watts and the node's active watts.
# Usage: tools/short-processes.sh [BUILD_DIR] [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
secs=${2:-120}
informer=procfs
[ "$(id -u)" -eq 0 ] && informer=ebpf
tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/collectd/kepler-collectd" --informer "$informer" --store.path "$tmp/store" --meter.source fake \
	--monitor.interval 1s --log.level warn >"$tmp/collectd.log" 2>&1 &
pids+=($!)
sleep 2
"$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:28391 \
	--log.level warn >"$tmp/fold.log" 2>&1 &
pids+=($!)
"$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:28392 \
	--metrics.process.fold=false --log.level warn >"$tmp/nofold.log" 2>&1 &
pids+=($!)
python3 - "$secs" >"$tmp/spawned" <<'PY' &
import subprocess, sys, time
end = time.monotonic() + float(sys.argv[1])
n, t0 = 0, time.monotonic()
while time.monotonic() < end:
    subprocess.run(['sh', '-c', 'i=0; while [ $i -lt 300 ]; do i=$((i + 1)); done'])
    n += 1
    ahead = t0 + n / 100 - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
print(f"spawner: {n} processes in {time.monotonic() - t0:.0f} s ({n / (time.monotonic() - t0):.0f} a second)")
PY
spawner=$!
pids+=($spawner)
python3 - "$secs" "$informer" ${SHORT_VERBOSE:+v} <<'PY'
import re, sys, time, urllib.request
secs, informer = float(sys.argv[1]), sys.argv[2]
line = re.compile(r'^(kepler_[a-z_]+)\{(.*)\} (\S+)$')
def scrape(port):
    try:
        text = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics', timeout=5).read().decode()
    except OSError:
        return []
    out = []
    for l in text.splitlines():
        m = line.match(l)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
            out.append((m.group(1), m.group(2), labels, float(m.group(3))))
    return out
seen = {28391: {}, 28392: {}}
worst, scrapes, t0 = 0.0, 0, time.monotonic()
while time.monotonic() - t0 < secs:
    now = time.monotonic() - t0
    for port in seen:
        rows = scrape(port)
        for name, raw, labels, v in rows:
            if name.startswith('kepler_process_'):
                seen[port].setdefault((name, raw), now)
        if port != 28391 or not rows:
            continue
        scrapes += 1
        zones = {}
        for name, raw, labels, v in rows:
            z = labels.get('zone')
            if name == 'kepler_process_cpu_watts':
                zones.setdefault(z, [0.0, 0.0])[0] += v
            elif name == 'kepler_node_cpu_unattributed_watts':
                zones.setdefault(z, [0.0, 0.0])[0] += v
            elif name == 'kepler_node_cpu_active_watts':
                zones.setdefault(z, [0.0, 0.0])[1] += v
        for z, (parts, active) in zones.items():
            worst = max(worst, abs(parts - active))
    time.sleep(2)
span = (secs - 20) / 60
for port, label in ((28391, 'metrics.process.fold=true '), (28392, 'metrics.process.fold=false')):
    late = sum(1 for t in seen[port].values() if t >= 20)
    print(f"{label}: {len(seen[port])} process series in {secs:.0f} s; {late / span:.1f} new a minute after the first 20 s ({informer})")
    if port == 28391 and len(sys.argv) > 3:
        for (name, raw), t in sorted(seen[port].items(), key=lambda x: x[1]):
            if t >= 20:
                print(f"  new at {t:.0f} s: {name}{{{raw}}}")
print(f"{scrapes} scrapes of the folding exporter: per zone, |process watts + unattributed watts - active watts| at most {worst:.9f} W")
PY
wait "$spawner"
cat "$tmp/spawned"
kill "${pids[0]}" 2>/dev/null
