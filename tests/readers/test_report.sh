#!/usr/bin/env bash
# kepler-report and the store's history (docs/history.md), against the real
# collector: 2 s tiers, a carbon intensity file that changes in the middle
# of the window, a restart of the collector inside it. While the raw
# snapshots exist, a report over two tier boundaries equals, to the µJ, the
# sums of the snapshots' deltas (node zones and every process), and its CO2e
# equals Σ energy × the intensity then (integer mg); after the ring has
# pruned those snapshots, the same report reads the same figures from the
# tier records alone. Also: a window ending between boundaries refined by
# snapshots, CSV and table, bad arguments, a store without history, a
# damaged tier record (with and without raw snapshots over the window) and
# a damaged intensity record.
# Usage: test_report.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/../lib.sh"
collectd=$build/collectd/kepler-collectd
report=$build/readers/report/kepler-report
stdout=$build/readers/stdout/kepler-stdout
store=$tmp/store

# damage DIR KIND ...: with LMDB's own tools, over a copy of the store:
#   tier PERIOD_S BOUNDARY_S: 0xff over the flags of that tier record's header;
#   intensity SEQ: that snapshot's intensity record cut from 4 bytes to 2
damage() {
	mdb_dump -s history "$1" | grep -v '^db_pagesize=' >"$tmp/h.dump" && # (Debian 12's mdb_load knows no db_pagesize)
		python3 - "$tmp/h.dump" "${@:2}" <<'PY' && mdb_load -s history -f "$tmp/h.dump" "$1"
import sys
path, kind, args = sys.argv[1], sys.argv[2], sys.argv[3:]
if kind == "tier":
    want = "54" + "%08x" % int(args[0]) + "%016x" % (int(args[1]) * 10**9)
else:
    want = "49" + "%016x" % int(args[0])
lines = open(path).read().split("\n")
for i, l in enumerate(lines):
    if l.strip() == want:
        v = lines[i + 1].strip()
        if kind == "tier":
            v = v[:16] + "ffffffff" + v[24:]
        else:
            v = v[:4]
        lines[i + 1] = " " + v
        break
else:
    sys.exit("no key " + want)
open(path, "w").write("\n".join(lines))
PY
}

# has_tier PERIOD_S BOUNDARY_S: the store holds that tier record (a boundary a snapshot came
# more than a period late for has none: only the newest boundary it passed is recorded)
has_tier() { mdb_dump -s history "$store" 2>/dev/null | grep -qx " $(printf '54%08x%016x' "$1" $(($2 * 1000000000)))"; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
newest_s() { "$stdout" --store.path "$store" --format json 2>/dev/null | jq '.wall_ns / 1000000000 | floor'; }
# the intensity: 300 g/kWh, then 650.5 from a time inside the window (written once the window is known)
carbon() { printf '# g CO2e per kWh from each time on\n%s,300\n%s\n' "$(iso $(($(date +%s) - 3600)))" "$1" >"$tmp/carbon.new" &&
	mv "$tmp/carbon.new" "$tmp/carbon.csv"; }
carbon ""
start_collector() { # start_collector RETENTION
	"$collectd" --store.path "$store" --meter.source fake --informer procfs --monitor.interval 500ms \
		--store.group "" --store.tiers 2s:1h,10s:2h --store.retention.snapshots "$1" \
		--carbon.intensity-file "$tmp/carbon.csv" --log.level info >>"$tmp/c.log" 2>&1 &
	cpid=$!
	pids+=($cpid)
}
restart() { kill "$cpid"; wait "$cpid"; start_collector "$1"; }
after() { [ "$(newest_s)" -gt "$1" ] 2>/dev/null; }
start_collector 1000
wait_seq "$store" 2 || fail "no snapshots: $(tail -3 "$tmp/c.log")"
# the window: two 2 s boundaries 10 s apart, from the store's own clock; the intensity changes 5 s in
for try in 1 2 3 4 5 6; do
	b1=$((($(newest_s) + 3) / 2 * 2)) b2=$((b1 + 10))
	carbon "$(iso $((b1 + 5))),650.5"
	eventually 120 after $((b1 + 2)) || fail "the store's clock did not pass $((b1 + 2))"
	has_tier 2 $b1 && break
	echo "note: no 2s record at $(iso $b1) (the snapshot after it came more than 2 s late): another window"
done
has_tier 2 $b1 || fail "no 2s tier record at the window's start in 6 tries"
# a restart inside the window: the ledger comes back from the newest record and the snapshots after it
restart 1000
eventually 60 grep -q "history: 2 tier(s), the ledger at snapshot [1-9]" "$tmp/c.log" &&
	ok "restarted: $(grep -o 'history: .*' "$tmp/c.log" | tail -1)" ||
	fail "the restarted collector did not restore its ledger: $(grep history "$tmp/c.log")"
grep -q "carbon.intensity-file $tmp/carbon.csv: [0-9]* intensities read; in force now: 300.000 g CO2e/kWh" "$tmp/c.log" &&
	ok "the collector says the intensity in force: $(grep -o 'in force now: [^ ]* g CO2e/kWh' "$tmp/c.log" | head -1)" ||
	fail "the collector does not say the intensity: $(grep -i carbon "$tmp/c.log" | head -2)"
# b2 after the restarted collector's first snapshot: a boundary passed while it was down (a loaded
# machine restarts it slowly) would be recorded from the first snapshot after it, marked missed, and
# differ from the raw snapshots by design
wait_seq "$store" $(($(store_seq "$store") + 1)) || fail "the restarted collector stores nothing"
up=$((($(newest_s) + 3) / 2 * 2))
[ "$up" -gt "$b2" ] && b2=$up
for try in 1 2 3 4 5 6; do
	eventually 120 after $((b2 + 1)) || fail "the store's clock did not pass $((b2 + 1))"
	has_tier 2 $b2 && break
	echo "note: no 2s record at $(iso $b2) (the snapshot after it came more than 2 s late): the next boundary"
	b2=$((b2 + 2))
done
has_tier 2 $b2 || fail "no 2s tier record at the window's end in 6 tries"
"$stdout" --store.path "$store" --format json --all --level node,process >"$tmp/all.jsonl" 2>/dev/null
for by in node process namespace; do
	"$report" --store.path "$store" --since "$(iso $b1)" --until "$(iso $b2)" --by $by --format json >"$tmp/before-$by.json" 2>"$tmp/r.err" ||
		fail "report --by $by: $(cat "$tmp/r.err")"
done

# the snapshots' own sums over (b1, b2], and CO2e at the intensity in force at each
python3 - "$tmp/all.jsonl" "$tmp/before-node.json" "$tmp/before-process.json" "$tmp/carbon.csv" $b1 $b2 <<'PY' || fail "the report does not equal the snapshots' sums"
import json, sys, datetime
snaps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
node, proc = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
b1, b2 = int(sys.argv[5]) * 10**9, int(sys.argv[6]) * 10**9
pts = []
for l in open(sys.argv[4]):
    if l.strip() and not l.startswith('#'):
        t, v = l.strip().split(',')
        pts.append((int(datetime.datetime.strptime(t, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc).timestamp()) * 10**9, round(float(v) * 1000)))
def mg_kwh(wall):
    return max([v for t, v in pts if t <= wall] or [0])
win = [s for s in snaps if b1 < s['wall_ns'] <= b2]
assert snaps[0]['wall_ns'] <= b1, 'the ring no longer reaches back to the window'
want_uj, want_x, want_proc, want_proc_x = {}, {}, {}, {}
for s in win:
    for z in s['node']['zones']:
        want_uj[z['name']] = want_uj.get(z['name'], 0) + z['delta_uj']
        want_x[z['name']] = want_x.get(z['name'], 0) + z['delta_uj'] * mg_kwh(s['wall_ns'])
    for p in s['processes']:
        for z in p['zones']:
            want_proc[z['name']] = want_proc.get(z['name'], 0) + z['delta_uj']
            want_proc_x[z['name']] = want_proc_x.get(z['name'], 0) + z['delta_uj'] * mg_kwh(s['wall_ns'])
got = {z['name']: z for z in node['rows'][0]['zones']}
got_proc, got_proc_mg = {}, {}
for r in proc['rows']:
    for z in r['zones']:
        got_proc[z['name']] = got_proc.get(z['name'], 0) + z['energy_uj']
        got_proc_mg[z['name']] = got_proc_mg.get(z['name'], 0) + z.get('co2e_mg', 0)
ok = True
for name, uj in want_uj.items():
    co2 = want_x[name] // 3600000000000
    pmg = want_proc_x.get(name, 0) // 3600000000000
    print(f"{name}: report {got[name]['energy_uj']} uJ, {got[name]['co2e_mg']} mg; snapshots {uj} uJ, {co2} mg; processes {got_proc.get(name)} vs {want_proc.get(name)} uJ, their rows' CO2e {got_proc_mg.get(name)} mg vs their exact sum's {pmg} mg")
    ok &= got[name]['energy_uj'] == uj and got[name]['co2e_mg'] == co2 and got_proc.get(name) == want_proc.get(name)
    ok &= got_proc_mg.get(name) == pmg  # the rows add up: largest remainder
changes = sorted({mg_kwh(s['wall_ns']) for s in win})
print(f"{len(win)} snapshots in the window, intensities {changes} mg/kWh, resolution {node['resolution']}")
ok &= len(changes) == 2 and node['resolution'] == '2s'
sys.exit(0 if ok else 1)
PY
[ $fails -eq 0 ] && ok "a report over two 2 s boundaries equals the snapshots' sums to the µJ (node zones, all processes), CO2e = Σ energy × intensity then, across an intensity change and a restart"

# a window ending between boundaries: refined by the snapshots after the newest record
# (the last snapshot's own timestamp text: jq reads wall_ns as a double)
last=$(tail -1 "$tmp/all.jsonl")
r=$("$report" --store.path "$store" --since "$(iso $b1)" --until "$(jq -r .timestamp <<<"$last")" --by node --format json)
read -r got want < <(python3 -c '
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = json.loads(sys.argv[3])
b1 = int(sys.argv[2]) * 10**9
want = sum(z["delta_uj"] for s in snaps if s["wall_ns"] > b1 for z in s["node"]["zones"] if z["name"] == "package")
got = next(z["energy_uj"] for z in r["rows"][0]["zones"] if z["name"] == "package")
print(got, want)' "$tmp/all.jsonl" $b1 "$r")
[ "$got" = "$want" ] && [ "$(jq -r .until_resolution <<<"$r")" = snapshot ] &&
	ok "a window ending at a snapshot between boundaries: refined by the snapshots after the record ($got µJ, until_resolution snapshot)" ||
	fail "refined window: $got vs $want µJ: $(head -c 300 <<<"$r")"

# the exporter's CO2e families are the same ledger: its counters equal a report from the store's beginning
port=$(free_port)
start_exporter_for "$store" $port
if wait_metrics $port "$tmp/m.txt"; then
	seq=$(sed -n 's/^kepler_snapshot_seq{[^}]*} //p' "$tmp/m.txt")
	ts=$("$stdout" --store.path "$store" --seq "$seq" --format json | jq -r .timestamp)
	mg=$("$report" --store.path "$store" --since 2000-01-01T00:00:00Z --until "$ts" --by node --format json |
		jq '.rows[0].zones[] | select(.name == "package") | .co2e_mg')
	g=$(sed -n 's/^kepler_node_co2e_grams_total{node_name="[^"]*",zone="package"} //p' "$tmp/m.txt")
	cg=$(grep -c '^kepler_container_co2e_grams_total{' "$tmp/m.txt")
	# grams to the µg: its first three decimals are the report's whole mg (both round the exact sum down)
	[ -n "$mg" ] && [[ $g =~ ^[0-9]+\.[0-9]{6}$ ]] && [ "${g%???}" = "$(printf '%d.%03d' $((mg / 1000)) $((mg % 1000)))" ] &&
		grep -q '^kepler_carbon_intensity_grams_per_kwh{node_name="[^"]*"} 650.500$' "$tmp/m.txt" &&
		ok "exporter: kepler_node_co2e_grams_total{zone=package} $g g (to the µg) = kepler-report's $mg mg since the store began (snapshot $seq); intensity 650.5 g/kWh" ||
		fail "exporter CO2e: $g g vs report $mg mg at snapshot $seq: $(grep co2e "$tmp/m.txt" | head -3)"
	if command -v promtool >/dev/null; then
		promtool check metrics <"$tmp/m.txt" >"$tmp/promtool.txt" 2>&1
		! grep -q co2e "$tmp/promtool.txt" && ok "promtool check metrics: nothing to say of the CO2e families" ||
			fail "promtool: $(grep co2e "$tmp/promtool.txt" | head -3)"
	fi
else
	fail "the exporter served no snapshot: $(tail -3 "$tmp/exporter-$port.log")"
fi

# a damaged tier record (0xff over its flags; its checksum covers the header): named, and the report
# answers from the raw snapshots, which still cover the window, with the same rows; a snapshot's
# intensity record cut to 2 bytes is refused with the snapshot named, not read as another intensity
if command -v mdb_copy >/dev/null && command -v mdb_dump >/dev/null && command -v mdb_load >/dev/null; then
	mkdir -p "$tmp/dmg"
	mdb_copy "$store" "$tmp/dmg" && damage "$tmp/dmg" tier 2 $b1 || fail "damaging a copy of the store"
	"$report" --store.path "$tmp/dmg" --since "$(iso $b1)" --until "$(iso $b2)" --by process --format json >"$tmp/dmg.json" 2>"$tmp/e"
	rc=$?
	[ $rc -eq 0 ] && grep -q "the 2s tier record of $(iso $b1) is damaged (tier record: checksum mismatch): this report comes from the raw snapshots" "$tmp/e" &&
		cmp -s <(jq -S .rows "$tmp/before-process.json") <(jq -S .rows "$tmp/dmg.json") &&
		ok "a damaged tier record: named, and the report answers from the raw snapshots with the same rows: $(head -1 "$tmp/e")" ||
		fail "damaged tier record: rc $rc $(cat "$tmp/e") $(diff <(jq -S .rows "$tmp/before-process.json") <(jq -S .rows "$tmp/dmg.json") | head -4)"
	# the window's end after its last boundary: its snapshots (and their intensities) are replayed
	seq=$(tail -1 "$tmp/all.jsonl" | jq -r .seq) end=$(tail -1 "$tmp/all.jsonl" | jq -r .timestamp)
	rm -rf "$tmp/dmg2" && mkdir -p "$tmp/dmg2"
	mdb_copy "$store" "$tmp/dmg2" && damage "$tmp/dmg2" intensity "$seq" || fail "damaging an intensity record"
	"$report" --store.path "$tmp/dmg2" --since "$(iso $b1)" --until "$end" --by node --format json >/dev/null 2>"$tmp/e"
	rc=$?
	[ $rc -eq 1 ] && grep -q "snapshot $seq's carbon intensity record is 2 bytes, not 4" "$tmp/e" &&
		ok "an intensity record cut to 2 bytes: refused, exit 1: $(head -1 "$tmp/e")" ||
		fail "cut intensity record: rc $rc $(cat "$tmp/e")"
fi

# the ring prunes the window's snapshots (the collector restarted to keep 4); the tiers still answer, identically
restart 4
gone() { [ "$("$stdout" --store.path "$store" --format json --all 2>/dev/null | head -1 | jq .wall_ns)" -gt $(((b2 + 2) * 1000000000)) ]; }
eventually 120 gone || fail "the window's snapshots were not pruned"
for by in node process namespace; do
	"$report" --store.path "$store" --since "$(iso $b1)" --until "$(iso $b2)" --by $by --format json >"$tmp/after-$by.json" 2>"$tmp/r.err"
	if cmp -s <(jq -S .rows "$tmp/before-$by.json") <(jq -S .rows "$tmp/after-$by.json"); then
		echo "--by $by: $(jq '.rows | length' "$tmp/after-$by.json") rows, the same before and after pruning"
	else
		fail "--by $by after pruning differs: $(diff <(jq -S .rows "$tmp/before-$by.json") <(jq -S .rows "$tmp/after-$by.json") | head -5)"
	fi
done
[ $fails -eq 0 ] && ok "after the ring pruned the window's snapshots the tier records give the same rows, to the µJ and the mg"
# the same damage once the ring no longer covers the window: exit 1, the record named
if command -v mdb_copy >/dev/null && command -v mdb_dump >/dev/null && command -v mdb_load >/dev/null; then
	rm -rf "$tmp/dmg" && mkdir -p "$tmp/dmg"
	mdb_copy "$store" "$tmp/dmg" && damage "$tmp/dmg" tier 2 $b1 || fail "damaging a copy of the pruned store"
	"$report" --store.path "$tmp/dmg" --since "$(iso $b1)" --until "$(iso $b2)" --by node --format json >"$tmp/o" 2>"$tmp/e"
	rc=$?
	[ $rc -eq 1 ] && [ ! -s "$tmp/o" ] &&
		grep -q "the 2s tier record of $(iso $b1) is damaged (tier record: checksum mismatch), and the raw snapshots do not reach" "$tmp/e" &&
		ok "a damaged tier record the ring no longer covers: exit 1, nothing printed, the record named: $(grep -o 'error: .*' "$tmp/e")" ||
		fail "damaged record after pruning: rc $rc $(cat "$tmp/e")"
fi

# the other formats, and the people's table
c=$("$report" --store.path "$store" --since "$(iso $b1)" --until "$(iso $b2)" --by node --format csv)
head -1 <<<"$c" | grep -qx 'since,until,resolution,node_name,cpu_time_ns,zone,energy_uj,co2e_mg' && [ "$(wc -l <<<"$c")" -eq 4 ] &&
	ok "CSV: the JSON's fields, a line per zone" || fail "csv: $c"
t=$("$report" --store.path "$store" --since "$(iso $b1)" --until "$(iso $b2)" --by process --top 3)
grep -q 'resolution 2s; by process' <<<"$t" && grep -q 'kg CO2e' <<<"$t" && grep -q '^(.* more)' <<<"$t" &&
	ok "table: the window and resolution on top, kWh and kg CO2e, the top 3 and the rest" || fail "table: $t"

# a store written before kepler-c kept history (no history database: its other databases copied
# by LMDB's own tools) still opens: readers read it, the report answers from its snapshots, and a
# collector of this version adds the database and carries on
if command -v mdb_dump >/dev/null && command -v mdb_load >/dev/null; then
	old=$tmp/old
	mkdir -p "$old"
	for db in snapshots series meta; do
		mdb_dump -s $db "$store" >"$tmp/$db.dump" && mdb_load -s $db -f "$tmp/$db.dump" "$old" || fail "copying $db"
	done
	mdb_stat -s history "$old" >/dev/null 2>&1 && fail "the copy has a history database"
	"$stdout" --store.path "$old" --format json >/dev/null 2>"$tmp/e" && ok "a store without history: kepler-stdout reads it" ||
		fail "old store, kepler-stdout: $(cat "$tmp/e")"
	"$report" --store.path "$old" --since -1h --by node --format json >"$tmp/old.json" 2>"$tmp/e"
	rc=$?
	# no record, its first snapshots pruned (the ring keeps 4): the ring's own sums, the window moved and said
	want=$(python3 -c '
import json, subprocess, sys
snaps = [json.loads(l) for l in subprocess.run([sys.argv[1], "--store.path", sys.argv[2], "--format", "json", "--all"], capture_output=True, text=True).stdout.splitlines()]
print(sum(z["delta_uj"] for s in snaps for z in s["node"]["zones"] if z["name"] == "package"))' "$stdout" "$old")
got=$(jq '.rows[0].zones[] | select(.name == "package") | .energy_uj' "$tmp/old.json" 2>/dev/null)
[ $rc -eq 0 ] && grep -q "begins after --since: the window starts at its oldest snapshot" "$tmp/e" && [ "$got" = "$want" ] &&
		ok "kepler-report on it: the ring's snapshots, the window moved to the oldest and said so ($got µJ)" ||
		fail "old store, report: rc $rc, $got vs $want µJ: $(cat "$tmp/e")"
	"$collectd" --store.path "$old" --meter.source fake --informer procfs --monitor.interval 200ms --store.group "" \
		--store.tiers 1s:1h --log.level info >"$tmp/old.log" 2>&1 &
	pids+=($!)
	wait_seq "$old" $(($(store_seq "$old") + 6)) || fail "the collector did not carry on the old store: $(tail -3 "$tmp/old.log")"
	"$report" --store.path "$old" --since -3s --by node --format json >"$tmp/old.json" 2>"$tmp/e" &&
		mdb_stat -s history "$old" >/dev/null 2>&1 &&
		ok "a collector of this version added the history database and began its ledger at the oldest snapshot ($(grep -o 'history: .*' "$tmp/old.log" | head -1)); kepler-report answers" ||
		fail "upgraded store: $(cat "$tmp/e") $(grep history "$tmp/old.log")"
	# down across a boundary: the first snapshot after records it, marked missed, and a report resting on it says so
	wait_seq "$old" $(($(store_seq "$old") + 12)) # records of 1 s boundaries before the stop, for --since
	kill "${pids[-1]}"
	wait "${pids[-1]}"
	down=$(date +%s)
	eventually 30 bash -c "[ \$(date +%s) -ge $((down + 3)) ]"
	"$collectd" --store.path "$old" --meter.source fake --informer procfs --monitor.interval 200ms --store.group "" \
		--store.tiers 1s:1h --log.level warn >>"$tmp/old.log" 2>&1 &
	pids+=($!)
	wait_seq "$old" $(($(store_seq "$old") + 3))
	first=$("$stdout" --store.path "$old" --format json --all | jq -r 'select(.first) | .wall_ns / 1000000000 | floor' | tail -1)
	"$report" --store.path "$old" --since "$(iso $((down - 1)))" --until "$(iso "$first")" --by node --format json >/dev/null 2>"$tmp/e"
	grep -q "written after the collector was down across its boundary" "$tmp/e" &&
		ok "a boundary passed while the collector was down: recorded from the first snapshot after, marked missed, and said by the report" ||
		fail "missed boundary: $(cat "$tmp/e")"
fi

# usage errors and a store without history
"$report" --store.path "$store" --since now --until -1h >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "is not before" "$tmp/e" && ok "--since after --until: exit 2" || fail "since>until: $(cat "$tmp/e")"
"$report" --store.path "$store" --by cluster >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && ok "--by cluster refused: $(head -1 "$tmp/e")" || fail "--by cluster"
"$collectd" --store.path "$tmp/x" --store.tiers 0s:1h --meter.source fake >/dev/null 2>"$tmp/e"
[ $? -ne 0 ] && grep -q "store.tiers: '0s:1h' is not PERIOD:KEEP" "$tmp/e" && ok "store.tiers 0s:1h refused: $(grep -o 'store.tiers.*' "$tmp/e" | head -1)" ||
	fail "bad tier: $(cat "$tmp/e")"
"$collectd" --store.path "$tmp/y" --meter.source fake --informer procfs --monitor.interval 200ms --store.group "" \
	--store.tiers "" --log.level warn >"$tmp/y.log" 2>&1 &
pids+=($!)
wait_seq "$tmp/y" 3
"$report" --store.path "$tmp/y" --since -1h --by node >/dev/null 2>"$tmp/e"
rc=$?
[ $rc -eq 0 ] && ok "no tiers: the raw snapshots from the store's first still answer" || fail "no tiers: rc $rc $(cat "$tmp/e")"
# no --by on a host without pods: one row per process group, said (before: per namespace, 0 rows)
by=$("$report" --store.path "$tmp/y" --since -1h --format json 2>"$tmp/e" | jq -r '"\(.by) \(.rows | length)"')
[ "${by%% *}" = process ] && [ "${by##* }" -gt 0 ] && grep -q "no namespace in the window (no pods): one row per process group" "$tmp/e" &&
	ok "the default --by auto on a host without pods: $by rows, said" || fail "default --by without pods: '$by' $(cat "$tmp/e")"
# a window the store never saw: exit 1 (a billing job tells "no data" from "no usage"), as
# --help, the man page and docs/history.md say
"$report" --store.path "$tmp/y" --since -30d --until -29d --by node >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] && grep -q "the store holds nothing for the window" "$tmp/e" && [ ! -s "$tmp/o" ] &&
	ok "a window before the store began: exit 1, nothing printed: $(grep -o 'error: .*' "$tmp/e")" ||
	fail "a window the store never saw: rc $rc, $(cat "$tmp/e" "$tmp/o" | head -3)"
finish report
