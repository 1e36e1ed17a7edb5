#!/usr/bin/env bash
# attribution.idle size with real cgroups: three containers (cgroups named
# as Docker names them, each running a sleeping process) with CPU weights
# 100, 200 and 700 (cgroup v1 cpu.shares, or v2 cpu.weight) stay idle for
# 30 s under the collector (eBPF informer when it loads, else procfs; the
# model meter). Checked on every snapshot, exactly:
#   - per zone, Σ processes' active + idle == energy (nothing
#     unattributed: there are always processes), and each container's
#     active and idle are the sums of its processes';
#   - step 1 of the rule: the containers together take
#     LR(idle, [their total size, capacity - it]) of the node's idle, the
#     capacity being 1024 shares per CPU;
#   - step 2: among the containers, each takes its share by size
#     (largest remainder: floor or floor + 1, the larger remainders first);
#   - the three test containers' idle energy over the run is 10/20/70.
# Usage: test_idle.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in jq python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
[ "$(id -u)" = 0 ] || skip "needs root to make cgroups"

if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	root=/sys/fs/cgroup file=cpu.weight weights=(100 200 700) version=v2
	echo "+cpu" >"$root/cgroup.subtree_control" 2>/dev/null
elif [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then
	root=/sys/fs/cgroup/cpu file=cpu.shares weights=(100 200 700) version=v1
else
	skip "no writable cpu controller (cgroup v1 cpu, or v2 with cpu in cgroup.controllers)"
fi
parent=$root/kepler-test-idle-$$
mkdir "$parent" || skip "cannot make a cgroup under $root"
[ $version = v2 ] && echo "+cpu" >"$parent/cgroup.subtree_control"
at_exit+=("for d in $parent/*/; do rmdir \"\$d\" 2>/dev/null; done; rmdir $parent 2>/dev/null")

store=$tmp/store
"$collectd" --store.path "$store" --store.group "" --monitor.interval 1s --meter.source model \
	--attribution.idle size --gpu.enabled false >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
sleep 1.5
ids=()
for i in 0 1 2; do
	id=$(printf '%064x' $((0xC0FFEE00 + i + $$ * 16)))
	ids+=("$id")
	dir=$parent/docker-$id.scope
	mkdir "$dir" && echo "${weights[$i]}" >"$dir/$file" || { fail "cgroup $dir"; finish idle; }
	# in the cgroup before it execs: its first context switch is there
	sh -c "echo \$\$ >$dir/cgroup.procs && exec sleep 60" &
	pids+=($!)
done
grep -q "attribution.idle size): sizes from $file" "$tmp/collectd.log" &&
	ok "idle policy said at start: $(grep -o 'idle energy goes.*' "$tmp/collectd.log")" ||
	fail "start: $(head -5 "$tmp/collectd.log")"
sleep 30
kill "$cpid"
wait "$cpid" 2>/dev/null
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" &&
	fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"

"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl" || fail "kepler-stdout"
python3 - "$tmp/all.jsonl" "${ids[@]}" <<'PY' >"$tmp/check.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
ids = sys.argv[2:]

def largest_remainder_ok(amount, weights, got):
    """got is amount split by weights with the largest-remainder rule (any order among ties)."""
    W = sum(weights)
    if W == 0:
        return all(g == 0 for g in got)
    if sum(got) != amount:
        return False
    exact = [(amount * w) // W for w in weights]
    rem = [(amount * w) % W for w in weights]
    up = [g - e for g, e in zip(got, exact)]
    if any(u not in (0, 1) for u in up):
        return False
    if sum(up) and 0 in up:
        return min(r for r, u in zip(rem, up) if u) >= max(r for r, u in zip(rem, up) if not u)
    return True

bad, checked, steps, totals, node_idle = [], 0, 0, {i: 0 for i in ids}, 0
for s in snaps:
    # the collector's own cost, read each interval (/proc/self/statm, its CPU clock)
    if not (1 << 20 < s["collector_rss_bytes"] < 1 << 32) or s["collector_cpu_ns"] <= 0:
        bad.append(f"seq {s['seq']}: collector_rss_bytes {s['collector_rss_bytes']}, collector_cpu_ns {s['collector_cpu_ns']}")
    if s["idle_policy"] != "size":
        bad.append(f"seq {s['seq']}: idle_policy {s['idle_policy']}")
        continue
    cap = 1024 * s["node"]["cpu_count"]
    for zi, z in enumerate(s["node"]["zones"]):
        act = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
        idle = sum(p["zones"][zi]["idle_delta_uj"] for p in s["processes"])
        # the active part the processes' CPU time accounts for is theirs, the rest unattributed; all of the idle is given
        cpu = sum(p["cpu_time_delta_ns"] for p in s["processes"])
        busy = s["node"]["cpu_busy_delta_ns"]
        want = 0 if not cpu else z["active_delta_uj"] if cpu >= busy else z["active_delta_uj"] * cpu // busy
        if not s["first"] and (idle != z["idle_delta_uj"] or act != want):
            bad.append(f"seq {s['seq']} {z['name']}: processes took active {act} (their CPU time says {want}), idle {idle} of {z['idle_delta_uj']}")
        if act + idle + z["unattributed_delta_uj"] != z["delta_uj"] or act > z["active_delta_uj"]:
            bad.append(f"seq {s['seq']} {z['name']}: active {act} + idle {idle} + unattributed {z['unattributed_delta_uj']} != {z['delta_uj']}")
        for c in s["containers"]:
            mine = [p for p in s["processes"] if p["container_id"] == c["container_id"]]
            for key in ("delta_uj", "idle_delta_uj"):
                if sum(p["zones"][zi][key] for p in mine) != c["zones"][zi][key]:
                    bad.append(f"seq {s['seq']} container {c['container_id'][:12]}: {key} is not its processes' sum")
        checked += 1
        running = [c for c in s["containers"] if c["state"] == "running"]
        if s["first"] or any(c["state"] != "running" and c["zones"][zi]["idle_delta_uj"] for c in s["containers"]):
            continue
        if not {c["container_id"] for c in running} >= set(ids):
            continue
        sizes = [c["size_shares"] for c in running]
        got = [c["zones"][zi]["idle_delta_uj"] for c in running]
        part = sum(got)
        sc = sum(sizes)
        # step 1: the containers' part of the node's idle (there are always processes outside them)
        if not largest_remainder_ok(z["idle_delta_uj"], [sc, max(0, cap - sc)], [part, z["idle_delta_uj"] - part - (z["idle_delta_uj"] - idle)]):
            bad.append(f"seq {s['seq']} {z['name']}: containers took {part} of idle {z['idle_delta_uj']} with sizes {sc} of {cap}")
        # step 2: among the containers by size
        if not largest_remainder_ok(part, sizes, got):
            bad.append(f"seq {s['seq']} {z['name']}: {got} is not {part} split by {sizes}")
        steps += 1
        if zi == 0:
            node_idle += z["idle_delta_uj"]
            for c in running:
                if c["container_id"] in totals:
                    totals[c["container_id"]] += c["zones"][zi]["idle_delta_uj"]
sz = {c["container_id"]: c["size_shares"] for s in snaps for c in s["containers"] if c["container_id"] in totals}
if steps < 20:
    bad.append(f"only {steps} intervals with the three containers")
if sorted(sz.get(i, 0) for i in ids) != sorted([100, 200, 700]) and sorted(sz.get(i, 0) for i in ids) != sorted([1024, 2048, 7168]):
    bad.append(f"sizes recorded {[sz.get(i) for i in ids]}")
t = [totals[i] for i in ids]
whole = sum(t)
if whole == 0 and node_idle:
    bad.append(f"the containers took no idle energy of the node's {node_idle} uJ")
elif whole == 0:
    # the node never idle (other jobs keep every CPU busy): no idle energy to give, which each
    # interval's check above found given exactly; the 10/20/70 proportion cannot be seen
    print(f"the node had no idle energy in {steps} intervals (its CPUs busy with other work)", file=sys.stderr)
else:
    pct = [100 * x / whole for x in t]
    # each interval's split is exact to the uJ (checked above): over the run, a uJ an interval off at most
    if any(abs(p - w) > 0.01 and abs(x - whole * w / 100) > steps for p, w, x in zip(pct, (10, 20, 70), t)):
        bad.append(f"idle over the run {t}: {pct} %, not 10/20/70")
print("\n".join(bad[:10]) if bad else
      f"{checked} zone-intervals: Σ processes' active + idle + unattributed == energy, containers == their processes; "
      f"{steps} intervals: steps 1 and 2 of the size rule exact; over the run the three containers took "
      f"{t} uJ of idle = {', '.join(f'{100 * x / whole:.3f}' for x in t) if whole else '(none: the node was never idle)'} %")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check.out")" || fail "$(head -10 "$tmp/check.out")"

# the exporter: the idle series beside Kepler's, the same joules as the snapshot's
if command -v curl >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"$build/readers/exporter/kepler-exporter" --store.path "$store" --web.listen-address "127.0.0.1:$port" \
		>"$tmp/exporter.log" 2>&1 &
	pids+=($!)
	# until the page holds a snapshot (the exporter's first read follows its start: a scrape
	# before it is 200 with no workloads, which failed a parallel ASan CI run)
	for _ in $(seq 300); do
		curl -sf -o "$tmp/metrics" "http://127.0.0.1:$port/metrics" && grep -q '^kepler_snapshot_seq{' "$tmp/metrics" && break
		sleep 0.1
	done
	want=$(tail -1 "$tmp/all.jsonl" | jq -r --arg id "${ids[2]}" \
		'.containers[] | select(.container_id == $id) | .zones[0].idle_uj')
	got=$(grep "^kepler_container_cpu_idle_joules_total{container_id=\"${ids[2]}\"" "$tmp/metrics" | head -1)
	python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) * 1e6 - int(sys.argv[2])) > 0.5)' "${got##* }" "$want" &&
		grep -q '^# HELP kepler_container_cpu_idle_watts Idle power of cpu given to the container by attribution.idle size' "$tmp/metrics" &&
		grep -q '^kepler_container_cpu_joules_total{' "$tmp/metrics" &&
		ok "exporter: kepler_container_cpu_idle_joules_total ${got##* } J = the snapshot's $want uJ, beside Kepler's families" ||
		fail "exporter: '$got' against $want uJ ($(head -c 300 "$tmp/metrics" 2>/dev/null); log: $(head -5 "$tmp/exporter.log"))"
fi
finish idle
