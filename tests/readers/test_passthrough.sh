#!/usr/bin/env bash
# VM passthrough end to end, on one machine. Two real qemu-system-x86_64
# processes (TCG; -name guest=busy spins its CPU, -name guest=idle halts:
# each boots a 64 KiB firmware of two instructions, no kernel needed) run
# beside a host collector on a fake RAPL tree (package and dram, advanced
# by this script at fixed watts). kepler-passthrough keeps a powercap tree
# per VM; a second collector in the guest's role (its own store) reads
# busy's tree with --meter.source passthrough.
#
# At checkpoints the host collector is paused (SIGSTOP) at some snapshot L,
# passthrough has published L, and the guest collector has read it: then,
# between any two checkpoints, the guest's node energy grew exactly as the
# VM's energy in the host's snapshots did, per zone, to the microjoule,
# over 20 host intervals and across a SIGKILL and restart of the host
# collector and of kepler-passthrough. The guest's counters never went back
# (its meter saw no reset), its zones say source=passthrough (in its
# snapshots and its exporter's kepler_node_zone_source_info), and
# prometheus-node-exporter's RAPL collector reads the same joules from the
# same tree.
# Usage: test_passthrough.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
passthrough=$build/readers/passthrough/kepler-passthrough
. "$(dirname "$0")/../lib.sh"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (package qemu-system-x86: tools/setup.sh)"
py=/usr/bin/python3
[ -x "$py" ] || skip "no $py"

# the two guests' firmware: the reset vector (last 16 bytes of a 64 KiB BIOS) holds
# `jmp $` (busy) or `hlt; jmp back` (idle)
"$py" -c '
import sys
for name, code in (("busy", b"\xeb\xfe"), ("idle", b"\xf4\xeb\xfd")):
    b = bytearray(65536); b[-16:-16 + len(code)] = code
    open(sys.argv[1] + "/" + name + ".bin", "wb").write(b)' "$tmp"
for vm in busy idle; do
	qemu-system-x86_64 -name guest=$vm -machine pc -bios "$tmp/$vm.bin" -m 16 -display none -nodefaults \
		-monitor none -serial none >"$tmp/qemu-$vm.log" 2>&1 &
	pids+=($!)
done

# the host's meter: package 20 W and dram 5 W, advanced every 0.1 s
"$(dirname "$0")/../../tools/fake-sysfs.sh" "$tmp/sys" --sockets 1 --dram >/dev/null
rapl=$tmp/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0
echo 1000000 >"$rapl/energy_uj"
echo 1000000 >"$rapl/intel-rapl:0:0/energy_uj"
(
	p=1000000 d=1000000
	while :; do
		p=$((p + 2000000)) d=$((d + 500000))
		# in place, no truncation, growing only: no reader sees an empty or torn file, as with sysfs
		echo $p 1<>"$rapl/energy_uj"
		echo $d 1<>"$rapl/intel-rapl:0:0/energy_uj"
		sleep 0.1
	done
) &
pids+=($!)
[ -f "$rapl/intel-rapl:0:0/energy_uj" ] || fail "setup: no dram zone in the fake tree"

start_host() {
	"$collectd" --host.sysfs "$tmp/sys" --informer procfs --store.path "$tmp/host" --store.group "" \
		--monitor.interval 500ms >>"$tmp/host.log" 2>&1 &
	host=$!
	pids+=($host)
}
start_passthrough() {
	"$passthrough" --store.path "$tmp/host" --passthrough.dir "$tmp/pt" >>"$tmp/pt.log" 2>&1 &
	pt=$!
	pids+=($pt)
}
json() { "$stdout" --format json "$@" 2>/dev/null; }
seq_of() { json --store.path "$1" | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p'; }
start_host
start_passthrough
# the host's first snapshot, then passthrough's trees (a loaded machine runs both slowly)
wait_seq "$tmp/host" 1 || fail "the host collector stored nothing: $(tail -5 "$tmp/host.log")"
eventually 60 test -f "$tmp/pt/busy/class/powercap/intel-rapl:0/energy_uj" ||
	fail "no tree for VM busy: $(tail -3 "$tmp/pt.log"); the host collector: $(tail -3 "$tmp/host.log")"
grep -qx idle <<<"$(ls "$tmp/pt")" && ok "kepler-passthrough keeps a tree per VM: $(ls "$tmp/pt" | paste -sd' ')" ||
	fail "no tree for VM idle: $(ls "$tmp/pt")"

"$collectd" --meter.source passthrough --passthrough.path "$tmp/pt/busy" --informer procfs \
	--store.path "$tmp/guest" --store.group "" --monitor.interval 250ms >"$tmp/guest.log" 2>&1 &
guest=$!
pids+=($guest)

# pause the host at its newest snapshot, wait until the guest has read what
# passthrough published for it; print "L guest_package guest_dram vm_package vm_dram"
checkpoint() {
	local L g s
	kill -STOP "$host"
	L=$(seq_of "$tmp/host")
	# however late a loaded machine runs kepler-passthrough (it writes the tree, then passthrough.txt)
for _ in $(seq 3000); do grep -qx "host_seq $L" "$tmp/pt/busy/passthrough.txt" 2>/dev/null && break; sleep 0.1; done
	grep -qx "host_seq $L" "$tmp/pt/busy/passthrough.txt" || { echo "passthrough never published $L" >&2; return 1; }
	g=$(seq_of "$tmp/guest")
	for _ in $(seq 100); do s=$(seq_of "$tmp/guest"); [ "${s:-0}" -gt $((g + 2)) ] && break; sleep 0.1; done
	json --store.path "$tmp/guest" >"$tmp/g.json"
	json --store.path "$tmp/host" --seq "$L" >"$tmp/h.json"
	kill -CONT "$host"
	"$py" - "$tmp/g.json" "$tmp/h.json" "$L" <<'EOF'
import json, sys
g, h, L = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
gz = {z["name"]: z for z in g["node"]["zones"]}
vm = [v for v in h.get("vms", []) if v["vm_name"] == "busy"][0]
hz = [z["name"] for z in h["node"]["zones"]]
vz = {hz[i]: z["energy_uj"] for i, z in enumerate(vm["zones"])}
assert all(z["source"] == "passthrough" for z in gz.values()), gz
assert all(z["meter_resets"] == 0 for z in gz.values()), "the guest's meter saw a counter go back"
print(L, gz["package"]["energy_uj"], gz["dram"]["energy_uj"], vz["package"], vz["dram"])
EOF
}

points=()
for round in 1 2 3 4 5; do
	[ "$round" -gt 1 ] && {
		h0=$(seq_of "$tmp/host")
		case $round in
		3) kill -KILL "$host"; wait "$host" 2>/dev/null; start_host; echo "host collector SIGKILLed and restarted" ;;
		4) kill -KILL "$pt"; wait "$pt" 2>/dev/null; start_passthrough; echo "kepler-passthrough SIGKILLed and restarted" ;;
		esac
		# at least 5 host intervals between checkpoints
		for _ in $(seq 300); do [ "$(seq_of "$tmp/host")" -ge $((h0 + 5)) ] 2>/dev/null && break; sleep 0.1; done
	}
	p=$(checkpoint) || { fail "checkpoint $round: $p"; break; }
	echo "checkpoint $round: host seq, guest package/dram, VM package/dram: $p"
	points+=("$p")
done
"$py" - "${points[@]}" <<'EOF' || fail "the guest's energy does not follow the VM's"
import sys
pts = [list(map(int, p.split())) for p in sys.argv[1:]]
assert len(pts) == 5, pts
span = pts[-1][0] - pts[0][0]
for a, b in zip(pts, pts[1:]):
    for i, zone in ((1, "package"), (2, "dram")):
        dg, dv = b[i] - a[i], b[i + 2] - a[i + 2]
        assert dg >= 0 and dg == dv, f"host {a[0]} -> {b[0]} {zone}: guest +{dg} uJ, VM +{dv} uJ"
assert pts[-1][3] > pts[0][3], "the busy VM used no energy"
print(f"ok: over {span} host intervals (host seq {pts[0][0]} -> {pts[-1][0]}, across both restarts) the guest's "
      f"node energy grew exactly as the VM's: package +{pts[-1][1] - pts[0][1]} uJ, dram +{pts[-1][2] - pts[0][2]} uJ")
assert span >= 20, f"only {span} host intervals"
EOF

# another RAPL reader of the same tree
if command -v prometheus-node-exporter >/dev/null; then
	port=$((20000 + RANDOM % 20000))
	prometheus-node-exporter --collector.disable-defaults --collector.rapl --path.sysfs "$tmp/pt/busy" \
		--web.listen-address "127.0.0.1:$port" >"$tmp/ne.log" 2>&1 &
	ne=$!
	pids+=($ne)
	kill -STOP "$host"
	sleep 0.3 # passthrough's write of the last snapshot lands
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/ne.txt" && break; sleep 0.1; done
	want=$(cat "$tmp/pt/busy/class/powercap/intel-rapl:0/energy_uj")
	kill -CONT "$host"
	got=$(sed -n 's/^node_rapl_package_joules_total{[^}]*} \(.*\)$/\1/p' "$tmp/ne.txt")
	if [ -n "$got" ] && "$py" -c "import sys; g, w = float(sys.argv[1]), int(sys.argv[2]) / 1e6; sys.exit(abs(g - w) > 1e-6 * max(w, 1))" "$got" "$want"; then
		ok "prometheus-node-exporter --collector.rapl reads the same tree: node_rapl_package_joules_total $got (energy_uj $want)"
	else
		fail "node_exporter read '$got', the tree holds $want uJ: $(grep rapl "$tmp/ne.txt" | head -3) $(tail -2 "$tmp/ne.log")"
	fi
else
	echo "SKIP part: prometheus-node-exporter missing (tools/setup.sh installs it)"
fi
# the guest's exporter names the source
port=$((20000 + RANDOM % 20000))
"$build/readers/exporter/kepler-exporter" --store.path "$tmp/guest" --web.listen-address "127.0.0.1:$port" \
	>"$tmp/ge.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/ge.txt" && grep -q zone_source_info "$tmp/ge.txt" && break; sleep 0.1; done
n=$(grep -c '^kepler_node_zone_source_info{.*source="passthrough"' "$tmp/ge.txt")
[ "$n" -eq 2 ] && ok "the guest's exporter: kepler_node_zone_source_info source=\"passthrough\" for both zones" ||
	fail "the guest's exporter: $(grep zone_source_info "$tmp/ge.txt")"
kill -0 "$guest" 2>/dev/null || fail "the guest collector died: $(tail -3 "$tmp/guest.log")"

# under attribution.idle cpu the tree carries the VM's active share and the idle energy given to it
# (the baseline split with a set idle power: idle energy whatever the machine's load; with the
# usage-ratio split a saturated machine has next to none)
kill "$host"
wait "$host" 2>/dev/null
"$collectd" --host.sysfs "$tmp/sys" --informer procfs --store.path "$tmp/host" --store.group "" \
	--monitor.interval 500ms --attribution.idle cpu --attribution.active-split baseline \
	--attribution.idle-watts package=5,dram=1 >>"$tmp/host.log" 2>&1 &
host=$!
pids+=($host)
h0=$(seq_of "$tmp/host")
wait_seq "$tmp/host" $((h0 + 4)) || fail "the host collector under attribution.idle cpu stored nothing"
kill -STOP "$host"
L=$(seq_of "$tmp/host")
# however late a loaded machine runs kepler-passthrough (it writes the tree, then passthrough.txt)
for _ in $(seq 3000); do grep -qx "host_seq $L" "$tmp/pt/busy/passthrough.txt" 2>/dev/null && break; sleep 0.1; done
tree=$(cat "$tmp/pt/busy/class/powercap/intel-rapl:0/energy_uj")
seen=$(grep -x "host_seq $L" "$tmp/pt/busy/passthrough.txt") # before the host goes on to L + 1
json --store.path "$tmp/host" --seq "$L" >"$tmp/h.json"
kill -CONT "$host"
read -r active idle < <("$py" -c '
import json, sys
h = json.load(open(sys.argv[1]))
vm = [v for v in h["vms"] if v["vm_name"] == "busy"][0]
z = [i for i, z in enumerate(h["node"]["zones"]) if z["name"] == "package"][0]
print(vm["zones"][z]["energy_uj"], vm["zones"][z].get("idle_uj", 0))' "$tmp/h.json")
[ -n "$seen" ] && [ "${idle:-0}" -gt 0 ] && [ "$tree" = $((active + idle)) ] &&
	ok "attribution.idle cpu: the VM's package energy_uj $tree = its active $active + idle $idle uJ (snapshot $L)" ||
	fail "attribution.idle cpu: the tree holds $tree, the snapshot $L active $active + idle $idle; passthrough.txt then: '${seen:-not at host_seq $L}'"
finish passthrough
