#!/usr/bin/env bash
# 16 GPUs beside the CPU and platform zones, as on an HGX-class node: the
# stand-in NVML (tests/fakes/fake_nvml) lists 16 devices, the fake CPU
# meter reports package, core, uncore, dram and psys, and a Redfish BMC
# (tests/fakes/fake_bmc.py, a steady 250 W) the platform: 23 zones a
# snapshot (platform-other included), more than the 16 a snapshot held
# before. Checked from kepler-stdout's JSON, every snapshot: the 16 GPU
# zones in NVML's order, each exact (Σ processes + unattributed == active,
# active + idle == energy); over the run, platform-other + package + dram +
# Σ GPUs == platform to the µJ and each GPU's power within 2 % of the
# script's. The node series keeps all 23 zones (kepler-dataset's node
# rows), and the exporter serves 16 kepler_node_gpu_info series.
# Usage: test_gpu_many.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in curl jq python3 openssl; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"
fakes=$(cd "$(dirname "$0")/../fakes" && pwd)
lib=$build/tests/nvml/libnvidia-ml.so.1
[ -f "$lib" ] || { fail "the stand-in $lib was not built"; finish gpu_many; }
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
dataset=$build/readers/dataset/kepler-dataset

# the BMC: a test CA's certificate, a steady 250 W
test_certs bmc bmc || { fail "openssl could not make the test certificates"; finish gpu_many; }
echo steady >"$tmp/mode"
bport=$(free_port)
python3 "$fakes/fake_bmc.py" "$bport" "$tmp/bmc.crt" "$tmp/bmc.key" admin secret "$tmp/mode" >"$tmp/bmc.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
	curl -s --cacert "$tmp/ca.crt" -o /dev/null "https://127.0.0.1:$bport/redfish/v1/Chassis" && break
	sleep 0.1
done
cat >"$tmp/bmc.yaml" <<EOF
nodes:
  worker-1: bmc-1
bmcs:
  bmc-1:
    endpoint: https://127.0.0.1:$bport/
    username: admin
    password: secret
    caFile: $tmp/ca.crt
EOF
chmod 0600 "$tmp/bmc.yaml"

# 16 GPUs of 4 + N/2 W; on each, this shell (a process the informer sees) and one PID it cannot
script=$tmp/nvml.script
{
	for g in $(seq 0 15); do
		printf 'device %d GPU-%08x-1111-2222-3333-444444444444 NVIDIA H100 80GB HBM3 (stand-in %d)\n' "$g" "$g" "$g"
		echo "power $g $((4 + g / 2))"
		echo "util $g $$ $((10 + g))"
		echo "util $g 4194000 10"
	done
} >"$script"
chmod 0644 "$script"
cat >"$tmp/config.yaml" <<EOF
dev:
  fake-meter:
    zones: [package, core, uncore, dram, psys]
    watts: 40
EOF

store=$tmp/store
FAKE_NVML_SCRIPT=$script "$collectd" --config "$tmp/config.yaml" --store.path "$store" --store.group "" \
	--meter.source fake --informer procfs --monitor.interval 1s --gpu.enabled true --gpu.nvml-library "$lib" \
	--gpu.idle-power 2 --platform.redfish.enabled --platform.redfish.config-file "$tmp/bmc.yaml" \
	--platform.redfish.node-name worker-1 --platform.redfish.poll-interval 1s >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
for _ in $(seq 600); do
	s=$("$stdout" --store.path "$store" --format json 2>/dev/null | jq -r .seq 2>/dev/null)
	[ -n "$s" ] && [ "$s" -ge 16 ] && break
	kill -0 $cpid 2>/dev/null || break
	sleep 0.1
done
grep -q "16 GPU zone(s) (nvml)" "$tmp/collectd.log" && ok "the collector reads 16 GPUs" ||
	fail "not 16 GPUs: $(grep -iE 'gpu|zone|error' "$tmp/collectd.log" | head -5)"

"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl" || fail "kepler-stdout --all"
python3 - "$tmp/all.jsonl" <<'PY' >"$tmp/check.out" 2>&1
import json, sys
every = [json.loads(l) for l in open(sys.argv[1])]
snaps = every[2:]  # the first: primed; the second: the BMC's first reading
bad = []
sums = {}
# platform-other over the whole run: an interval whose zones drew more than the platform (before the
# BMC's first reading, or a reading late on a loaded machine) gets 0, and the excess is taken from
# the next ones: after an interval whose platform-other is above 0 nothing is owed, so up to the
# last such interval the sums hold exactly
def po_of(s):
    return next((z["delta_uj"] for z in s["node"]["zones"] if z["name"] == "platform-other"), 0)
last = max((i for i, s in enumerate(every) if po_of(s) > 0), default=len(every) - 1)
for s in every[:last + 1]:
    for z in s["node"]["zones"]:
        sums[z["name"]] = sums.get(z["name"], 0) + z["delta_uj"]
seconds = 0
energy = [0] * 16
for s in snaps:
    zones = s["node"]["zones"]
    names = [z["name"] for z in zones]
    want = ["package", "core", "uncore", "dram", "psys"] + [f"gpu{g}" for g in range(16)] + ["platform", "platform-other"]
    if sorted(names) != sorted(want):
        bad.append(f"seq {s['seq']}: zones {names}")
        continue
    gz = [i for i, z in enumerate(zones) if z["source"] == "nvml"]
    if [zones[i]["name"] for i in gz] != [f"gpu{g}" for g in range(16)]:
        bad.append(f"seq {s['seq']}: GPU zones out of NVML's order: {[zones[i]['name'] for i in gz]}")
    seconds += s["interval_ns"] / 1e9
    for g, zi in enumerate(gz):
        z = zones[zi]
        procs = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
        if procs + z["unattributed_delta_uj"] != z["active_delta_uj"]:
            bad.append(f"seq {s['seq']} gpu{g}: processes {procs} + unattributed != active")
        if z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]:
            bad.append(f"seq {s['seq']} gpu{g}: active + idle != energy")
        energy[g] += z["delta_uj"]
    po = next(z["delta_uj"] for z in zones if z["name"] == "platform-other")
    drawn = sum(z["delta_uj"] for z in zones if z["name"] in ("package", "dram") or z["source"] == "nvml")
    plat = next(z["delta_uj"] for z in zones if z["name"] == "platform")
    if po > max(0, plat - drawn):
        bad.append(f"seq {s['seq']}: platform-other {po} uJ, more than platform - package - dram - GPUs {plat - drawn}")
explained = sums["package"] + sums["dram"] + sum(sums[f"gpu{g}"] for g in range(16)) + sums["platform-other"]
if explained != sums["platform"]:
    bad.append(f"platform {sums['platform']} uJ, package + dram + GPUs + platform-other {explained} uJ over the run")
for g in range(16):
    w = 4 + g // 2
    got = energy[g] / 1e6 / seconds
    if abs(got - w) > w * 0.02:
        bad.append(f"gpu{g}: {got:.2f} W over the run, the script says {w} W")
print("\n".join(bad[:10]) if bad else f"{len(snaps)} snapshots of 23 zones: 16 GPUs exact in each, their power within 2 %; platform = package + dram + GPUs + platform-other")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check.out")" || fail "$(head -10 "$tmp/check.out")"

# the node series: every zone, the 17th to the 23rd too
"$dataset" --store.path "$store" --level node --format jsonl >"$tmp/node.jsonl" 2>"$tmp/dataset.err"
python3 - "$tmp/node.jsonl" <<'PY' >"$tmp/series.out" 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [k for k in ("gpu15_joules", "platform_joules", "platform-other_joules", "psys_joules") if not rows or rows[-1].get(k) is None]
print(f"missing from the node series: {bad}" if bad else f"{len(rows)} node rows, each with all 23 zones (gpu15, platform, platform-other)")
sys.exit(1 if bad or not rows else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/series.out")" || fail "$(cat "$tmp/series.out") $(head -3 "$tmp/dataset.err")"

port=$(free_port)
start_exporter_for "$store" "$port"
wait_metrics "$port" "$tmp/metrics" || fail "no snapshot on /metrics: $(tail -3 "$tmp/exporter-$port.log")"
n=$(grep -c '^kepler_node_gpu_info{' "$tmp/metrics")
[ "$n" = 16 ] && grep -q '^kepler_node_gpu_joules_total{gpu="15",' "$tmp/metrics" &&
	grep -q '^kepler_platform_watts{' "$tmp/metrics" && grep -q 'zone="platform-other"' "$tmp/metrics" &&
	ok "the exporter: 16 kepler_node_gpu_info series, gpu 15's counter, kepler_platform_watts, platform-other" ||
	fail "exporter: $n GPU info series; $(grep -E '^kepler_node_(gpu|platform)' "$tmp/metrics" | cut -c1-120 | head -4)"
finish gpu_many
