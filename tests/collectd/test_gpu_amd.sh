#!/usr/bin/env bash
# AMD GPUs end to end, through the stand-in ROCm SMI (tests/fakes/fake_rocm_smi:
# ROCm SMI's entry points and status codes, driven by a script file), loaded
# by the real collector with dlopen (--gpu.rocm-library), NVML absent: two
# GPUs, three of the test's processes. Checked from kepler-stdout's JSON:
# every GPU zone of every snapshot adds up (Σ processes + unattributed ==
# active, active + idle == energy); each device's energy equals the
# stand-in's accumulator (counts x 15.3 uJ, as it logged them) to the
# microjoule; the split by compute-unit occupancy, then equal shares when no
# process reports one; a GPU that goes away (FILE_ERROR) and comes back;
# the library absent; the exporter's vendor label.
# Usage: test_gpu_amd.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in jq python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"
lib=$build/tests/rocm/librocm_smi64.so.5
[ -f "$lib" ] || { fail "the stand-in $lib was not built"; finish gpu_amd; }
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout

for _ in 1 2 3; do
	bash -c 'while :; do sleep 0.2; done' &
	pids+=($!)
done
p1=${pids[0]} p2=${pids[1]} p3=${pids[2]}
script=$tmp/rsmi.script
write_script() { # CU1 CU2 CU3 [EXTRA LINE...]
	{
		echo "device 0 AMD Instinct MI210 (stand-in)"
		echo "device 1 AMD Instinct MI300X (stand-in)"
		echo "power 0 300"
		echo "power 1 500"
		echo "proc $p1 $1 0"
		echo "proc $p2 $2 0,1"
		echo "proc $p3 $3 1"
		shift 3
		for l in "$@"; do echo "$l"; done
	} >"$script.new"
	mv "$script.new" "$script"
}
write_script 60 20 0
chmod 0644 "$script"
export FAKE_ROCM_SMI_SCRIPT=$script FAKE_ROCM_SMI_LOG=$tmp/rsmi.log
: >"$tmp/rsmi.log"
chmod 0666 "$tmp/rsmi.log" # the stand-in runs in the collector, which drops to its own user

store=$tmp/store
"$collectd" --store.path "$store" --store.group "" --meter.source fake --informer procfs --monitor.interval 500ms \
	--gpu.enabled true --gpu.nvml-library "$tmp/no-nvml.so" --gpu.rocm-library "$lib" >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$store" 8 || fail "no 8th snapshot: $(tail -3 "$tmp/collectd.log")"
grep -q "AMD GPU 0: AMD Instinct MI210 (stand-in) GPU-5a5a000000000000, zone gpu0, energy from its energy counter" "$tmp/collectd.log" &&
	grep -q "2 GPU zone(s) (rocm-smi)" "$tmp/collectd.log" &&
	ok "the collector loaded the stand-in ROCm SMI by dlopen, NVML absent: 2 AMD GPUs, said at start" ||
	fail "start: $(grep -iE 'gpu' "$tmp/collectd.log" | head -4)"
# each phase's window: from the first snapshot surely after the script changed (its seq
# read after the change, + 1) to the last surely before the next change (read before it)
cu_end=$(store_seq "$store")
# no process reports an occupancy: equal shares
write_script 0 0 0
eq_start=$(($(store_seq "$store") + 1))
wait_seq "$store" $((eq_start + 6)) || fail "stalled in the equal phase"
eq_end=$(store_seq "$store")
# GPU 1 goes away, then comes back
write_script 60 20 0 "lost 1"
for _ in $(seq 600); do grep -q "AMD GPU 1: rsmi_dev_energy_count_get: RSMI_STATUS_FILE_ERROR" "$tmp/collectd.log" && break; sleep 0.1; done
lost_at=$(store_seq "$store")
write_script 60 20 0
wait_seq "$store" $((lost_at + 6)) || fail "stalled after GPU 1 came back"
kill "$cpid"
wait "$cpid"
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" && fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"
grep -q "AMD GPU 1: rsmi_dev_energy_count_get: RSMI_STATUS_FILE_ERROR.* (the GPU went away?)" "$tmp/collectd.log" &&
	ok "a GPU that went away (FILE_ERROR): said, named" || fail "lost GPU not logged: $(grep -i 'gpu 1' "$tmp/collectd.log" | tail -3)"

"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl"
python3 - "$tmp/all.jsonl" "$tmp/rsmi.log" "$cu_end" "$eq_start" "$eq_end" "$p1" "$p2" "$p3" <<'PY' >"$tmp/check.out" 2>&1
import json, struct, sys
from fractions import Fraction
snaps = [json.loads(l) for l in open(sys.argv[1])]
cu_end, eq_start, eq_end = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
p1, p2, p3 = (int(x) for x in sys.argv[6:9])
res = Fraction(struct.unpack("f", struct.pack("f", 15.3))[0])
logged = {0: [], 1: []}
for l in open(sys.argv[2]):
    _, d, c = l.split()
    logged[int(d)].append(int(c))
bad = []
for s in snaps:
    for i, z in enumerate(s["node"]["zones"]):
        if not z["name"].startswith("gpu"):
            continue
        procs = sum(p["zones"][i]["delta_uj"] for p in s["processes"])
        if procs + z["unattributed_delta_uj"] != z["active_delta_uj"] or z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]:
            bad.append(f"seq {s['seq']} {z['name']}: processes {procs} + unattributed {z['unattributed_delta_uj']}, active {z['active_delta_uj']}, idle {z['idle_delta_uj']}, energy {z['delta_uj']}")
# each device's energy: the stand-in's accumulator difference since the collector's first read, to the uJ
last = snaps[-1]
for d in (0, 1):
    z = [z for z in last["node"]["zones"] if z["name"] == f"gpu{d}"][0]
    c = logged[d][1:]  # the first is the probe at open
    uj = lambda v: int(v * res)
    want = {uj(v) - uj(c[0]) for v in c}
    if z["energy_uj"] not in want:
        bad.append(f"gpu{d}: energy {z['energy_uj']} uJ is none of the stand-in's differences (last {uj(c[-1]) - uj(c[0])})")
# shares of gpu0's active energy: 60:20 by occupancy, then 1:1 with none reported
def share(lo, hi, zone, pid):
    tot = mine = 0
    for s in snaps:
        if not lo < s["seq"] <= hi:
            continue
        i = [k for k, z in enumerate(s["node"]["zones"]) if z["name"] == zone][0]
        tot += sum(p["zones"][i]["delta_uj"] for p in s["processes"])
        mine += sum(p["zones"][i]["delta_uj"] for p in s["processes"] if p["pid"] == pid)
    return mine / tot if tot else 0
a, b = share(1, cu_end, "gpu0", p1), share(eq_start, eq_end, "gpu0", p1)
c = share(2, cu_end, "gpu1", p3)
if abs(a - 0.75) > 0.001 or abs(b - 0.5) > 0.001 or c != 0:
    bad.append(f"shares: p1 of gpu0 {a:.4f} by occupancy (want 0.75), {b:.4f} equal (want 0.5); p3 (occupancy 0) of gpu1 {c:.4f} (want 0)")
print("\n".join(bad) if bad else f"{len(snaps)} snapshots: every GPU zone adds up exactly; gpu0 {[z for z in last['node']['zones'] if z['name'] == 'gpu0'][0]['energy_uj']} uJ and gpu1 equal the stand-in's accumulator to the uJ; p1's share of gpu0 {a:.4f} by compute-unit occupancy (60:20), {b:.4f} with none reported (equal); p3, at occupancy 0 beside busy ones, none")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check.out")" || fail "$(head -8 "$tmp/check.out")"

# the exporter names them as AMD's
port=$(free_port)
start_exporter_for "$store" "$port"
wait_metrics "$port" "$tmp/metrics" || fail "no snapshot on /metrics: $(tail -3 "$tmp/exporter-$port.log")"
grep -q '^kepler_node_gpu_info{gpu="1",gpu_name="AMD Instinct MI300X (stand-in)",gpu_uuid="GPU-5a5a000000000001",node_name="[^"]*",vendor="amd"} 1$' "$tmp/metrics" &&
	ok "kepler_node_gpu_info with vendor=\"amd\"" || fail "gpu info: $(grep gpu_info "$tmp/metrics")"

# no library: gpu.enabled auto runs without GPUs, saying why; true refuses to start
"$collectd" --store.path "$tmp/s2" --store.group "" --meter.source fake --informer procfs --gpu.enabled true \
	--gpu.nvml-library "$tmp/no-nvml.so" --gpu.rocm-library "$tmp/no-rocm.so" >"$tmp/none.log" 2>&1
[ $? = 1 ] && grep -q "gpu.enabled true: cannot load $tmp/no-nvml.so: .*; and cannot load $tmp/no-rocm.so" "$tmp/none.log" &&
	ok "neither library: gpu.enabled true exits 1 naming both" || fail "no library: $(tail -2 "$tmp/none.log")"
finish gpu_amd
