#!/usr/bin/env bash
# GPUs end to end, through the stand-in NVML (tests/fakes/fake_nvml: NVML's entry
# points, return codes and protocols, driven by a script file). The real
# collector loads it with dlopen (--gpu.nvml-library): 2 GPUs, 5 real
# processes in 2 containers' real cgroups plus a PID the informer cannot
# see, 30 intervals. Checked on every snapshot, from kepler-stdout's JSON:
# per GPU Σ processes + unattributed == active and active + idle == energy
# exactly, each container == Σ its processes; over the run each process's
# share of a GPU's active energy within 1 % of its SM-utilisation share, the
# power within 2 % of the script's; Kepler's GPU series in the exporter.
# Then faults: a GPU that falls off the bus and comes back, an energy
# counter that goes back (a driver reload), the library missing; MIG split
# per GPU instance by GPM's busy SMs, and equally where there is no GPM.
# Usage: test_gpu.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in curl jq python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the test cgroups"; exit 77; }
. "$(dirname "$0")/../lib.sh"
lib=$build/tests/nvml/libnvidia-ml.so.1
[ -f "$lib" ] || { fail "the stand-in $lib was not built"; finish gpu; }
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
cgroups=()
at_exit+=('for cg in "${cgroups[@]}"; do rmdir "$cg" 2>/dev/null; done')

cgroot=/sys/fs/cgroup/cpu
[ -d "$cgroot" ] || cgroot=/sys/fs/cgroup
hex() { printf '%s%062d' "$1" 0; }
ca=$(hex ca) cb=$(hex cb)
# start_in_cgroup DIR: a mostly sleeping process whose cgroup is DIR
start_in_cgroup() {
	mkdir -p "$1" || return 1
	cgroups=("$1" "${cgroups[@]}")
	bash -c "echo \$\$ > '$1/cgroup.procs' && exec bash -c 'while :; do sleep 0.2; done'" &
	pids+=($!)
}
for c in $ca $ca $ca $cb $cb; do
	start_in_cgroup "$cgroot/docker/$c" || skip "cannot create cgroups under $cgroot"
done
cgroups+=("$cgroot/docker")
p1=${pids[0]} p2=${pids[1]} p3=${pids[2]} p4=${pids[3]} p5=${pids[4]}
ghost=4194000 # a PID NVML reports that no process of this namespace has
ok "5 processes in 2 docker containers' cgroups ($cgroot/docker)"

script=$tmp/nvml.script
write_script() { # write_script [EXTRA LINE...]
	{
		echo "device 0 GPU-0a0a0a0a-1111-2222-3333-444444444444 NVIDIA H100 80GB HBM3 (stand-in)"
		echo "device 1 GPU-1b1b1b1b-5555-6666-7777-888888888888 NVIDIA A100-SXM4-40GB (stand-in)"
		echo "power 0 300"
		echo "power 1 150"
		echo "util 0 $p1 10"
		echo "util 0 $p2 20"
		echo "util 0 $p3 30"
		echo "util 0 $p4 25"
		echo "util 1 $p4 15"
		echo "util 1 $p5 35"
		echo "util 1 $ghost 20"
		for l in "$@"; do echo "$l"; done
	} >"$script.new"
	mv "$script.new" "$script"
}
write_script
chmod 0644 "$script"

# wait_seq STORE N: until the newest snapshot's seq is at least N (60 s at most)
wait_seq() {
	for _ in $(seq 600); do
		s=$("$stdout" --store.path "$1" --format json 2>/dev/null | jq -r .seq 2>/dev/null)
		[ -n "$s" ] && [ "$s" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

store=$tmp/store
FAKE_NVML_SCRIPT=$script "$collectd" --store.path "$store" --store.group "" --meter.source fake --informer procfs \
	--monitor.interval 1s --gpu.enabled true --gpu.nvml-library "$lib" --gpu.idle-power 40 >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$store" 31 || fail "no 31st snapshot: $(tail -5 "$tmp/collectd.log")"
grep -q "GPU 0: NVIDIA H100 80GB HBM3 (stand-in) GPU-0a0a0a0a-1111-2222-3333-444444444444, zone gpu0, energy from its energy counter, idle configured" "$tmp/collectd.log" &&
	grep -q "2 GPU zone(s) (nvml)" "$tmp/collectd.log" && ok "the collector loaded the stand-in NVML by dlopen: 2 GPUs" ||
	fail "start: $(grep -i gpu "$tmp/collectd.log")"

# ---- the exporter: Kepler's GPU families ----
port=$(free_port)
start_exporter_for "$store" "$port"
# until the page holds a snapshot (the exporter's first read follows its start)
wait_metrics "$port" "$tmp/metrics" || fail "no snapshot on /metrics: $(tail -3 "$tmp/exporter-$port.log")"
m=$(cat "$tmp/metrics" 2>/dev/null)
for fam in kepler_node_gpu_info kepler_node_gpu_watts kepler_node_gpu_idle_watts kepler_node_gpu_active_watts \
	kepler_node_gpu_joules_total kepler_node_gpu_active_joules_total kepler_node_gpu_idle_joules_total \
	kepler_node_gpu_unattributed_joules_total kepler_process_gpu_watts kepler_process_gpu_joules_total \
	kepler_container_gpu_watts kepler_container_gpu_joules_total; do
	grep -q "^$fam{" <<<"$m" || fail "no $fam series"
done
grep -q '^kepler_node_gpu_info{gpu="1",gpu_name="NVIDIA A100-SXM4-40GB (stand-in)",gpu_uuid="GPU-1b1b1b1b-5555-6666-7777-888888888888",node_name="[^"]*",vendor="nvidia"} 1$' <<<"$m" &&
	grep -q "^kepler_process_gpu_joules_total{comm=\"bash\",container_id=\"$ca\",exe=\"[^\"]*\",node_name=\"[^\"]*\",pid=\"$p1\",state=\"running\",type=\"container\",vm_id=\"\"} [0-9.]*$" <<<"$m" &&
	grep -q "^kepler_container_gpu_joules_total{container_id=\"$cb\",container_name=\"\",node_name=\"[^\"]*\",pod_id=\"\",runtime=\"docker\",state=\"running\"} " <<<"$m" &&
	ok "Kepler's GPU families with Kepler's labels (gpu, gpu_uuid, gpu_name, vendor; process and container without zone)" ||
	fail "GPU series: $(grep -E '^kepler_(node|process|container)_gpu' <<<"$m" | head -8)"
grep -q 'zone="gpu' <<<"$(grep -E '^kepler_(node|process|container)_cpu' <<<"$m")" &&
	fail "a GPU zone leaked into the CPU families"
if command -v promtool >/dev/null; then
	promtool check metrics <"$tmp/metrics" >"$tmp/promtool.out" 2>&1 ||
		grep -qv 'counter metrics should have "_total" suffix\|no help text' "$tmp/promtool.out" &&
		ok "promtool check metrics accepts the page" || fail "promtool: $(head -3 "$tmp/promtool.out")"
fi

# ---- every snapshot: exact sums; over the run: shares and power ----
"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl" || fail "kepler-stdout --all"
python3 - "$tmp/all.jsonl" "$p1" "$p2" "$p3" "$p4" "$p5" "$ca" "$cb" <<'PY' >"$tmp/check.out" 2>&1
import json, sys
path, p1, p2, p3, p4, p5, ca, cb = sys.argv[1:]
pids = [int(p) for p in (p1, p2, p3, p4, p5)]
snaps = [json.loads(l) for l in open(path)]
bad = []
share = {0: {p: 0 for p in pids}, 1: {p: 0 for p in pids}}
active = {0: 0, 1: 0}
unattr = {1: 0}
energy = {0: 0, 1: 0}
seconds = 0
for s in snaps[1:31]:
    zones = s["node"]["zones"]
    gz = [i for i, z in enumerate(zones) if z["source"] == "nvml"]
    if len(gz) != 2:
        bad.append(f"seq {s['seq']}: {len(gz)} GPU zones")
        continue
    seconds += s["interval_ns"] / 1e9
    for g, zi in enumerate(gz):
        z = zones[zi]
        procs = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
        if procs + z["unattributed_delta_uj"] != z["active_delta_uj"]:
            bad.append(f"seq {s['seq']} gpu{g}: processes {procs} + unattributed {z['unattributed_delta_uj']} != active {z['active_delta_uj']}")
        if z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]:
            bad.append(f"seq {s['seq']} gpu{g}: active + idle != energy")
        for c in s["containers"]:
            mine = sum(p["zones"][zi]["delta_uj"] for p in s["processes"] if p["container_id"] == c["container_id"])
            if mine != c["zones"][zi]["delta_uj"]:
                bad.append(f"seq {s['seq']} gpu{g}: container {c['container_id'][:6]} {c['zones'][zi]['delta_uj']} != its processes {mine}")
        for p in s["processes"]:
            if p["pid"] in pids:
                share[g][p["pid"]] += p["zones"][zi]["delta_uj"]
        active[g] += z["active_delta_uj"]
        energy[g] += z["delta_uj"]
        if g == 1:
            unattr[1] += z["unattributed_delta_uj"]
expect = {0: {pids[0]: 10/85, pids[1]: 20/85, pids[2]: 30/85, pids[3]: 25/85, pids[4]: 0},
          1: {pids[0]: 0, pids[1]: 0, pids[2]: 0, pids[3]: 15/70, pids[4]: 35/70}}
worst = 0
for g in (0, 1):
    for p in pids:
        got = share[g][p] / active[g] if active[g] else 0
        worst = max(worst, abs(got - expect[g][p]))
        if abs(got - expect[g][p]) > 0.01:
            bad.append(f"gpu{g} pid {p}: share {got:.4f}, SM share {expect[g][p]:.4f}")
ghost = unattr[1] / active[1] if active[1] else 0
if abs(ghost - 20/70) > 0.01:
    bad.append(f"gpu1 unattributed share {ghost:.4f}, the unseen PID's SM share {20/70:.4f}")
for g, w in ((0, 300), (1, 150)):
    got = energy[g] / 1e6 / seconds
    if abs(got - w) > w * 0.02:
        bad.append(f"gpu{g}: {got:.1f} W over the run, the script says {w} W")
    idle = (energy[g] - active[g]) / 1e6 / seconds
    if abs(idle - 40) > 0.8:
        bad.append(f"gpu{g}: idle {idle:.2f} W, configured 40 W")
print("\n".join(bad) if bad else f"30 intervals, {seconds:.1f} s: exact per snapshot; shares within {worst*100:.3f} points; unattributed {ghost:.4f} of gpu1")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check.out")" || fail "$(head -8 "$tmp/check.out")"

# ---- faults, on the running collector ----
seq0=$("$stdout" --store.path "$store" --format json | jq -r .seq)
write_script "lost 1"
wait_seq "$store" $((seq0 + 3)) || fail "stalled while GPU 1 was lost"
write_script
wait_seq "$store" $((seq0 + 6)) || fail "stalled after GPU 1 came back"
write_script "energy-offset 0 -1000000"
wait_seq "$store" $((seq0 + 9)) || fail "stalled after the counter went back"
n=$(grep -c "GPU 1: nvmlDeviceGetTotalEnergyConsumption: GPU is lost (the GPU fell off the bus); its energy is not counted until it answers again" "$tmp/collectd.log")
[ "$n" = 1 ] && grep -q "GPU 1 answers again" "$tmp/collectd.log" && ok "a GPU that falls off the bus: logged once, and its return" ||
	fail "lost GPU logged $n times: $(grep 'GPU 1' "$tmp/collectd.log" | tail -3)"
grep -q "GPU 0: its energy counter went back (a driver reload?): that step is not counted (1 since start)" "$tmp/collectd.log" &&
	ok "an energy counter that goes back: a reset, logged" || fail "reset: $(grep 'GPU 0' "$tmp/collectd.log" | tail -3)"
# the reset is logged when the meter reads, its snapshot committed later in that interval (much
# later on a saturated machine): two more snapshots, so the reset's is stored before it is read
wait_seq "$store" $(($("$stdout" --store.path "$store" --format json | jq -r .seq) + 2)) ||
	fail "stalled after the reset"
"$stdout" --store.path "$store" --format json --all >"$tmp/all2.jsonl"
python3 - "$tmp/all2.jsonl" "$seq0" <<'PY' >"$tmp/check2.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
seq0 = int(sys.argv[2])
bad, lost, zero0 = [], 0, 0
for s in snaps:
    if s["seq"] <= seq0:
        continue
    zones = s["node"]["zones"]
    for zi, z in enumerate(zones):
        if z["source"] != "nvml":
            continue
        procs = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
        if procs + z["unattributed_delta_uj"] != z["active_delta_uj"] or z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]:
            bad.append(f"seq {s['seq']} {z['name']}: sums broken")
        w = z["delta_uj"] / (s["interval_ns"] / 1e3) if s["interval_ns"] else 0
        limit = 300 if z["name"] == "gpu0" else 150
        # a lost GPU's interval is counted with the next good read: at most a few intervals' energy, never more
        if z["name"] == "gpu1" and z["delta_uj"] == 0:
            lost += 1
        if z["name"] == "gpu0" and z["delta_uj"] == 0:
            zero0 += 1
        if z["name"] == "gpu0" and w > limit * 1.05:
            bad.append(f"seq {s['seq']} gpu0: {w:.0f} W, more than the script's {limit} W: invented energy")
e1 = sum(z["delta_uj"] for s in snaps if s["seq"] > seq0 for z in s["node"]["zones"] if z["name"] == "gpu1")
t = sum(s["interval_ns"] for s in snaps if s["seq"] > seq0) / 1e9
if e1 / 1e6 > 150 * t * 1.02:
    bad.append(f"gpu1: {e1/1e6:.0f} J over {t:.1f} s, more than 150 W makes")
if lost < 1:
    bad.append("gpu1 never showed delta 0 while lost")
if zero0 != 1:
    bad.append(f"gpu0 had {zero0} intervals of delta 0, expected 1 (the reset)")
print("\n".join(bad) if bad else f"after the faults: sums exact, gpu1 {lost} interval(s) of 0 while lost, {e1/1e6/t:.1f} W over {t:.1f} s (no invented energy), gpu0 one reset interval")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check2.out")" || fail "$(head -8 "$tmp/check2.out")"
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" && fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"

# ---- a GPU without an energy counter or utilisation samples, and an idle one (learned idle, MIG) ----
cat >"$script" <<EOF
device 0 GPU-2c2c2c2c-0000-0000-0000-000000000000 Tesla T4 (stand-in)
device 1 GPU-3d3d3d3d-0000-0000-0000-000000000000 NVIDIA A30 (stand-in)
power 0 70
power 1 33
no-energy 0
no-util 0
running 0 $p1
running 0 $p5
mig 1
EOF
FAKE_NVML_SCRIPT=$script "$collectd" --store.path "$tmp/s5" --store.group "" --meter.source fake --informer procfs \
	--monitor.interval 1s --gpu.nvml-library "$lib" >"$tmp/collectd5.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$tmp/s5" 8 || fail "no 8th snapshot: $(tail -3 "$tmp/collectd5.log")"
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
grep -q "GPU 0: Tesla T4 (stand-in) .*, zone gpu0, energy from its power integrated over time (no energy counter), idle the lowest power seen with no process" "$tmp/collectd5.log" &&
	grep -q "GPU 1: MIG mode is on" "$tmp/collectd5.log" && ok "no energy counter: power integrated, said at start; MIG said" ||
	fail "start: $(grep GPU "$tmp/collectd5.log")"
"$stdout" --store.path "$tmp/s5" --format json --all >"$tmp/all5.jsonl"
python3 - "$tmp/all5.jsonl" "$p1" "$p5" <<'PY' >"$tmp/check5.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
p1, p5 = int(sys.argv[2]), int(sys.argv[3])
bad, e0, t = [], 0, 0
for s in snaps[2:8]:
    zones = s["node"]["zones"]
    g0 = next(i for i, z in enumerate(zones) if z["name"] == "gpu0")
    g1 = next(i for i, z in enumerate(zones) if z["name"] == "gpu1")
    a = {p["pid"]: p["zones"][g0]["delta_uj"] for p in s["processes"] if p["pid"] in (p1, p5)}
    if abs(a.get(p1, -9) - a.get(p5, 9)) > 1 or a[p1] + a[p5] != zones[g0]["active_delta_uj"]:
        bad.append(f"seq {s['seq']} gpu0: equal split broken: {a}, active {zones[g0]['active_delta_uj']}")
    z1 = zones[g1]
    if z1["unattributed_delta_uj"] != z1["active_delta_uj"] or any(p["zones"][g1]["delta_uj"] for p in s["processes"]):
        bad.append(f"seq {s['seq']} gpu1: no process ran, yet not all unattributed")
    if z1.get("baseline", {}).get("method") != "minimum" or abs(z1["baseline"]["idle_uw"] - 33e6) > 33e6 * 0.02:
        bad.append(f"seq {s['seq']} gpu1: idle not learned as about 33 W: {z1.get('baseline')}")
    e0 += zones[g0]["delta_uj"]; t += s["interval_ns"]
w = e0 / t * 1e3 if t else 0
if abs(w - 70) > 70 * 0.02:
    bad.append(f"gpu0 integrated {w:.2f} W, the script says 70 W")
print("\n".join(bad) if bad else f"power integrated to {w:.2f} W (70 W); equal split within 1 uJ; idle learned on the idle GPU, its active part all unattributed")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check5.out")" || fail "$(head -6 "$tmp/check5.out")"

# ---- MIG: per GPU instance. An H100 with GPM: instances of 42, 28 and 14 SMs at 60, 30 and 50 % SM
# utilisation (25.2, 8.4 and 7 busy SMs), p1 and p2 in the first, p3 in the second, none in the third;
# each instance's share is its busy SMs, equal over its processes, the idle instance's unattributed.
# An A100 without GPM: equally over its processes, said once ----
cat >"$script" <<EOF
device 0 GPU-4e4e4e4e-0000-0000-0000-000000000000 NVIDIA H100 80GB HBM3 (stand-in, MIG)
device 1 GPU-5f5f5f5f-0000-0000-0000-000000000000 NVIDIA A100-SXM4-40GB (stand-in, MIG)
power 0 300
power 1 200
mig 0
gpm 0
mig-instance 0 1 42
mig-instance 0 2 28
mig-instance 0 5 14
gpm-util 0 1 60
gpm-util 0 2 30
gpm-util 0 5 50
running 0 $p1 1
running 0 $p2 1
running 0 $p3 2
mig 1
mig-instance 1 3 42
mig-instance 1 4 14
running 1 $p4 3
running 1 $p5 4
EOF
FAKE_NVML_SCRIPT=$script "$collectd" --store.path "$tmp/s6" --store.group "" --meter.source fake --informer procfs \
	--monitor.interval 1s --gpu.nvml-library "$lib" --gpu.idle-power 50 >"$tmp/collectd6.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$tmp/s6" 10 || fail "no 10th snapshot: $(tail -3 "$tmp/collectd6.log")"
kill "$cpid" 2>/dev/null
wait "$cpid" 2>/dev/null
grep -q "GPU 0: MIG mode is on, 3 GPU instance(s): its active energy is split over them by their busy SMs (GPM)" "$tmp/collectd6.log" &&
	[ "$(grep -c "GPU 1: MIG mode is on and GPM is not available (GPM: not supported on this GPU (Hopper and later)): its active energy is split equally over its processes" "$tmp/collectd6.log")" = 1 ] &&
	ok "MIG: per instance by GPM on the H100, said; equally on the A100 without GPM, said once" ||
	fail "MIG start: $(grep 'MIG' "$tmp/collectd6.log")"
"$stdout" --store.path "$tmp/s6" --format json --all >"$tmp/all6.jsonl"
python3 - "$tmp/all6.jsonl" "$p1" "$p2" "$p3" "$p4" "$p5" <<'PY' >"$tmp/check6.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
p1, p2, p3, p4, p5 = (int(a) for a in sys.argv[2:7])
bad, got, act, unat = [], {}, {0: 0, 1: 0}, 0
for s in snaps[2:10]:  # the first: primed; the second: GPM's first pair of samples
    zones = s["node"]["zones"]
    for g in (0, 1):
        zi = next(i for i, z in enumerate(zones) if z["name"] == f"gpu{g}")
        z = zones[zi]
        procs = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
        if procs + z["unattributed_delta_uj"] != z["active_delta_uj"] or z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]:
            bad.append(f"seq {s['seq']} gpu{g}: not exact")
        for p in s["processes"]:
            got[(g, p["pid"])] = got.get((g, p["pid"]), 0) + p["zones"][zi]["delta_uj"]
        act[g] += z["active_delta_uj"]
        if g == 0:
            unat += z["unattributed_delta_uj"]
busy = 25.2 + 8.4 + 7.0
want = {(0, p1): 12.6 / busy, (0, p2): 12.6 / busy, (0, p3): 8.4 / busy, (1, p4): 0.5, (1, p5): 0.5}
worst = 0
for k, w in want.items():
    share = got.get(k, 0) / act[k[0]] if act[k[0]] else 0
    worst = max(worst, abs(share - w))
    if abs(share - w) > 0.01:
        bad.append(f"gpu{k[0]} pid {k[1]}: share {share:.4f}, expected {w:.4f}")
if abs(unat / act[0] - 7.0 / busy) > 0.01:
    bad.append(f"gpu0 unattributed {unat / act[0]:.4f}, the idle instance's {7.0 / busy:.4f}")
print("\n".join(bad) if bad else f"MIG: H100 by busy SMs (0.310, 0.310, 0.207; 0.172 of an instance without process unattributed), A100 equally; every share within {worst*100:.2f} points")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check6.out")" || fail "$(head -6 "$tmp/check6.out")"

# ---- processes that sleep on the CPU while their GPU works (CUDA's blocking sync): under eBPF a
# process is listed once it runs; NVML's are listed anyway, read from host.procfs; a PID that is not
# there (another PID namespace's) stays unattributed, and is said ----
if [ -e /sys/kernel/btf/vmlinux ]; then
	sleepers=()
	for _ in 1 2; do
		mkdir -p "$cgroot/docker/$ca"
		bash -c "echo \$\$ > '$cgroot/docker/$ca/cgroup.procs' && exec sleep 600" &
		pids+=($!)
		sleepers+=($!)
	done
	sleep 0.5 # they sleep from before the collector starts: eBPF never sees them run
	{
		echo "device 0 GPU-0a0a0a0a-1111-2222-3333-444444444444 NVIDIA H100 80GB HBM3 (stand-in)"
		echo "power 0 300"
		echo "util 0 ${sleepers[0]} 60"
		echo "util 0 ${sleepers[1]} 20"
		echo "util 0 $ghost 20"
	} >"$script"
	FAKE_NVML_SCRIPT=$script "$collectd" --store.path "$tmp/sleep" --store.group "" --meter.source fake --informer ebpf \
		--monitor.interval 1s --gpu.enabled true --gpu.nvml-library "$lib" --gpu.idle-power 40 >"$tmp/sleep.log" 2>&1 &
	spid=$!
	pids+=($spid)
	wait_seq "$tmp/sleep" 8 || fail "sleepers: no 8th snapshot: $(tail -3 "$tmp/sleep.log")"
	kill $spid
	wait $spid 2>/dev/null
	"$stdout" --store.path "$tmp/sleep" --format json --all >"$tmp/sleep.jsonl"
	python3 - "$tmp/sleep.jsonl" "${sleepers[0]}" "${sleepers[1]}" "$ca" <<'PY' >"$tmp/sleep.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
s1, s2, ca = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
got, cpu, active, unatt, bad = {s1: 0, s2: 0}, 0, 0, 0, []
for s in snaps[2:]:
    g = next(i for i, z in enumerate(s["node"]["zones"]) if z["name"] == "gpu0")
    for p in s["processes"]:
        if p["pid"] in got:
            got[p["pid"]] += p["zones"][g]["delta_uj"]
            cpu += p["cpu_time_delta_ns"]
            if p["container_id"] != ca:
                bad.append(f"pid {p['pid']}: container '{p['container_id']}', not the cgroup's")
    active += s["node"]["zones"][g]["active_delta_uj"]
    unatt += s["node"]["zones"][g]["unattributed_delta_uj"]
if not got[s1] or not got[s2] or abs(got[s1] / got[s2] - 3) > 0.06:
    bad.append(f"the sleepers' shares {got[s1]} and {got[s2]} uJ, not 3:1 (their utilisation 60:20)")
if active and abs(unatt / active - 0.2) > 0.01:
    bad.append(f"the unresolvable PID's share: {unatt / active:.3f} of the active energy unattributed, not 0.2")
print("\n".join(bad[:5]) if bad else
      f"2 processes asleep on the CPU ({cpu} ns of CPU in the run) get their GPU shares, {got[s1] / got[s2]:.3f}:1 for utilisation 3:1, "
      f"in their container; the PID not in host.procfs: {unatt / active:.3f} of the active energy unattributed (its 0.2)")
sys.exit(1 if bad else 0)
PY
	[ $? = 0 ] && ok "$(cat "$tmp/sleep.out")" || fail "$(head -5 "$tmp/sleep.out")"
	grep -q "1 process(es) NVML names on the GPUs are not in host.procfs" "$tmp/sleep.log" &&
		ok "the unresolvable GPU process is said" || fail "not said: $(grep -i 'nvml\|gpu' "$tmp/sleep.log" | tail -3)"
else
	echo "SKIP part: sleeping GPU processes need the eBPF informer (no BTF)"
fi

# ---- the library missing ----
timeout 4 "$collectd" --store.path "$tmp/s2" --store.group "" --meter.source fake --informer procfs \
	--monitor.interval 1s --gpu.nvml-library /nonexistent/libnvidia-ml.so.1 >"$tmp/nolib.log" 2>&1
n=$(grep -c "no GPU meter: cannot load /nonexistent/libnvidia-ml.so.1" "$tmp/nolib.log")
z=$("$stdout" --store.path "$tmp/s2" --format json | jq '[.node.zones[] | select(.source == "nvml")] | length')
[ "$n" = 1 ] && [ "$z" = 0 ] && ok "no NVML: the collector runs CPU-only and says so once" ||
	fail "no library: logged $n times, $z GPU zones: $(head -3 "$tmp/nolib.log")"
"$collectd" --store.path "$tmp/s3" --store.group "" --meter.source fake --informer procfs \
	--gpu.enabled true --gpu.nvml-library /nonexistent/libnvidia-ml.so.1 >"$tmp/nolib2.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "gpu.enabled true: cannot load /nonexistent/libnvidia-ml.so.1" "$tmp/nolib2.log" &&
	ok "gpu.enabled true without NVML: exit 1 with the reason" || fail "rc $rc: $(head -3 "$tmp/nolib2.log")"
"$collectd" --store.path "$tmp/s4" --store.group "" --meter.source fake --gpu.idle-power lots >"$tmp/bad.log" 2>&1
[ $? = 2 ] && grep -q "invalid value 'lots' for --gpu.idle-power: expected a power in watts" "$tmp/bad.log" &&
	[ ! -e "$tmp/s4" ] &&
	ok "a bad gpu.idle-power: exit 2 naming the key, before anything opens" || fail "bad idle power: $(head -3 "$tmp/bad.log")"
[ -n "${KEEP:-}" ] && cp -r "$tmp" /tmp/gpu-keep
finish gpu
