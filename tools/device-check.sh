#!/usr/bin/env bash
# One prepared check of the GPU path on a real NVIDIA machine (issue 48).
#
#   tools/device-check.sh bundle            here (Debian 12): a release build
#       of kepler-collectd and kepler-stdout in build-device/bundle/, with
#       every shared library they load (the loader and libc included), so
#       that nothing has to be installed where it runs. 20-30 MiB.
#   tools/device-check.sh run [SECONDS]     there, as root, one command: the
#       bundled collector (eBPF informer, the real libnvidia-ml.so.1, its
#       privilege drop and seccomp filter) beside two PyTorch processes on
#       GPU 0, one at full load and one at about a third, for SECONDS (120);
#       then one report, build-device/report.md (and $OUT/device-report.md
#       when $OUT is set), also printed. Well inside 8 minutes.
#   tools/device-check.sh cost [SECONDS]   there, as root: what the GPU path
#       costs the collector. One PyTorch process at full load; the collector
#       for SECONDS (30) with --gpu.enabled false, then as long with it on
#       (its own CPU per interval, from its snapshots); then the CPU and wall
#       time of each NVML call the collector makes per interval, 200 calls
#       each (ctypes). Report: build-device/cost.md ($OUT/device-cost.md).
#   tools/device-check.sh cpu [--dry-run] [SECONDS]   the CPU side, there as
#       root: lists the power interfaces the machine has (powercap zones and
#       whether energy_uj is readable by others, perf's power PMU, hwmon power
#       sensors, an ACPI power meter, /dev/ipmi0); then, where one exists, the
#       bundled collector (--meter.source auto) through idle / one core / half
#       the cores / all cores, twice, SECONDS (20) each, beside the kernel's own
#       counters sampled by the check (powercap energy_uj, and the power PMU
#       read with perf_event_open): each phase's watts and the collector's
#       error; then kepler-dataset and kepler-train fit a model on the first
#       four phases and its error (MAPE, R2) on the other four. Where nothing
#       exists it says so plainly. Report: build-device/cpu.md
#       ($OUT/device-cpu.md). --dry-run: the list and the plan, nothing run
#       (here: what this machine lacks). --sysfs DIR reads a fake tree
#       instead of /sys (checks the check, with a writer advancing it).
#   tools/device-check.sh run --stand-in [SECONDS]   the same here, against
#       the stand-in NVML of a build without sanitizers (build/tests/nvml, or
#       $KEPLER_STANDIN_NVML) and two shell processes the stand-in says use
#       the GPU at 90 % and 30 %: checks the check.
#
# The report compares, over the same window (the collector's snapshots):
#   - the collector's GPU energy with NVML's own energy counter (sampled
#     every second with ctypes, no pynvml needed) and with nvidia-smi's
#     power readings integrated;
#   - each PyTorch process's share of the GPU's active energy with its share
#     of NVML's per-process SM utilisation samples;
#   - conservation in every snapshot (processes + unattributed == active,
#     active + idle == energy);
#   - that the real driver's calls pass the seccomp filter (the collector
#     alive, Seccomp: 2, no GPU read error);
#   - the collector's CPU per interval (its own accounting) at this node's
#     core count, with the eBPF informer.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
src=$PWD
out=$src/build-device

bundle() {
	local b=$out/build
	cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DKEPLER_TESTS=OFF >/dev/null &&
		cmake --build "$b" -j"$(nproc)" --target kepler-collectd kepler-stdout kepler-dataset kepler-train \
			>/dev/null || return 1
	rm -rf "$out/bundle"
	mkdir -p "$out/bundle/bin" "$out/bundle/lib"
	cp "$b/collectd/kepler-collectd" "$b/readers/stdout/kepler-stdout" "$b/readers/dataset/kepler-dataset" \
		"$b/readers/train/kepler-train" "$out/bundle/bin/"
	# every library the binaries load (and libcurl, which the collector opens itself for a kubelet or BMC)
	for f in "$out"/bundle/bin/* /usr/lib/x86_64-linux-gnu/libcurl.so.4; do
		[ -e "$f" ] && ldd "$f" | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}'
	done | sort -u | while read -r l; do cp -L "$l" "$out/bundle/lib/"; done
	# what a driver library dlopened later may want of glibc besides
	for l in libdl.so.2 librt.so.1 libpthread.so.0 libm.so.6; do cp -L "/lib/x86_64-linux-gnu/$l" "$out/bundle/lib/"; done
	git -C "$src" rev-parse --short HEAD >"$out/bundle/commit" 2>/dev/null
	du -sh "$out/bundle" | awk '{print "bundle: " $1 " in build-device/bundle (carry it: build-device/bundle)"}'
}

run() {
	local seconds=120 standin=0
	[ "${1:-}" = --stand-in ] && { standin=1; shift; }
	[ -n "${1:-}" ] && seconds=$1
	# the run's files where the collector, once it is uid 65432, can reach its store
	local w=/tmp/kepler-device-check bin=$out/bundle/bin lib=$out/bundle/lib
	[ -x "$bin/kepler-collectd" ] || { echo "no bundle: run 'tools/device-check.sh bundle' on the build machine first"; return 1; }
	[ "$(id -u)" -eq 0 ] || { echo "run as root (the collector's eBPF informer and NVML's device files)"; return 1; }
	rm -rf "$w"
	mkdir -p "$w"
	chmod 0755 "$w"
	local ld=("$lib/ld-linux-x86-64.so.2" --library-path "$lib")
	local nvml pids=() env=()
	if [ $standin = 1 ]; then
		# a build without sanitizers: the bundle's collector and python load it
		nvml=${KEPLER_STANDIN_NVML:-$(ls "$src"/build/tests/nvml/libnvidia-ml.so.1 2>/dev/null | head -1)}
		[ -f "$nvml" ] || { echo "no stand-in NVML: set KEPLER_STANDIN_NVML to a non-sanitized build's tests/nvml/libnvidia-ml.so.1"; return 1; }
		sh -c 'while :; do sleep 0.2; done' &
		pids+=($!)
		sh -c 'while :; do sleep 0.2; done' &
		pids+=($!)
		printf 'device 0 GPU-00000000-0000-0000-0000-000000000000 NVIDIA H100 80GB HBM3 (stand-in)\npower 0 350\nutil 0 %s 90\nutil 0 %s 30\n' \
			"${pids[0]}" "${pids[1]}" >"$w/nvml.script"
		chmod 0644 "$w/nvml.script"
		env=(FAKE_NVML_SCRIPT="$w/nvml.script")
	else
		nvml=$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml.so.1 .*x86-64/{print $NF; exit}')
		[ -n "$nvml" ] || nvml=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1 2>/dev/null | head -1)
		[ -n "$nvml" ] || { echo "no libnvidia-ml.so.1 on this machine"; return 1; }
		python3 -c 'import torch; assert torch.cuda.is_available()' 2>"$w/torch.err" ||
			{ echo "PyTorch with CUDA is needed: $(tail -1 "$w/torch.err")"; return 1; }
		# full load, and a third of it: matrix products for 1/3 of every 300 ms, then sleep
		cat >"$w/load.py" <<'PY'
import sys, time, torch
duty = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
end = time.time() + float(sys.argv[2])
while time.time() < end:
    t0 = time.time()
    while time.time() - t0 < 0.3 * duty:
        c = a @ b
        torch.cuda.synchronize()
    if duty < 1:
        time.sleep(0.3 * (1 - duty))
PY
		python3 "$w/load.py" 1 $((seconds + 40)) >"$w/load-full.log" 2>&1 &
		pids+=($!)
		python3 "$w/load.py" 0.333 $((seconds + 40)) >"$w/load-third.log" 2>&1 &
		pids+=($!)
	fi
	# NVML's own view, every second: the energy counter, the power, per-process SM samples
	cat >"$w/sampler.py" <<'PY'
import ctypes, json, sys, time
lib = ctypes.CDLL(sys.argv[1]); end = time.time() + float(sys.argv[2])
class S(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]
assert lib.nvmlInit_v2() == 0
h = ctypes.c_void_p(); assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
last = 0
while time.time() < end:
    mj, mw, n = ctypes.c_ulonglong(), ctypes.c_uint(), ctypes.c_uint(0)
    re = lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(mj)); rp = lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(mw))
    samples = []
    if lib.nvmlDeviceGetProcessUtilization(h, None, ctypes.byref(n), ctypes.c_ulonglong(last)) == 7 and n.value:
        buf = (S * (n.value + 16))(); n.value += 16
        if lib.nvmlDeviceGetProcessUtilization(h, buf, ctypes.byref(n), ctypes.c_ulonglong(last)) == 0:
            samples = [(buf[i].pid, buf[i].ts, buf[i].sm) for i in range(n.value) if buf[i].ts > last]
            last = max([last] + [s[1] for s in samples])
    print(json.dumps({"t": time.time(), "mj": mj.value if re == 0 else None, "mw": mw.value if rp == 0 else None, "samples": samples}), flush=True)
    time.sleep(1 - time.time() % 1)
PY
	env "${env[@]}" python3 "$w/sampler.py" "$nvml" $((seconds + 20)) >"$w/nvml.jsonl" 2>"$w/sampler.err" &
	pids+=($!)
	if command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=timestamp,power.draw --format=csv,noheader,nounits -i 0 -lms 1000 >"$w/smi.csv" 2>&1 &
		pids+=($!)
		nvidia-smi >"$w/nvidia-smi.txt" 2>&1
	fi
	sleep 5
	# the first pair that starts: the node's own meter, else the fake one; the
	# eBPF informer, else /proc (a gVisor sandbox has no bpf())
	local meter informer cpid=0
	start_collector() {
		env "${env[@]}" "${ld[@]}" "$bin/kepler-collectd" --store.path "$w/store" --store.group "" \
			--meter.source "$1" --informer "$2" --monitor.interval 2s --gpu.enabled true \
			--gpu.nvml-library "$nvml" >"$w/collectd.log" 2>&1 &
		cpid=$!
		sleep 6
		kill -0 $cpid 2>/dev/null
	}
	: >"$w/tries.txt"
	for meter in auto fake; do
		[ $standin = 1 ] && [ $meter = auto ] && continue
		for informer in ebpf procfs; do
			rm -rf "$w/store"
			start_collector $meter $informer && break 2
			wait $cpid 2>/dev/null
			echo "meter $meter, informer $informer: refused: $(grep -v '^$' "$w/collectd.log" | tail -2 | tr '\n' ' ')" >>"$w/tries.txt"
		done
	done
	kill -0 $cpid 2>/dev/null || { cat "$w/tries.txt"; for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; return 1; }
	grep Seccomp: /proc/$cpid/status >"$w/seccomp.txt" 2>/dev/null
	sleep "$seconds"
	grep Seccomp: /proc/$cpid/status >>"$w/seccomp.txt" 2>/dev/null
	local alive=0
	kill -0 $cpid 2>/dev/null && alive=1
	kill $cpid 2>/dev/null
	wait $cpid 2>/dev/null
	local rc=$?
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	"${ld[@]}" "$bin/kepler-stdout" --store.path "$w/store" --format json --all >"$w/all.jsonl" 2>"$w/stdout.err"
	python3 - "$w" "$alive" "$rc" "$meter/$informer" "$standin" "${pids[0]}" "${pids[1]}" "$(nproc)" "$(cat "$out/bundle/commit" 2>/dev/null)" <<'PY' | tee "$out/report.md"
import json, os, statistics, sys
w, alive, rc, meter, standin, full, third, ncpu, commit = sys.argv[1:]
full, third = int(full), int(third)
snaps = [json.loads(l) for l in open(f"{w}/all.jsonl") if l.strip()]
nv = [json.loads(l) for l in open(f"{w}/nvml.jsonl") if l.strip()]
log = open(f"{w}/collectd.log", errors="replace").read()
out = ["# kepler-c on a real NVIDIA GPU" + (" (STAND-IN dry run)" if standin == "1" else ""), ""]
smi = open(f"{w}/nvidia-smi.txt").read().splitlines() if os.path.exists(f"{w}/nvidia-smi.txt") else []
out.append(f"Build {commit}; kernel {os.uname().release}; {ncpu} CPUs; meter.source/informer {meter}; {len(snaps)} snapshots at 2 s; " + (next((l.strip() for l in smi if "Driver Version" in l), "nvidia-smi absent")))
out.append("")
rows = []
def row(what, figure, verdict): rows.append(f"| {what} | {figure} | {verdict} |")
# after the collector's first intervals (priming, the first samples), and inside NVML's sampled span
nv_t0, nv_t1 = (nv[0]["t"], nv[-1]["t"]) if nv else (0, 0)
win = [s for s in snaps[3:] if nv_t0 <= s["wall_ns"] / 1e9 - s["interval_ns"] / 1e9 and s["wall_ns"] / 1e9 <= nv_t1]
if len(win) < 10:
    print("\n".join(out + [f"too few snapshots: {len(snaps)}; collector log:", "```", log[-3000:], "```"])); sys.exit(1)
def gz(s):
    return next((i for i, z in enumerate(s["node"]["zones"]) if z["name"] == "gpu0"), None)
t0, t1 = win[0]["wall_ns"] / 1e9 - win[0]["interval_ns"] / 1e9, win[-1]["wall_ns"] / 1e9
e_col = sum(s["node"]["zones"][gz(s)]["delta_uj"] for s in win if gz(s) is not None) / 1e6
def interp(t, key):
    pts = [(r["t"], r[key]) for r in nv if r[key] is not None]
    for (ta, va), (tb, vb) in zip(pts, pts[1:]):
        if ta <= t <= tb:
            return va + (vb - va) * (t - ta) / (tb - ta)
    return None
a, b = interp(t0, "mj"), interp(t1, "mj")
if a is not None and b is not None:
    e_nv = (b - a) / 1e3
    row("GPU energy: collector vs NVML's energy counter", f"{e_col:.1f} J vs {e_nv:.1f} J over {t1 - t0:.1f} s ({(e_col / e_nv - 1) * 100:+.2f} %)", "ok" if abs(e_col / e_nv - 1) < 0.02 else "CHECK")
else:
    row("GPU energy: collector vs NVML's energy counter", f"{e_col:.1f} J; the counter was not sampled over the window", "CHECK")
if os.path.exists(f"{w}/smi.csv"):
    import datetime
    pts = []
    for l in open(f"{w}/smi.csv"):
        try:
            ts, p = [x.strip() for x in l.split(",")]
            pts.append((datetime.datetime.strptime(ts, "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(p)))
        except Exception:
            pass
    pts = [p for p in pts if t0 <= p[0] <= t1]
    if len(pts) > 5:
        e_smi = sum((tb - ta) * (pa + pb) / 2 for (ta, pa), (tb, pb) in zip(pts, pts[1:])) * (t1 - t0) / (pts[-1][0] - pts[0][0])
        row("GPU energy: collector vs nvidia-smi's power.draw integrated", f"{e_col:.1f} J vs {e_smi:.1f} J ({(e_col / e_smi - 1) * 100:+.2f} %; {len(pts)} readings)", "ok" if abs(e_col / e_smi - 1) < 0.05 else "CHECK")
    else:
        row("GPU energy vs nvidia-smi", f"{len(pts)} readings in the window (local time vs UTC?)", "CHECK")
else:
    row("GPU energy vs nvidia-smi", "nvidia-smi absent", "-")
share, act = {full: 0, third: 0}, 0
for s in win:
    zi = gz(s)
    if zi is None:
        continue
    act += s["node"]["zones"][zi]["active_delta_uj"]
    for p in s["processes"]:
        if p["pid"] in share:
            share[p["pid"]] += p["zones"][zi]["delta_uj"]
sm = {full: 0, third: 0}
for r in nv:
    for pid, ts, u in r["samples"]:
        if pid in sm and t0 * 1e6 <= ts <= t1 * 1e6:
            sm[pid] += u
if act and sum(sm.values()):
    c = {p: share[p] / act for p in share}
    n = {p: sm[p] / sum(sm.values()) for p in sm}
    worst = max(abs(c[p] - n[p]) for p in c)
    row("process split: collector's share of active GPU energy vs NVML's SM samples", f"full load {c[full]:.3f} vs {n[full]:.3f}; a third {c[third]:.3f} vs {n[third]:.3f} (worst {worst * 100:.2f} points)", "ok" if worst < 0.02 else "CHECK")
else:
    row("process split", f"active {act} uJ, SM samples {sm}", "CHECK")
bad = 0
for s in win:
    zi = gz(s)
    if zi is None:
        bad += 1
        continue
    z = s["node"]["zones"][zi]
    procs = sum(p["zones"][zi]["delta_uj"] for p in s["processes"])
    bad += procs + z["unattributed_delta_uj"] != z["active_delta_uj"] or z["active_delta_uj"] + z["idle_delta_uj"] != z["delta_uj"]
row("conservation in every snapshot (processes + unattributed == active, active + idle == energy)", f"{len(win) - bad} of {len(win)} exact", "ok" if not bad else "CHECK")
sec = open(f"{w}/seccomp.txt").read().split() if os.path.exists(f"{w}/seccomp.txt") else []
errs = [l for l in log.splitlines() if "GPU 0" in l and ("nvml" in l.lower() and ("error" in l.lower() or "fail" in l.lower() or "Unknown" in l))]
row("the real driver's calls through the seccomp filter", f"collector alive to the end: {'yes' if alive == '1' else 'NO'}; stopped with exit {rc}; Seccomp: {' '.join(sec[1::2]) or '?'} (2 = filter); GPU read errors logged: {len(errs)}", "ok" if alive == "1" and rc == "0" and not errs and "2" in sec else "CHECK")
cpu = [(b["collector_cpu_ns"] - a["collector_cpu_ns"]) / 1e6 for a, b in zip(win, win[1:])]
nproc = statistics.median(len(s["processes"]) for s in win)
row(f"collector CPU per interval, {meter.split('/')[1]} informer, {ncpu} CPUs, {nproc:.0f} processes", f"median {statistics.median(cpu):.2f} ms, p90 {sorted(cpu)[int(len(cpu) * 0.9)]:.2f} ms over {len(cpu)} intervals; peak RSS {max(s['collector_rss_bytes'] for s in win) / 2**20:.1f} MiB", "ok" if statistics.median(cpu) < 10 else "CHECK")
out += ["| Check | Figure | |", "|---|---|---|"] + rows + [""]
start = [l for l in log.splitlines() if "GPU" in l or "energy source" in l or "informer" in l][:8]
out += ["Collector start-up lines:", "```"] + start + ["```"]
tries = open(f"{w}/tries.txt").read().strip() if os.path.exists(f"{w}/tries.txt") else ""
if tries:
    out += ["", "Refused first:", "```", tries, "```"]
print("\n".join(out))
PY
	[ -n "${OUT:-}" ] && cp "$out/report.md" "$OUT/device-report.md" && cp "$w/collectd.log" "$OUT/device-collectd.log"
	return 0
}

cost() {
	local seconds=${1:-30} w=/tmp/kepler-device-cost bin=$out/bundle/bin lib=$out/bundle/lib
	[ -x "$bin/kepler-collectd" ] || { echo "no bundle"; return 1; }
	rm -rf "$w"
	mkdir -p "$w"
	chmod 0755 "$w"
	local ld=("$lib/ld-linux-x86-64.so.2" --library-path "$lib") nvml
	nvml=${KEPLER_STANDIN_NVML:-$(ldconfig -p 2>/dev/null | awk '/libnvidia-ml.so.1 .*x86-64/{print $NF; exit}')}
	[ -n "$nvml" ] || { echo "no libnvidia-ml.so.1"; return 1; }
	python3 -c '
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    c = a @ b; torch.cuda.synchronize()' $((2 * seconds + 60)) >"$w/load.log" 2>&1 &
	local load=$!
	sleep 10
	local gpu
	for gpu in false true; do
		env "${ld[@]}" "$bin/kepler-collectd" --store.path "$w/store-$gpu" --store.group "" --informer ebpf \
			--monitor.interval 2s --gpu.enabled $gpu --gpu.nvml-library "$nvml" >"$w/collectd-$gpu.log" 2>&1 &
		local c=$!
		sleep $((seconds + 4))
		kill $c
		wait $c
		"${ld[@]}" "$bin/kepler-stdout" --store.path "$w/store-$gpu" --format json --all >"$w/all-$gpu.jsonl" 2>/dev/null
	done
	python3 - "$nvml" "$load" >"$w/calls.txt" 2>&1 <<'PY2'
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1]); load = int(sys.argv[2])
assert lib.nvmlInit_v2() == 0
h = ctypes.c_void_p(); assert lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) == 0
class S(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("ts", ctypes.c_ulonglong), ("sm", ctypes.c_uint), ("mem", ctypes.c_uint), ("enc", ctypes.c_uint), ("dec", ctypes.c_uint)]
class P(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("mem", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
u64, u32 = ctypes.c_ulonglong(), ctypes.c_uint()
samples = (S * 256)(); procs = (P * 256)()
def util(since):
    n = ctypes.c_uint(256)
    return lib.nvmlDeviceGetProcessUtilization(h, samples, ctypes.byref(n), ctypes.c_ulonglong(since))
def running(f):
    n = ctypes.c_uint(256)
    return f(h, ctypes.byref(n), procs)
calls = [
    ("nvmlDeviceGetTotalEnergyConsumption", lambda: lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(u64))),
    ("nvmlDeviceGetPowerUsage", lambda: lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(u32))),
    ("nvmlDeviceGetProcessUtilization (since 0)", lambda: util(0)),
    ("nvmlDeviceGetProcessUtilization (since 2 s ago)", lambda: util(int(time.time() * 1e6) - 2000000)),
    ("nvmlDeviceGetComputeRunningProcesses_v3", lambda: running(lib.nvmlDeviceGetComputeRunningProcesses_v3)),
    ("nvmlDeviceGetGraphicsRunningProcesses_v3", lambda: running(lib.nvmlDeviceGetGraphicsRunningProcesses_v3)),
]
print("| NVML call | returned | CPU per call | wall per call |")
print("|---|---|---|---|")
for name, f in calls:
    r = f()
    c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
    for _ in range(200):
        f()
    c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
    print(f"| {name} | {r} | {(c1 - c0) / 200 / 1e3:.1f} us | {(w1 - w0) / 200 / 1e3:.1f} us |")
PY2
	kill $load 2>/dev/null
	wait 2>/dev/null
	python3 - "$w" "$(nproc)" "$seconds" <<'PY2' | tee "$out/cost.md"
import json, os, statistics, sys
w, ncpu, seconds = sys.argv[1:]
print(f"# What the GPU path costs the collector (kernel {os.uname().release}, {ncpu} CPUs, one PyTorch process at full load)")
print()
print("| --gpu.enabled | intervals | collector CPU per 2 s interval, median | p90 | processes |")
print("|---|---|---|---|---|")
for gpu in ("false", "true"):
    s = [json.loads(l) for l in open(f"{w}/all-{gpu}.jsonl") if l.strip()][2:]
    cpu = sorted((b["collector_cpu_ns"] - a["collector_cpu_ns"]) / 1e6 for a, b in zip(s, s[1:]))
    if cpu:
        print(f"| {gpu} | {len(cpu)} | {statistics.median(cpu):.2f} ms | {cpu[int(len(cpu) * 0.9)]:.2f} ms | {statistics.median(len(x['processes']) for x in s):.0f} |")
print()
print(open(f"{w}/calls.txt").read())
PY2
	[ -n "${OUT:-}" ] && cp "$out/cost.md" "$OUT/device-cost.md" && cp "$w"/collectd-*.log "$OUT/"
	return 0
}

. "$src/tools/device-check-cpu.sh"

case "${1:-}" in
bundle) bundle ;;
cpu) shift; cpu "$@" ;;
run) shift; run "$@" ;;
cost) shift; cost "$@" ;;
*) sed -n '2,50p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
