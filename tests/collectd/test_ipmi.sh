#!/usr/bin/env bash
# The server's power from its BMC over IPMI: DCMI Get Power Reading through
# libfreeipmi, over RMCP+ to a real BMC simulator, OpenIPMI's ipmi_sim,
# with a module (tests/fakes/ipmi_dcmi_module.c) that answers the power reading
# ipmi_sim lacks from a known sequence of watts. The collector polls it
# every second on its own thread while it snapshots every 500 ms; then the
# BMC answers an error completion code, says its measurement is off,
# answers short, hangs past the timeout, goes away and comes back.
# Checked: the readings are the module's sequence; the platform energy in
# the store is the trapezoid of the readings the collector took, to the µJ
# (tests/fakes/polled_replay.py), the spans over three polls left out and said;
# each fault logged; the BMC read again once it is back; a steady 250 W BMC
# polled every 5 s gives 250 W in every 1 s interval; Kepler's
# kepler_platform_watts with source ipmi; a BMC file others may read, an
# unknown workaround and a bad endpoint refused; a privilege the BMC finds
# too low named.
# Usage: test_ipmi.sh BUILD_DIR
set -uo pipefail
build=$1
module=$build/tests/ipmi_dcmi_module.so
for tool in ipmi_sim python3 jq curl; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
[ -f "$module" ] || { echo "SKIP: $module not built (OpenIPMI's headers, libopenipmi-dev, were missing)"; exit 77; }
. "$(dirname "$0")/../lib.sh"
fakes=$(cd "$(dirname "$0")/../fakes" && pwd)
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
free_udp() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

port=$(free_udp)
dcmi=$tmp/dcmi
mkdir -p "$dcmi"
cat >"$tmp/lan.conf" <<EOF
name "kepler-test-bmc"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 $port
    priv_limit admin
    allowed_auths_callback none md2 md5 straight
    allowed_auths_user none md2 md5 straight
    allowed_auths_operator none md2 md5 straight
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  user 2 true "kepler" "s3cret!x" admin 10 none md2 md5 straight
loadlib "$module" "$dcmi"
EOF
printf 'mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02\nmc_enable 0x20\n' >"$tmp/sim.emu"
bmc=
start_bmc() {
	ipmi_sim -c "$tmp/lan.conf" -f "$tmp/sim.emu" -n -s "$tmp/state" >>"$tmp/sim.log" 2>&1 &
	bmc=$!
	pids+=($bmc)
	sleep 0.5
}
stop_bmc() {
	kill "$bmc" 2>/dev/null
	wait "$bmc" 2>/dev/null
}
# the BMC file: ipmi_sim wants admin for the DCMI group and the privilege asked in the Open Session Request
bmc_file() { # bmc_file FILE PRIVILEGE [WORKAROUNDS]
	cat >"$1" <<EOF
nodes:
  worker-1: bmc-1
bmcs:
  bmc-1:
    endpoint: lanplus://127.0.0.1:$port
    username: kepler
    password: 's3cret!x'
    privilege: $2
    workarounds: ${3:-opensesspriv}
EOF
	chmod 0600 "$1"
}
for w in $(seq 200 10 600); do echo "$w"; done >"$dcmi/watts"
echo ok >"$dcmi/mode"
start_bmc
bmc_file "$tmp/bmc.yaml" admin

# refused before anything starts
cp "$tmp/bmc.yaml" "$tmp/open.yaml"
chmod 0644 "$tmp/open.yaml"
common=(--store.group "" --meter.source fake --informer procfs --platform.ipmi.enabled --platform.ipmi.node-name worker-1)
"$collectd" --store.path "$tmp/s0" "${common[@]}" --platform.ipmi.config-file "$tmp/open.yaml" >"$tmp/open.log" 2>&1
[ $? = 1 ] && grep -q "the BMC file $tmp/open.yaml may be read by others (mode 0644)" "$tmp/open.log" &&
	ok "a BMC file others may read is refused (exit 1)" || fail "open file: $(head -3 "$tmp/open.log")"
bmc_file "$tmp/bad.yaml" admin "opensesspriv,fast"
"$collectd" --store.path "$tmp/s0" "${common[@]}" --platform.ipmi.config-file "$tmp/bad.yaml" >"$tmp/bad.log" 2>&1
[ $? = 1 ] && grep -q "IPMI workaround 'fast' is unknown" "$tmp/bad.log" && ok "an unknown workaround: exit 1, said" ||
	fail "unknown workaround: $(head -3 "$tmp/bad.log")"
sed 's|lanplus://|https://|' "$tmp/bmc.yaml" >"$tmp/url.yaml"
chmod 0600 "$tmp/url.yaml"
"$collectd" --store.path "$tmp/s0" "${common[@]}" --platform.ipmi.config-file "$tmp/url.yaml" >"$tmp/url.log" 2>&1
[ $? = 1 ] && grep -q "is not lanplus://HOST\[:PORT\]" "$tmp/url.log" && ok "an endpoint that is not lanplus://: exit 1, said" ||
	fail "bad endpoint: $(head -3 "$tmp/url.log")"
"$collectd" --store.path "$tmp/s0" "${common[@]}" --platform.ipmi.config-file "$tmp/bmc.yaml" \
	--platform.redfish.enabled >"$tmp/both.log" 2>&1
[ $? = 1 ] && grep -q "both enabled" "$tmp/both.log" && ok "Redfish and IPMI both enabled: exit 1, said" ||
	fail "both: $(head -3 "$tmp/both.log")"
# DCMI asks for privilege User; this BMC wants admin: the completion code is named
bmc_file "$tmp/user.yaml" user
own_until 'grep -q "completion code 0xd4" "$tmp/user.log"' "$collectd" --store.path "$tmp/s1" "${common[@]}" --platform.ipmi.config-file "$tmp/user.yaml" \
	--monitor.interval 500ms --platform.ipmi.poll-interval 1s >"$tmp/user.log" 2>&1
grep -q "energy read: ipmi bmc-1: DCMI power reading: completion code 0xd4, insufficient privilege" "$tmp/user.log" &&
	ok "a privilege the BMC finds too low: completion code 0xd4 named" ||
	fail "privilege user: $(grep -i ipmi "$tmp/user.log" | tail -2)"

# the run: poll every second, snapshot every 500 ms, through the BMC's faults
: >"$dcmi/served"
store=$tmp/store
# the collectors here see the test's own processes only (own_pids): another job's 10,000 would
# make each snapshot take seconds on a loaded machine, which never_waited below would take for a wait
own_pids "$collectd" --store.path "$store" "${common[@]}" --platform.ipmi.config-file "$tmp/bmc.yaml" --monitor.interval 500ms \
	--platform.ipmi.poll-interval 1s --platform.ipmi.timeout 2s --log.level debug >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
# each fault lasts until the collector has logged it (however late a loaded
# machine lets it poll), at least the seconds given
logged() { grep -c -- "energy read: ipmi bmc-1: .*$1" "$tmp/collectd.log"; }
logged_more() { [ "$(logged "$1")" -gt "$2" ]; }
phase() { # MODE SECONDS [WHAT IT LOGS]
	local n
	[ -n "${3:-}" ] && n=$(logged "$3")
	echo "$1" >"$dcmi/mode"
	sleep "$2"
	[ -z "${3:-}" ] || eventually 60 logged_more "$3" "$n" || echo "phase $1: the collector did not log '$3' in 60 s"
}
readings() { grep -c 'ipmi reading: [0-9]* mW' "$tmp/collectd.log"; }
more_readings() { [ "$(readings)" -ge "$1" ]; }
eventually 60 more_readings 3 || echo "no 3 readings in 60 s"
phase "cc c1" 2.5 "completion code 0xc1, invalid command"
phase inactive 2.5 "power measurement is not active"
phase short 2.5 "9 bytes, need 19"
phase "hang 3" 3.5
phase ok 3
n=$(logged "IPMI session to 127.0.0.1:$port")
stop_bmc # the BMC goes away
eventually 60 logged_more "IPMI session to 127.0.0.1:$port" "$n" || echo "the BMC's absence was not logged in 60 s"
sleep 1
start_bmc # and comes back
back=$(awk '{printf "%.0f\n", $1 * 1e9}' /proc/uptime)
n=$(readings)
sleep 6
eventually 60 more_readings $((n + 3)) || echo "no 3 readings in 60 s after the BMC came back"
# no reading after this: every reading the collector took is in the store once it stops
phase "cc ff" 4
stop_own "$cpid"
grep -qE "AddressSanitizer|invariant broken" "$tmp/collectd.log" && fail "collector: $(grep -E 'AddressSanitizer|invariant' "$tmp/collectd.log" | head -2)"
grep -q "and the platform ipmi: platform \[lanplus://127.0.0.1:$port\]" "$tmp/collectd.log" &&
	ok "the BMC over IPMI is the platform meter beside the CPU zones" || fail "start: $(grep 'energy source' "$tmp/collectd.log")"
grep -o 'ipmi reading: [0-9]* mW at [0-9]* ns' "$tmp/collectd.log" | awk '{print $3, $6}' >"$tmp/readings"
python3 - "$tmp/readings" "$dcmi/served" <<'PY' >"$tmp/seq.out" 2>&1
import sys
got = [int(l.split()[0]) for l in open(sys.argv[1])]
served = [int(l) * 1000 for l in open(sys.argv[2])]
it = iter(served)
ok = all(any(g == s for s in it) for g in got)
print(f"{len(got)} readings, {len(served)} answered by the module: {'a subsequence' if ok else 'NOT a subsequence'} of its sequence")
sys.exit(0 if ok and len(got) >= 8 else 1)
PY
[ $? = 0 ] && ok "$(cat "$tmp/seq.out")" || fail "$(cat "$tmp/seq.out")"
grep -o 'ipmi read at [0-9]* ns: [0-9]* uJ in all (the last reading [0-9]* mW at [0-9]* ns)' "$tmp/collectd.log" |
	awk '{print $4, $6, $13, $16}' >"$tmp/reads"
"$stdout" --store.path "$store" --format json --all >"$tmp/all.jsonl"
python3 "$fakes/polled_replay.py" "$tmp/readings" "$tmp/reads" "$tmp/all.jsonl" 3000000000 0 >"$tmp/energy.out" 2>&1
[ $? = 0 ] && ok "$(cat "$tmp/energy.out")" || fail "$(head -6 "$tmp/energy.out")"
for what in "completion code 0xc1, invalid command" "power measurement is not active" "9 bytes, need 19" \
	"IPMI session to 127.0.0.1:$port" "that span counts no energy"; do
	grep -q "energy read: ipmi bmc-1: .*$what" "$tmp/collectd.log" || fail "not logged: $what"
done
after=$(awk -v b="$back" '$2 > b - 2000000000' "$tmp/readings" | wc -l)
[ "$after" -ge 3 ] && ok "each fault logged (0xc1, measurement off, a short answer, a hang, the BMC gone); read again once back ($after readings)" ||
	fail "after the BMC came back: $after readings: $(grep 'energy read' "$tmp/collectd.log" | tail -2)"
# the loop never waited on the BMC: no snapshot took the BMC's 2 s timeout to build (its own
# timing; the intervals between snapshots are the scheduler's on a busy machine)
built=$(never_waited "$tmp/collectd.log" 2000) && ok "the loop never waited on the BMC: $built" ||
	fail "the loop waited on the BMC: $built"

# the exporter: Kepler's kepler_platform_watts, source ipmi
ep=$(free_port)
"$build/readers/exporter/kepler-exporter" --store.path "$store" --web.listen-address "127.0.0.1:$ep" >"$tmp/exporter.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
	curl -sf -o "$tmp/metrics" "http://127.0.0.1:$ep/metrics" && grep -q '^kepler_snapshot_seq{' "$tmp/metrics" && break
	sleep 0.1
done
grep -q "^kepler_platform_watts{.*source=\"ipmi\",source_id=\"lanplus://127.0.0.1:$port\",source_name=\"platform\",source_type=\"ipmi\"} " "$tmp/metrics" &&
	ok "kepler_platform_watts with source=ipmi" || fail "platform watts: $(grep platform_watts "$tmp/metrics")"

# a slow BMC spread over the intervals: steady at 250 W, polled every 5 s, snapshots every 1 s
echo ok >"$dcmi/mode"
echo 250 >"$dcmi/watts"
own_pids "$collectd" --store.path "$tmp/s3" "${common[@]}" --platform.ipmi.config-file "$tmp/bmc.yaml" \
	--monitor.interval 1s --platform.ipmi.poll-interval 5s >"$tmp/steady.log" 2>&1 &
spid=$!
pids+=($spid)
# 14 snapshots, however late a loaded machine takes them (not 14 s of wall time)
wait_seq "$tmp/s3" 14 || echo "the steady collector stored $(store_seq "$tmp/s3") snapshots in 120 s"
stop_own "$spid"
"$stdout" --store.path "$tmp/s3" --format json --all | python3 -c '
import json, sys
w = []
for l in sys.stdin:
    s = json.loads(l)
    z = [z for z in s["node"]["zones"] if z["name"] == "platform"][0]
    if s["interval_ns"] and z["energy_uj"] > z["delta_uj"]:  # after the first reading
        w.append(z["delta_uj"] * 1e3 / s["interval_ns"])
w = w[:-1]  # the last interval may end as the collector stops
off = [x for x in w if abs(x - 250) > 5]
print(f"{len(w)} intervals of 1 s, BMC polled every 5 s: platform {min(w):.2f} to {max(w):.2f} W against a steady 250 W")
sys.exit(1 if off or len(w) < 8 else 0)' >"$tmp/steady.out" 2>&1
[ $? = 0 ] && ok "$(cat "$tmp/steady.out")" || fail "steady: $(cat "$tmp/steady.out")"
finish ipmi
