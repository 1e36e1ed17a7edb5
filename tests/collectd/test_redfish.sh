#!/usr/bin/env bash
# The server's power from its BMC over Redfish. A local HTTPS BMC
# (tests/fakes/fake_bmc.py: a test CA's certificate, session login, the DMTF
# documents) serves a known sequence of watts; the collector polls it every
# second on its own thread while it snapshots every 500 ms. Then the BMC
# answers in 2 s, expires the session (401), answers 500, garbage, hangs.
# Checked: the readings are the BMC's sequence; the platform energy in the
# store is the trapezoid of the readings the collector took, to the µJ,
# with the spans over three polls long (the hang) left out and said; one
# login until the session expires, then one more; each fault logged; no
# interval late; platform-other by the rule; Kepler's kepler_platform_watts;
# the legacy Power document; a BMC file others may read refused.
# Usage: test_redfish.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in curl jq openssl python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"
fakes=$(cd "$(dirname "$0")/../fakes" && pwd)
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout

test_certs bmc bmc || { fail "openssl could not make the test certificates"; finish redfish; }
chmod 0644 "$tmp/ca.crt"
echo ok >"$tmp/mode"
start_bmc() { # start_bmc PORT LOG [legacy]
	python3 "$fakes/fake_bmc.py" "$1" "$tmp/bmc.crt" "$tmp/bmc.key" admin 'pa"ss w0rd' "$tmp/mode" ${3:-} >"$2" 2>&1 &
	pids+=($!)
	for _ in $(seq 50); do
		curl -s --cacert "$tmp/ca.crt" -o /dev/null "https://127.0.0.1:$1/redfish/v1/Chassis" && return 0
		sleep 0.1
	done
	return 1
}
bmc_file() { # bmc_file PORT FILE
	cat >"$2" <<EOF
nodes:
  worker-1: bmc-1
bmcs:
  bmc-1:
    endpoint: https://127.0.0.1:$1/
    username: admin
    password: 'pa"ss w0rd'
    insecure: false
    caFile: $tmp/ca.crt
EOF
	chmod 0640 "$2"
}
port=$(free_port)
start_bmc "$port" "$tmp/bmc.log" || { fail "the fake BMC did not start"; finish redfish; }
bmc_file "$port" "$tmp/bmc.yaml"
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tmp/ca.crt" "https://127.0.0.1:$port/redfish/v1/Chassis")
[ "$code" = 401 ] && ok "the fake BMC wants a session (HTTP 401 without one)" || fail "no session: HTTP $code"

# a BMC file others may read: refused, the collector does not start
cp "$tmp/bmc.yaml" "$tmp/open.yaml"
chmod 0644 "$tmp/open.yaml"
"$collectd" --store.path "$tmp/s0" --store.group "" --meter.source fake --platform.redfish.enabled \
	--platform.redfish.config-file "$tmp/open.yaml" --platform.redfish.node-name worker-1 >"$tmp/open.log" 2>&1
[ $? = 1 ] && grep -q "platform.redfish: the BMC file $tmp/open.yaml may be read by others (mode 0644)" "$tmp/open.log" &&
	ok "a BMC file others may read is refused (exit 1)" || fail "open file: $(head -3 "$tmp/open.log")"
# a planted link (to a root-only file): refused, not followed (docs/security.md#secret-files)
ln -s /etc/shadow "$tmp/planted.yaml"
"$collectd" --store.path "$tmp/s0" --store.group "" --meter.source fake --platform.redfish.enabled \
	--platform.redfish.config-file "$tmp/planted.yaml" --platform.redfish.node-name worker-1 >"$tmp/planted.log" 2>&1
[ $? = 1 ] && grep -q "the BMC file $tmp/planted.yaml is a symbolic link (to /etc/shadow): refused" "$tmp/planted.log" &&
	ok "a BMC file that is a planted link is refused (exit 1)" || fail "planted link: $(head -3 "$tmp/planted.log")"
"$collectd" --store.path "$tmp/s0" --store.group "" --meter.source fake --platform.redfish.enabled \
	--platform.redfish.config-file "$tmp/bmc.yaml" --platform.redfish.node-name worker-9 >"$tmp/node.log" 2>&1
[ $? = 1 ] && grep -q "no BMC for node 'worker-9'" "$tmp/node.log" && ok "a node the file does not list: exit 1, said" ||
	fail "unknown node: $(head -3 "$tmp/node.log")"

store=$tmp/store
# the collectors here see the test's own processes only (own_pids): another job's 10,000 would
# make each snapshot take seconds on a loaded machine, which never_waited below would take for a wait
own_pids "$collectd" --store.path "$store" --store.group "" --meter.source fake --informer procfs --monitor.interval 500ms \
	--platform.redfish.enabled --platform.redfish.config-file "$tmp/bmc.yaml" --platform.redfish.node-name worker-1 \
	--platform.redfish.poll-interval 1s --platform.redfish.http-timeout 3s --log.level debug \
	>"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
phase() { echo "$1" >"$tmp/mode"; sleep "$2"; }
sleep 6
phase slow 5
phase expire 3
phase 500 3
phase garbage 3
phase hang 6
phase ok 4
# no reading after this: every reading the collector took is in the store once it stops
phase 500 2.5
stop_own "$cpid"
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" && fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"
grep -q "and the platform redfish: platform \[https://127.0.0.1:$port\]" "$tmp/collectd.log" &&
	ok "the BMC is the platform meter beside the CPU zones" || fail "start: $(grep 'energy source' "$tmp/collectd.log")"

# the readings: the BMC's sequence, in order (a reading the collector gave up on is missing, never another)
grep -o 'redfish reading: [0-9]* mW at [0-9]* ns' "$tmp/collectd.log" | awk '{print $3, $6}' >"$tmp/readings"
grep -o 'served [0-9.]* W' "$tmp/bmc.log" | awk '{printf "%d\n", $2 * 1000 + 0.5}' >"$tmp/served"
n=$(wc -l <"$tmp/readings")
python3 - "$tmp/readings" "$tmp/served" <<'PY' >"$tmp/seq.out" 2>&1
import sys
got = [int(l.split()[0]) for l in open(sys.argv[1])]
served = [int(l) for l in open(sys.argv[2])]
it = iter(served)
ok = all(any(g == s for s in it) for g in got)
print(f"{len(got)} readings, {len(served)} served: {'a subsequence' if ok else 'NOT a subsequence'} of the BMC's")
sys.exit(0 if ok and len(got) >= 10 else 1)
PY
[ $? = 0 ] && ok "$(cat "$tmp/seq.out")" || fail "$(cat "$tmp/seq.out")"

# the energy: spread over the intervals, the last reading held (meter_redfish.c). Each read's
# cumulative energy, replayed from the readings: the trapezoid of the readings it had (spans over
# 3 polls, 3 s, left out), plus the last one held since (up to 3 polls), never below the read
# before; the store's platform energy is the last read's, to the microjoule
grep -o 'redfish read at [0-9]* ns: [0-9]* uJ in all (the last reading [0-9]* mW at [0-9]* ns)' "$tmp/collectd.log" |
	awk '{print $4, $6, $13, $16}' >"$tmp/reads"
"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl"
python3 "$fakes/polled_replay.py" "$tmp/readings" "$tmp/reads" "$tmp/all.jsonl" 3000000000 0 >"$tmp/energy.out" 2>&1
[ $? = 0 ] && ok "$(cat "$tmp/energy.out")" || fail "$(head -6 "$tmp/energy.out")"

logins=$(grep -c '^login' "$tmp/bmc.log")
[ "$logins" = 2 ] && ok "one session until the BMC expired it, then one more (2 logins for $n readings)" ||
	fail "$logins logins"
for what in "HTTP 401 (the session expired: logging in again)" "HTTP 500" "not a JSON object" "Timeout was reached" \
	"that span counts no energy"; do
	grep -q "energy read: redfish bmc-1: .*$what" "$tmp/collectd.log" || fail "not logged: $what"
done
# the loop never waited on the BMC: no snapshot took the BMC's 3 s timeout to build (its own
# timing; the intervals between snapshots are the scheduler's on a busy machine)
built=$(never_waited "$tmp/collectd.log" 3000) || fail "the loop waited on the BMC: $built"
ok "each fault logged (401, 500, garbage, a hang, the gap); the loop never waited on it ($built)"

# the exporter: Kepler's kepler_platform_watts, source redfish
ep=$(free_port)
"$build/readers/exporter/kepler-exporter" --store.path "$store" --web.listen-address "127.0.0.1:$ep" >"$tmp/exporter.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	curl -sf -o "$tmp/metrics" "http://127.0.0.1:$ep/metrics" && grep -q '^kepler_snapshot_seq{' "$tmp/metrics" && break
	sleep 0.1
done
grep -q "^kepler_platform_watts{bmc_id=\"\",chassis_id=\"\",node_name=\"[^\"]*\",source=\"redfish\",source_id=\"https://127.0.0.1:$port\",source_name=\"platform\",source_type=\"redfish\"} " "$tmp/metrics" &&
	ok "kepler_platform_watts with source=redfish" || fail "platform watts: $(grep platform_watts "$tmp/metrics")"

# the legacy Power document (a BMC without EnvironmentMetrics)
echo ok >"$tmp/mode"
port2=$(free_port)
start_bmc "$port2" "$tmp/bmc2.log" legacy || fail "the legacy BMC did not start"
bmc_file "$port2" "$tmp/bmc2.yaml"
own_until '[ "$(grep -c "redfish reading: " "$tmp/legacy.log")" -ge 2 ]' "$collectd" --store.path "$tmp/s2" --store.group "" --meter.source fake --informer procfs --monitor.interval 500ms \
	--platform.redfish.enabled --platform.redfish.config-file "$tmp/bmc2.yaml" --platform.redfish.node-name worker-1 \
	--platform.redfish.poll-interval 1s --log.level debug >"$tmp/legacy.log" 2>&1
n=$(grep -c 'redfish reading: ' "$tmp/legacy.log")
[ "$n" -ge 2 ] && ok "the legacy Power document (PowerControl[0].PowerConsumedWatts): $n readings" ||
	fail "legacy: $n readings: $(grep -i redfish "$tmp/legacy.log" | head -3)"

# a slow BMC spread over the intervals: steady at 250 W, polled every 5 s, snapshots every 1 s
echo steady >"$tmp/mode"
own_until 'seq_at_least "$tmp/s3" 14' "$collectd" --store.path "$tmp/s3" --store.group "" --meter.source fake --informer procfs --monitor.interval 1s \
	--platform.redfish.enabled --platform.redfish.config-file "$tmp/bmc2.yaml" --platform.redfish.node-name worker-1 \
	--platform.redfish.poll-interval 5s --log.level debug >"$tmp/steady.log" 2>&1
"$stdout" --store.path "$tmp/s3" --format json --all >"$tmp/steady.jsonl"
python3 - "$tmp/steady.jsonl" <<'PY' >"$tmp/steady.out" 2>&1
import json, statistics, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
w = [z["delta_uj"] / s["interval_ns"] * 1e3 for s in snaps if not s["first"] and s["interval_ns"] > 0.9e9
     for z in s["node"]["zones"] if z["name"] == "platform"]
w = w[5:]  # from the second reading on (the first joins nothing)
worst = max(abs(x - 250) / 250 for x in w) if w else 1
print(f"{len(w)} intervals of 1 s after the second reading: median {statistics.median(w) if w else 0:.1f} W, "
      f"{min(w) if w else 0:.1f} to {max(w) if w else 0:.1f} W; worst {100 * worst:.2f} % from 250 W")
sys.exit(0 if len(w) >= 5 and worst <= 0.02 else 1)
PY
[ $? = 0 ] && ok "a 250 W BMC polled every 5 s, at 1 s intervals: $(cat "$tmp/steady.out")" ||
	fail "the 5 s BMC at 1 s intervals: $(cat "$tmp/steady.out")"
finish redfish
