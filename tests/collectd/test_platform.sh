#!/usr/bin/env bash
# RAPL and a platform meter together (a fake sysfs tree with the real
# layout: powercap package and dram, an ACPI power_meter hwmon chip), under
# meter.source auto. A writer advances the counters and the power (package
# 50 W, dram 10 W, platform 150 W; then a spell where RAPL draws more than
# the platform meter says). Checked on every snapshot: the zone
# platform-other is platform - package - dram, so that those three add up
# to platform exactly, except in the spell, where it is 0, counted and
# logged; per zone Σ processes + unattributed == active and active + idle == energy;
# kepler_platform_watts in the exporter.
# Usage: test_platform.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in curl jq python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
sys=$tmp/sys
bash "$src/tools/fake-sysfs.sh" "$sys" --dram --hwmon >/dev/null || { fail "fake-sysfs.sh"; finish platform; }
pkg=$sys/devices/virtual/powercap/intel-rapl/intel-rapl:0
hw=$(dirname "$(readlink -f "$sys/class/hwmon/hwmon1/name")")
[ "$(cat "$hw/name")" = power_meter ] || { fail "no power_meter chip in the fake tree"; finish platform; }

# the writer: every 100 ms package +5 J, dram +1 J (50 W, 10 W); the
# platform at 150 W, then 5 W for 3.5 s (RAPL's 60 W is more, even if a
# busy machine slows the writer), then 150 W. No reader may see a torn
# file, as none does in sysfs: the counters are written in place (they only
# grow), the power (which shrinks) is replaced by a rename. A truncating
# echo let the collector read an empty file now and then: a failed read,
# whose energy then came in the next interval, at twice the watts.
power() { echo "$1" >"$hw/.power1_average" && mv -f "$hw/.power1_average" "$hw/power1_average"; }
power 150000000
(
	p=$(cat "$pkg/energy_uj") d=$(cat "$pkg/intel-rapl:0:0/energy_uj")
	for i in $(seq 1200); do
		p=$((p + 5000000)) d=$((d + 1000000))
		echo $p 1<>"$pkg/energy_uj"
		echo $d 1<>"$pkg/intel-rapl:0:0/energy_uj"
		[ -f "$tmp/low" ] && power 5000000 || power 150000000
		sleep 0.1
	done
) &
pids+=($!)

store=$tmp/store
# the collectors here see the test's own processes only (own_pids): another job's 10,000 would
# make each snapshot take seconds on a loaded machine
own_pids "$collectd" --store.path "$store" --store.group "" --host.sysfs "$sys" --informer procfs --monitor.interval 1s \
	--gpu.enabled false >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq() {
	for _ in $(seq 300); do
		s=$("$stdout" --store.path "$store" --format json 2>/dev/null | jq -r .seq 2>/dev/null)
		[ -n "$s" ] && [ "$s" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
wait_seq 8 || fail "no 8th snapshot: $(tail -3 "$tmp/collectd.log")"
grep -q "energy source rapl: package .*, dram .*; and the platform hwmon: platform" "$tmp/collectd.log" &&
	grep -q "zones package (rapl), dram (rapl), platform (hwmon), platform-other (platform - package - dram - GPUs)" "$tmp/collectd.log" &&
	ok "auto: RAPL for the CPU zones and the ACPI power meter for platform, both said at start" ||
	fail "start: $(grep -E 'energy source|started' "$tmp/collectd.log")"

port=$(free_port)
start_exporter_for "$store" "$port"
wait_metrics "$port" "$tmp/metrics" || fail "no snapshot on /metrics: $(tail -3 "$tmp/exporter-$port.log")"
line=$(grep '^kepler_platform_watts{' "$tmp/metrics")
v=${line##* }
[[ "$line" == 'kepler_platform_watts{bmc_id="",chassis_id="",node_name="'*'",source="hwmon",source_id="'*'power1_average",source_name="platform",source_type="hwmon"} '* ]] &&
	awk -v v="$v" 'BEGIN { exit !(v > 140 && v < 160) }' && ok "kepler_platform_watts (Kepler's labels): $v W" ||
	fail "platform watts: '$line'"
grep -q '^kepler_node_cpu_joules_total{node_name="[^"]*",path="platform - package - dram - gpu",zone="platform-other"}' "$tmp/metrics" &&
	ok "platform-other is a zone like the others in the exporter" || fail "no platform-other series"

touch "$tmp/low"
sleep 3.5
rm -f "$tmp/low"
seq0=$("$stdout" --store.path "$store" --format json | jq -r .seq)
wait_seq $((seq0 + 4)) || fail "stalled after the low spell"
stop_own "$cpid"
grep -q "platform-other: [0-9]* interval(s) since the last warning in which package, dram and the GPUs drew more than the platform meter" "$tmp/collectd.log" &&
	ok "RAPL above the platform meter: clipped to 0 and logged" || fail "clipping not logged: $(grep -i warn "$tmp/collectd.log" | head -3)"
n=$(grep -c "platform-other: " "$tmp/collectd.log")
[ "$n" = 1 ] && ok "logged once for the spell (at most once a minute)" || fail "logged $n times"
grep -q "energy read: " "$tmp/collectd.log" &&
	fail "a read failed (a torn file from the writer?): $(grep -m1 "energy read: " "$tmp/collectd.log")" ||
	ok "no energy read failed"

"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl"
python3 - "$tmp/all.jsonl" <<'PY' >"$tmp/check.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
# the rule, replayed: other = platform - package - dram - what earlier intervals owed, never below 0
bad, exact, clipped, debt = [], 0, 0, 0
for s in snaps[1:]:
    z = {x["name"]: x for x in s["node"]["zones"]}
    if set(z) != {"package", "dram", "platform", "platform-other"}:
        bad.append(f"seq {s['seq']}: zones {sorted(z)}")
        continue
    parts = z["package"]["delta_uj"] + z["dram"]["delta_uj"] + debt
    rest = z["platform-other"]["delta_uj"]
    want = max(0, z["platform"]["delta_uj"] - parts)
    debt = max(0, parts - z["platform"]["delta_uj"])
    if rest != want:
        bad.append(f"seq {s['seq']}: platform-other {rest}, the rule says {want}")
    if debt == 0 and parts <= z["platform"]["delta_uj"] and parts + rest == z["platform"]["delta_uj"]:
        exact += 1
    if debt:
        clipped += 1
    for i, zone in enumerate(s["node"]["zones"]):
        procs = sum(p["zones"][i]["delta_uj"] for p in s["processes"])
        if procs + zone["unattributed_delta_uj"] != zone["active_delta_uj"] or zone["active_delta_uj"] + zone["idle_delta_uj"] != zone["delta_uj"]:
            bad.append(f"seq {s['seq']} {zone['name']}: processes {procs} + unattributed {zone['unattributed_delta_uj']}, active {zone['active_delta_uj']}")
if clipped < 2:
    bad.append(f"only {clipped} clipped intervals in a 3 s spell")
tot = {n: sum(x["delta_uj"] for s in snaps for x in s["node"]["zones"] if x["name"] == n) for n in ("package", "dram", "platform", "platform-other")}
# per interval other - owed_now == platform - parts - owed_before, so over the run
# package + dram + platform-other == platform + what is still owed at the end
if tot["package"] + tot["dram"] + tot["platform-other"] != tot["platform"] + debt:
    bad.append(f"over the run: {tot} with {debt} owed does not add up")
print("\n".join(bad) if bad else f"{exact} intervals: package + dram + platform-other == platform exactly; {clipped} clipped to 0 in the spell, the excess taken back after; over the run package + dram + platform-other == platform + {debt} still owed, to the uJ; per zone processes + unattributed == active")
sys.exit(1 if bad else 0)
PY
[ $? = 0 ] && ok "$(cat "$tmp/check.out")" || fail "$(head -8 "$tmp/check.out")"
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" && fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"

# meter.source rapl: RAPL alone, no platform meter read
own_until 'seq_at_least "$tmp/s2" 2' "$collectd" --store.path "$tmp/s2" --store.group "" --host.sysfs "$sys" --informer procfs \
	--meter.source rapl --monitor.interval 1s --gpu.enabled false >"$tmp/rapl.log" 2>&1
grep -q "zones package (rapl), dram (rapl);" "$tmp/rapl.log" && ok "meter.source rapl: RAPL alone" ||
	fail "rapl alone: $(grep started "$tmp/rapl.log")"

# the idle policies on the same tree: per zone Σ processes' active + idle + unattributed == energy
for pol in cpu size; do
	own_until 'seq_at_least "$tmp/s-$pol" 4' "$collectd" --store.path "$tmp/s-$pol" --store.group "" --host.sysfs "$sys" --informer procfs \
		--monitor.interval 1s --gpu.enabled false --attribution.idle $pol >"$tmp/$pol.log" 2>&1
	"$stdout" --store.path "$tmp/s-$pol" --format json --all >"$tmp/$pol.jsonl"
	python3 - "$tmp/$pol.jsonl" $pol <<'PY' >"$tmp/$pol.out" 2>&1
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
bad, n, debt, clipped = [], 0, 0, 0
for s in snaps[1:]:
    z = {x["name"]: x for x in s["node"]["zones"]}
    if s["idle_policy"] != sys.argv[2]:
        bad.append(f"seq {s['seq']}: policy {s['idle_policy']}")
    # platform-other by the rule (as above): exact, or clipped with the excess owed. On a
    # loaded machine the first interval can clip: the power meter's integration starts at
    # its first sample, RAPL's counters at theirs.
    parts = z["package"]["delta_uj"] + z["dram"]["delta_uj"] + debt
    want = max(0, z["platform"]["delta_uj"] - parts)
    debt = max(0, parts - z["platform"]["delta_uj"])
    clipped += debt > 0
    if z["platform-other"]["delta_uj"] != want:
        bad.append(f"seq {s['seq']}: platform-other {z['platform-other']['delta_uj']}, the rule says {want}")
    for i, zone in enumerate(s["node"]["zones"]):
        a = sum(p["zones"][i]["delta_uj"] for p in s["processes"])
        d = sum(p["zones"][i]["idle_delta_uj"] for p in s["processes"])
        # cpu: idle goes as active goes, so in an interval no process ran (procfs ticks) none can take it
        ran = any(p["cpu_time_delta_ns"] for p in s["processes"])
        must_give = sys.argv[2] == "size" or ran
        # the active part their CPU time accounts for is the processes', the rest (CPU time none of them accounts for) unattributed
        cpu = sum(p["cpu_time_delta_ns"] for p in s["processes"])
        busy = s["node"]["cpu_busy_delta_ns"]
        want = 0 if not cpu else zone["active_delta_uj"] if cpu >= busy else zone["active_delta_uj"] * cpu // busy
        if a + d + zone["unattributed_delta_uj"] != zone["delta_uj"] or a != want or (must_give and d != zone["idle_delta_uj"]):
            bad.append(f"seq {s['seq']} {zone['name']}: active {a} + idle {d} + unattributed {zone['unattributed_delta_uj']} vs {zone['delta_uj']}")
        n += 1
tot = {k: sum(x["delta_uj"] for s in snaps for x in s["node"]["zones"] if x["name"] == k) for k in ("package", "dram", "platform", "platform-other")}
if tot["package"] + tot["dram"] + tot["platform-other"] != tot["platform"] + debt:  # as above
    bad.append(f"over the run: {tot} with {debt} owed does not add up")
print("\n".join(bad[:5]) if bad or n < 8 else f"{n} zone-intervals, {clipped} clipped")
sys.exit(1 if bad or n < 8 else 0)
PY
	[ $? = 0 ] && ok "attribution.idle $pol: package + dram + platform-other == platform by the rule, and per zone Σ processes' active + idle == energy exactly ($(cat "$tmp/$pol.out"))" ||
		fail "attribution.idle $pol: $(head -5 "$tmp/$pol.out")"
done
finish platform
