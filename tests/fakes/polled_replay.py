#!/usr/bin/env python3
# tests/fakes/polled_replay.py: the platform energy of a polled BMC meter
# (collectd/meters/polled.c), replayed from the collector's debug log and
# checked against the store, to the microjoule. Each read's cumulative
# energy is the trapezoid of the readings it had (spans over 3 polls left
# out), plus the last reading held since (up to 3 polls), never below the
# read before; the store's platform energy is the last read's, less the
# first read's (the first snapshot counts nothing). Also:
# platform-other by its rule, and no interval later than LATE_NS (0: not
# checked; the tests check the loop's own build times instead).
# Usage: polled_replay.py READINGS READS SNAPSHOTS.jsonl POLL3_NS LATE_NS
#   READINGS: "mW ns" a line (the "... reading: N mW at T ns" lines)
#   READS:    "t total mw last" a line (the "... read at" lines)
import json, sys
r = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
reads = [tuple(map(int, l.split())) for l in open(sys.argv[2])]
POLL3 = int(sys.argv[4])
LATE = int(sys.argv[5])
def integral2(upto):
    acc = 0
    for (p0, t0), (p1, t1) in zip(r, r[1:]):
        if t1 <= upto and t1 - t0 <= POLL3:
            acc += (p0 + p1) * (t1 - t0)
    return acc
gaps = sum(1 for (p0, t0), (p1, t1) in zip(r, r[1:]) if t1 - t0 > POLL3)
bad, reported, held_back = [], 0, 0
for t, total, mw, last in reads:
    e = integral2(last) if last else 0
    if last and 0 < t - last <= POLL3:
        e += 2 * mw * (t - last)
    want_total = max(reported, e // 2_000_000)
    held_back += e // 2_000_000 < reported
    if total != want_total:
        bad.append(f"read at {t}: {total} uJ in all, the readings say {want_total}")
    reported = want_total
snaps = [json.loads(l) for l in open(sys.argv[3])]
got = sum(z["delta_uj"] for s in snaps for z in s["node"]["zones"] if z["name"] == "platform")
last = [z for z in snaps[-1]["node"]["zones"] if z["name"] == "platform"][0]["energy_uj"]
# the first read is the first snapshot's, which counts no energy (a reading held before it is not stored)
base = reads[0][1] if reads else 0
want = reported - base
trapezoid = integral2(r[-1][1]) // 2_000_000
if got != want or last != want:
    bad.append(f"platform energy {got} uJ (cumulative {last}), the last read's less the first's is {want} uJ")
if gaps < 1:
    bad.append("the hang left no gap")
debt = 0
for s in snaps[1:]:
    z = {x["name"]: x for x in s["node"]["zones"]}
    parts = z["package"]["delta_uj"] + z["dram"]["delta_uj"] + debt
    want_rest = max(0, z["platform"]["delta_uj"] - parts)
    debt = max(0, parts - z["platform"]["delta_uj"])
    if z["platform-other"]["delta_uj"] != want_rest:
        bad.append(f"seq {s['seq']}: platform-other {z['platform-other']['delta_uj']}, the rule says {want_rest}")
late = [s["seq"] for s in snaps[1:] if LATE and s["interval_ns"] > LATE]
if late:
    bad.append(f"intervals late (over {LATE / 1e6:.0f} ms): {late[:5]}")
print("\n".join(bad[:6]) if bad else f"platform energy {got} uJ == the last of {len(reads)} reads, each the trapezoid of the {len(r)} readings so far plus the last held, to the uJ ({held_back} reads held back what was held too high; the trapezoid alone {trapezoid} uJ); {gaps} span(s) over 3 polls left out; platform-other by the rule" + (f"; no interval over {LATE / 1e6:.0f} ms" if LATE else ""))
sys.exit(1 if bad else 0)
