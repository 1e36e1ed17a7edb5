#!/usr/bin/env bash
# A full disk does not stop the collector, and loses no energy. The store
# lives on a 2 MiB tmpfs; a fake RAPL counter (a powercap tree the test
# writes) stands still while snapshots are stored. The test fills the
# tmpfs: commits fail, the collector says so once and goes on measuring
# (LMDB reuses pages it freed, so a commit may still get through now and
# then). While the disk is full the counter moves by 7 J. Then the space
# comes back. The snapshots stored from the last one before the counter
# moved on follow one another (seq + 1 each), one at least says how many
# intervals it covers and for how long the store refused them, their
# package deltas sum to exactly the 7 J, as does the growth of the total,
# and each splits its active energy over the processes exactly; no counter
# of any snapshot ever went down.
# Needs root (mount); skips otherwise.
# Usage: test_store_full.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root to mount a small tmpfs"
py=/usr/bin/python3
[ -x "$py" ] || skip "no $py"
mkdir "$tmp/fs"
mount -t tmpfs -o size=2m tmpfs "$tmp/fs" || skip "cannot mount a tmpfs here"
at_exit+=("umount '$tmp/fs'")
"$(dirname "$0")/../../tools/fake-sysfs.sh" "$tmp/sys" --sockets 1 >/dev/null
counter=$tmp/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj
echo 1000000 >"$counter"
store=$tmp/fs/store

# in its own PID namespace: its snapshots hold the test's processes, not the host's (10,000 of
# another job's would not fit the 2 MiB disk)
own_pids "$collectd" --host.sysfs "$tmp/sys" --informer procfs --rapl.zones package --store.path "$store" \
	--store.group "" --monitor.interval 200ms >"$tmp/c.log" 2>&1 &
cpid=$!
pids+=($cpid)
json() { "$stdout" --store.path "$store" --format json "$@" 2>/dev/null; }
seq_of() { sed -n 's/^{"seq":\([0-9]*\),.*/\1/p'; }
for _ in $(seq 1200); do [ "$(json | seq_of)" -ge 3 ] 2>/dev/null && break; sleep 0.1; done
[ "$(json | seq_of)" -ge 3 ] 2>/dev/null || fail "no snapshot stored: $(tail -3 "$tmp/c.log")"

# fill the disk; wait until the collector says it cannot store
dd if=/dev/zero of="$tmp/fs/filler" bs=16k 2>/dev/null
for _ in $(seq 1200); do grep -q "cannot write the store" "$tmp/c.log" && break; sleep 0.1; done
grep -q "error: cannot write the store: .*\(No space left on device\|Input/output error\)" "$tmp/c.log" ||
	fail "no 'cannot write the store' in the log: $(tail -3 "$tmp/c.log")"
# (LMDB reuses the pages it freed, so a commit may still get through now and then)
last=$(json | seq_of)
before=$(json --seq "$last" | sed -n 's/.*"zones":\[{"name":"package",[^}]*"energy_uj":\([0-9]*\),.*/\1/p')
echo "newest stored when the meter moves: seq $last, package total $before uJ"

# energy while the disk is full: 7 J in two steps, over several intervals
sleep 0.5
echo 4000000 1<>"$counter" # in place: no torn read
sleep 0.5
echo 8000000 1<>"$counter"
sleep 0.5
kill -0 "$cpid" 2>/dev/null && ok "the collector runs on with the disk full" || fail "the collector died"
[ "$(grep -c "error: cannot write the store" "$tmp/c.log")" -eq 1 ] && ok "the failure logged once" ||
	fail "the failure logged $(grep -c "error: cannot write the store" "$tmp/c.log") times"

# room again: wait for two snapshots stored after it
rm -f "$tmp/fs/filler"
after=$(json | seq_of)
for _ in $(seq 1200); do [ "$(json | seq_of)" -gt $((after + 1)) ] && break; sleep 0.1; done
stop_own "$cpid"
grep -q "the store takes commits again after" "$tmp/c.log" && ok "the recovery logged" ||
	fail "no recovery in the log: $(tail -3 "$tmp/c.log")"
json --all >"$tmp/all.json"
"$py" - "$tmp/all.json" "$last" "$before" <<'EOF' || fail "the snapshots after the outage are wrong"
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
last, before = int(sys.argv[2]), int(sys.argv[3])
after = [s for s in snaps if s["seq"] > last]
seqs = [s["seq"] for s in after]
assert seqs == list(range(last + 1, last + 1 + len(seqs))), f"seqs not contiguous: {seqs}"
delta = sum(s["node"]["zones"][0]["delta_uj"] for s in after)
total = after[-1]["node"]["zones"][0]["energy_uj"] - before
gaps = [s for s in after if s["unstored_intervals"]]
for s in after:
    z = s["node"]["zones"][0]
    procs = sum(p["zones"][0]["delta_uj"] for p in s.get("processes", []))
    assert procs + z["unattributed_delta_uj"] == z["active_delta_uj"], f"seq {s['seq']}: processes {procs} + unattributed != active {z['active_delta_uj']}"
for s in gaps:
    print(f"ok: seq {s['seq']} covers {s['unstored_intervals']} refused interval(s) over "
          f"{s['unstored_ns'] / 1e9:.1f} s (interval {s['interval_ns'] / 1e9:.1f} s): package delta "
          f"{s['node']['zones'][0]['delta_uj']} uJ")
    assert s["unstored_ns"] > 0 and s["interval_ns"] > s["unstored_ns"], s
print(f"ok: after seq {last}: {len(after)} snapshots; their package deltas sum to {delta} uJ, "
      f"the total grew {total} uJ; the meter moved 7000000 uJ")
assert gaps, "no snapshot covers refused intervals"
assert delta == 7000000 and total == 7000000
EOF
# no counter went down across every retained snapshot (the node's and every process's)
"$py" - "$tmp/all.json" <<'EOF' || fail "a counter went down"
import json, sys
seen, n = {}, 0
for line in open(sys.argv[1]):
    s = json.loads(line)
    n += 1
    for z in s["node"]["zones"]:
        k = ("node", z["name"])
        assert z["energy_uj"] >= seen.get(k, 0), (s["seq"], k)
        seen[k] = z["energy_uj"]
    for p in s.get("processes", []):
        k = (p["pid"], p["start_time_ns"])
        assert p["zones"][0]["energy_uj"] >= seen.get(k, 0), (s["seq"], k)
        seen[k] = p["zones"][0]["energy_uj"]
print(f"ok: {n} snapshots, no counter went down")
EOF
finish store_full
