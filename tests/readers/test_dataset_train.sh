#!/usr/bin/env bash
# kepler-dataset and kepler-train: a synthetic dataset with known
# coefficients and noise is recovered within 2 % with the right error
# figures; the round trip store (fake meter) -> dataset -> model ->
# collector with that model estimates the fake meter's watts within 5 %;
# estimates are left out by default; empty stores, bad ranges and
# unreadable stores.
# Usage: test_dataset_train.sh BUILD_DIR
set -uo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
dataset=$build/readers/dataset/kepler-dataset
train=$build/readers/train/kepler-train
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
py=/usr/bin/python3
[ -x $py ] || { echo "SKIP: /usr/bin/python3 missing"; exit 77; }
. "$(dirname "$0")/../lib.sh"

# --- synthetic: watts = 5 + 20 x cpu_usage_ratio + 3 x cpu_count + N(0, 0.5)
$py - "$tmp/syn.csv" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    f.write("timestamp,wall_ns,seq,interval_ns,node,cpu_model,cpu_usage_ratio,cpu_count,cpu_busy,package_source,package_joules,package_watts\n")
    for i in range(3000):
        r = random.random(); c = random.choice([2, 4, 8, 16])
        y = 5 + 20 * r + 3 * c + random.gauss(0, 0.5)
        f.write(f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z,{i},{i + 1},5000000000,\"node \"\"a\"\"\",\"cpu, x\",{r},{c},{r * c},rapl,{y * 5},{y}\n")
PY
"$train" "$tmp/syn.csv" --features cpu_usage_ratio,cpu_count --output "$tmp/syn.yaml" >"$tmp/train.out" 2>&1 ||
	fail "kepler-train: $(cat "$tmp/train.out")"
$py - "$tmp/syn.csv" "$tmp/syn.yaml" "$tmp/train.out" <<'PY' && ok "synthetic: $(grep 'watts =' "$tmp/train.out")" || fail "synthetic recovery"
import csv, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
model = open(sys.argv[2]).read()
coef = lambda name: float(re.search(name + r": ([-0-9.e+]+)", model).group(1))
b0, b1, b2 = coef("intercept"), coef("cpu_usage_ratio"), coef("cpu_count")
for got, want in ((b0, 5), (b1, 20), (b2, 3)):
    assert abs(got - want) <= 0.02 * abs(want), (got, want)
test = rows[int(len(rows) * 0.8):]
errs = [float(r["package_watts"]) - (b0 + b1 * float(r["cpu_usage_ratio"]) + b2 * float(r["cpu_count"])) for r in test]
ys = [float(r["package_watts"]) for r in test]
mae = sum(abs(e) for e in errs) / len(errs)
mape = 100 * sum(abs(e / y) for e, y in zip(errs, ys)) / len(ys)
mean = sum(ys) / len(ys)
r2 = 1 - sum(e * e for e in errs) / sum((y - mean) ** 2 for y in ys)
out = open(sys.argv[3]).read()
m = re.search(r"MAE ([0-9.e+-]+) W, MAPE ([0-9.e+-]+) %, R2 ([0-9.e+-]+)", out)
rep = [float(x) for x in m.groups()]
assert abs(rep[0] - mae) < 1e-3 * mae and abs(rep[1] - mape) < 1e-2 * mape and abs(rep[2] - r2) < 1e-4, (rep, mae, mape, r2)
print(f"  coefficients 5/20/3 -> {b0:.4f}/{b1:.4f}/{b2:.4f}; held-out MAE {mae:.4f} W, MAPE {mape:.3f} %, R2 {r2:.5f} as reported")
PY
grep -q 'node: "node \\"a\\""' "$tmp/syn.yaml" && grep -q 'error_package: "MAE' "$tmp/syn.yaml" && ok "provenance: node, range, method and errors in the model file" || fail "provenance"

# --- bad input to kepler-train
"$train" "$tmp/syn.csv" --features cycles --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -ne 0 ] && grep -q "feature 'cycles' cannot be evaluated by the model source" "$tmp/e" && ok "a feature the model source cannot use: refused" || fail "feature check: $(cat "$tmp/e")"
"$train" "$tmp/syn.csv" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "output FILE is required" "$tmp/e" && ok "no --output: exit 2" || fail "no --output: $(cat "$tmp/e")"
echo '{"seq":1}' >"$tmp/j.jsonl"
"$train" "$tmp/j.jsonl" --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -ne 0 ] && grep -q "reads CSV" "$tmp/e" && ok "JSON lines input: told to use CSV" || fail "jsonl: $(cat "$tmp/e")"

{ head -3 "$tmp/syn.csv"; echo; echo '2026-01-01T01:00:00Z,1,2'; } >"$tmp/short.csv"
"$train" "$tmp/short.csv" --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "short.csv: record 5 has 3 fields, the header 12" "$tmp/e" && ok "a short record: refused, with its number (blank lines skipped)" ||
	fail "short record: $(cat "$tmp/e")"

# --- the round trip, on the same workload: idle, one busy worker, two, idle.
# The meter is a fake RAPL tree (tools/fake-sysfs.sh) whose package counter
# a ticker advances every 20 ms by 12 W + 28 W x the CPU busy fraction it
# reads from /proc/stat itself: a meter outside the collector that follows
# the load, as a real package does. The ticker logs (wall ns, energy uJ) so
# that the model's estimates can be held against the meter over the same
# intervals.
# Where other jobs keep every CPU busy the node's use cannot follow the
# workload: the collector then reads a /proc/stat the test writes, whose
# use follows the same steps and whose own tick advances the meter, so the
# two stay in step however late a loaded machine runs it (lib.sh:
# fake_stat_start).
bash "$src/tools/fake-sysfs.sh" "$tmp/sysfs" >/dev/null
meter=$tmp/sysfs/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj
run=()
use() { :; }
if machine_saturated; then
	# the written /proc/stat's own tick advances the meter: the two move in step however late it runs
	fake_stat_start "$tmp/stat" "$meter" "$tmp/meter.log" 12 28 || fail "could not write a /proc/stat"
	run=(with_fake_stat "$tmp/stat")
	use() { echo "$1" >"$tmp/stat.use"; }
	echo "this machine is saturated: the node's CPU use comes from a /proc/stat the test writes (0.1, 0.5, 0.95, 0.1), which moves the meter"
else
$py - "$meter" "$tmp/meter.log" /proc/stat <<'PY' &
import os, sys, time
def busy():
    f = [int(x) for x in open(sys.argv[3]).readline().split()[1:]]
    return sum(f) - f[3] - f[4], sum(f)
fd = os.open(sys.argv[1], os.O_WRONLY)
log = open(sys.argv[2], "w", buffering=1)
energy = float(open(sys.argv[1]).read())
b0, t0 = busy()
m0 = time.monotonic()
frac = 0.0
while True:
    time.sleep(0.02)
    b1, t1 = busy()
    m1 = time.monotonic()
    if t1 > t0:  # no tick counted since (a file written every 0.1 s): the last fraction holds
        frac = (b1 - b0) / (t1 - t0)
    energy += (12 + 28 * min(frac, 1.0)) * (m1 - m0) * 1e6
    os.pwrite(fd, b"%d\n" % energy, 0)  # grows only: no stale tail
    log.write("%d %d\n" % (time.time_ns(), energy))
    if t1 > t0:
        b0, t0 = b1, t1
    m0 = m1
PY
pids+=($!)
fi
# phase STORE: 6 more snapshots (3 s at 500 ms), counted, not timed: a loaded machine takes longer
phase() {
	local s
	s=$(store_seq "$1")
	wait_seq "$1" $((${s:-0} + 6)) || fail "no 6 more snapshots in $1"
}
workload() { # STORE: idle, one busy worker, two, idle again (so that the held-out tail varies)
	use 0.1
	wait_seq "$1" 1 || fail "no first snapshot in $1"
	phase "$1"
	bash -c 'while :; do :; done' & local a=$!
	use 0.5
	phase "$1"
	bash -c 'while :; do :; done' & local b=$!
	use 0.95
	phase "$1"
	kill $a $b
	wait $a $b 2>/dev/null
	use 0.1
	phase "$1"
}
run_collector() { # STORE ARGS...
	local store=$1
	shift
	"${run[@]}" "$collectd" --store.path "$store" --monitor.interval 500ms --store.group "" --log.level warn \
		--host.sysfs "$tmp/sysfs" "$@" >>"$tmp/collectd.log" 2>&1 &
	local c=$!
	workload "$store"
	kill -TERM $c
	wait $c
}
run_collector "$tmp/rapl" --meter.source rapl
"$dataset" --store.path "$tmp/rapl" --output "$tmp/rapl.csv" 2>"$tmp/e" || fail "dataset: $(cat "$tmp/e")"
rows=$(($(wc -l <"$tmp/rapl.csv") - 1))
[ "$rows" -ge 18 ] && ok "dataset of the RAPL-tree store: $rows rows" || fail "only $rows rows"
# Should the node's CPU use still not follow the workload (every row the
# same cpu_usage_ratio), no model could be fitted: the round trip is then
# skipped, visibly (exit 77), and the rest runs on the built-in model.
spread=$($py -c 'import csv, sys
v = [float(r["cpu_usage_ratio"]) for r in csv.DictReader(open(sys.argv[1])) if r["cpu_usage_ratio"]]
print("%.3f %.3f %d" % (min(v), max(v), max(v) - min(v) < 0.15))' "$tmp/rapl.csv")
read -r use_lo use_hi saturated <<<"$spread"
model_file=$tmp/rapl.yaml
if [ "$saturated" = 1 ]; then
	echo "SKIP part: the node's CPU use stayed within $use_lo-$use_hi over the idle/busy workload (a saturated machine):" \
		"no model can be fitted; round trip and --per-cpu not checked, the built-in model used instead"
	skipped_parts=1
	model_file=$src/collectd/models/generic-vm.yaml
else
"$train" "$tmp/rapl.csv" --features cpu_usage_ratio --output "$tmp/rapl.yaml" >"$tmp/train2.out" 2>&1 &&
	ok "trained: $(grep 'package: watts' "$tmp/train2.out") ($(grep -o 'held out.*' "$tmp/train2.out" | head -1))" ||
	fail "train on the RAPL-tree store: $(cat "$tmp/train2.out")"
fi
run_collector "$tmp/model" --meter.source model --meter.model-file "$model_file"
if [ "$saturated" != 1 ]; then
"$stdout" --store.path "$tmp/model" --all --format json --level node 2>/dev/null | $py -c '
import bisect, json, sys
log = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.count(" ") == 1]
ts = [t for t, _ in log]
def meter_uj(t):  # the tree counter at wall time t, interpolated between ticks
    i = bisect.bisect_left(ts, t)
    (ta, ea), (tb, eb) = log[i - 1], log[i]
    return ea + (eb - ea) * (t - ta) / (tb - ta)
snaps = [json.loads(l) for l in sys.stdin]
pairs, est_uj, met_uj = [], 0, 0
for prev, s in zip(snaps, snaps[1:]):
    if s["first"] or not s["interval_ns"]:
        continue
    z = next(z for z in s["node"]["zones"] if z["name"] == "package")
    assert z["source"] == "model", z["source"]
    m = meter_uj(s["wall_ns"]) - meter_uj(prev["wall_ns"])
    pairs.append((z["delta_uj"], m))
    est_uj += z["delta_uj"]; met_uj += m
assert len(pairs) >= 18, len(pairs)
# per 2 s window (4 intervals): the collector reads /proc/stat some ms after
# its interval ends and the ticker every 20 ms, both as late as the scheduler
# lets them; over 0.5 s that skew alone is several %, over 2 s a quarter of it
errs = sorted(abs(sum(e for e, _ in w) - sum(m for _, m in w)) / sum(m for _, m in w)
              for w in (pairs[i:i + 4] for i in range(0, len(pairs) - 3, 4)))
total = abs(est_uj - met_uj) / met_uj
print(f"  {len(pairs)} intervals: run energy {est_uj / 1e6:.2f} J estimated vs {met_uj / 1e6:.2f} J metered ({100 * total:.2f} %), per 2 s window median {100 * errs[len(errs) // 2]:.2f} %, worst {100 * errs[-1]:.2f} %")
assert total < 0.05 and errs[len(errs) // 2] < 0.05
' "$tmp/meter.log" >"$tmp/rt.out" 2>&1 && ok "round trip: model estimates within 5 % of the RAPL tree$(cat "$tmp/rt.out" | tr '\n' ' ')" ||
	fail "round trip: $(cat "$tmp/rt.out")"

# --- --per-cpu: the same model on the training node, written to scale with vCPUs
"$train" "$tmp/rapl.csv" --features cpu_busy --per-cpu --output "$tmp/pc.yaml" >"$tmp/train3.out" 2>&1 &&
	$py - "$tmp/pc.yaml" "$tmp/train3.out" <<'PY' && ok "--per-cpu: $(grep 'per CPU' "$tmp/train3.out" | sed 's/^ *//')" || fail "--per-cpu: $(cat "$tmp/train3.out")"
import re, sys
model, out = open(sys.argv[1]).read(), open(sys.argv[2]).read()
b0 = float(re.search(r"watts = ([-0-9.e+]+)", out).group(1))
n = int(re.search(r"training node's (\d+) CPUs", model).group(1))
per = float(re.search(r"cpu_count: ([-0-9.e+]+)", model).group(1))
assert "features: [cpu_count, cpu_busy]" in model and "intercept: 0\n" in model
assert abs(per * n - b0) < 1e-4 * abs(b0), (per, n, b0)
PY
fi
"$train" "$tmp/syn.csv" --features cpu_busy --per-cpu --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "cpu_count changes within the dataset" "$tmp/e" && ok "--per-cpu on several nodes' rows: refused" || fail "per-cpu mixed: $(cat "$tmp/e")"
"$train" "$tmp/rapl.csv" --per-cpu --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "needs --features cpu_busy" "$tmp/e" && ok "--per-cpu without cpu_busy: refused" || fail "per-cpu features: $(cat "$tmp/e")"

# --- estimates are left out unless asked for
"$dataset" --store.path "$tmp/model" >"$tmp/est.csv" 2>"$tmp/e"
[ $? -eq 0 ] && [ "$(wc -l <"$tmp/est.csv")" = 1 ] && grep -q "left out .* model estimate" "$tmp/e" &&
	ok "a store of estimates gives a header only, and says why" || fail "estimates not left out: $(wc -l <"$tmp/est.csv") lines; $(cat "$tmp/e")"
[ "$("$dataset" --store.path "$tmp/model" --include-estimates 2>/dev/null | wc -l)" -gt 10 ] &&
	ok "--include-estimates keeps them" || fail "--include-estimates"
"$train" "$tmp/est.csv" --output "$tmp/x.yaml" >/dev/null 2>&1 && fail "trained on an empty dataset" || ok "kepler-train refuses a dataset without usable rows"
"$dataset" --store.path "$tmp/model" --include-estimates >"$tmp/allest.csv" 2>/dev/null
"$train" "$tmp/allest.csv" --output "$tmp/x.yaml" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "every row is an estimate" "$tmp/e" && ok "only estimates: kepler-train says why: $(grep -o 'usable rows.*' "$tmp/e" | head -1)" ||
	fail "only estimates: $(cat "$tmp/e")"
# cpu_count is the count the collector used (the CPUs in /proc/stat), in every row, however busy the machine
ncpu=$(grep -c '^cpu[0-9]' /proc/stat)
counts=$(python3 -c 'import csv,sys; print(" ".join(sorted({r["cpu_count"] for r in csv.DictReader(open(sys.argv[1]))})))' "$tmp/allest.csv")
[ "$counts" = "$ncpu" ] && ok "cpu_count is $ncpu in every row (the collector's count)" ||
	fail "cpu_count column: '$counts', /proc/stat has $ncpu CPUs"

# --- process and container levels, JSON lines
"$dataset" --store.path "$tmp/rapl" --level process --format jsonl 2>/dev/null >"$tmp/p.jsonl"
jq -e -s 'length > 0 and all(.[]; has("pid") and has("cpu_time_delta_ns") and has("package_watts"))' "$tmp/p.jsonl" >/dev/null &&
	ok "--level process --format jsonl" || fail "process jsonl"
"$dataset" --store.path "$tmp/rapl" --level container 2>/dev/null >"$tmp/c.csv"
head -1 "$tmp/c.csv" | grep -q '^timestamp,wall_ns,seq,interval_ns,node,container_id,' &&
	ok "--level container: header" || fail "container header"

# --- empty store, bad ranges, unreadable stores
"$build/tests/store_probe" write "$tmp/empty" 0 >/dev/null 2>&1
out=$("$dataset" --store.path "$tmp/empty" 2>/dev/null)
[ $? -eq 0 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q '^timestamp,' <<<"$out" && ok "empty store: a header and exit 0" || fail "empty store: $out"
"$dataset" --store.path "$tmp/rapl" --since 2026-11-22T12:00:00Z --until 2026-11-22T11:00:00Z >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "is after --until" "$tmp/e" && ok "--since after --until: exit 2" || fail "bad range: $(cat "$tmp/e")"
"$dataset" --store.path "$tmp/rapl" --since yesterday >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "invalid --since" "$tmp/e" && ok "--since yesterday: exit 2" || fail "bad time: $(cat "$tmp/e")"
n=$("$dataset" --store.path "$tmp/rapl" --since -2s 2>/dev/null | wc -l)
all=$("$dataset" --store.path "$tmp/rapl" 2>/dev/null | wc -l)
[ "$n" -le "$all" ] && ok "--since -2s: $((n - 1)) of $((all - 1)) rows" || fail "--since -2s"
"$dataset" --store.path "$tmp/none" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "no store at" "$tmp/e" && ok "missing store: exit 2" || fail "missing store: $(cat "$tmp/e")"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	"$build/tests/store_probe" write "$tmp/grp" 1 nogroup >/dev/null 2>&1
	setpriv --reuid=65534 --regid=4321 --clear-groups "$dataset" --store.path "$tmp/grp" >/dev/null 2>"$tmp/e"
	[ $? -eq 2 ] && grep -q "permission denied" "$tmp/e" && ok "unreadable store: exit 2, says why" || fail "unreadable: $(cat "$tmp/e")"
fi
if [ "$fails" -eq 0 ] && [ -n "${skipped_parts:-}" ]; then
	echo "every other dataset and train check passed; part skipped (see SKIP above)"
	exit 77
fi
finish "dataset and train"
