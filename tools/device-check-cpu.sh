# shellcheck shell=bash
# The CPU side of tools/device-check.sh (sourced by it: `tools/device-check.sh
# cpu [--dry-run] [--sysfs DIR] [SECONDS]`). What power interfaces the machine
# has, and where one exists, kepler-c's zone energy against the kernel's own
# counter through idle and loaded phases, and a model trained on half the
# phases, tested on the other half.

# cpu_inventory SYSFS: one line per interface, "- name: what (usable|absent|...)"; sets have_*
cpu_inventory() {
	local sys=$1 z n pm hw name f
	have_powercap=0 have_perf=0 have_hwmon=0 have_ipmi=0
	echo "- CPU: $(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown), $(nproc) logical CPUs, kernel $(uname -r)"
	n=0
	for z in "$sys"/class/powercap/intel-rapl:* "$sys"/class/powercap/intel-rapl-mmio:*; do
		[ -f "$z/energy_uj" ] || continue
		n=$((n + 1))
		echo "- powercap: $(basename "$z") $(cat "$z/name" 2>/dev/null), energy_uj mode $(stat -L -c %a "$z/energy_uj")$(
			[ "$(stat -L -c %a "$z/energy_uj")" = 400 ] && echo " (root only: the collector opens it before its privilege drop)")"
	done
	[ $n -gt 0 ] && have_powercap=1 || echo "- powercap: absent ($sys/class/powercap has no intel-rapl zone)"
	pm=$sys/bus/event_source/devices/power
	if [ -f "$pm/type" ] && ls "$pm"/events/energy-* >/dev/null 2>&1; then
		have_perf=1
		echo "- perf power PMU: type $(cat "$pm/type"), cpumask $(cat "$pm/cpumask" 2>/dev/null), events $(cd "$pm/events" && ls energy-* | grep -v '\.' | tr '\n' ' ')(perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null))"
	else
		echo "- perf power PMU: absent (no $pm)"
	fi
	n=0
	for hw in "$sys"/class/hwmon/hwmon*; do
		[ -d "$hw" ] || continue
		name=$(cat "$hw/name" 2>/dev/null)
		for f in "$hw"/power*_input "$hw"/power*_average "$hw"/energy*_input; do
			[ -f "$f" ] || continue
			n=$((n + 1))
			echo "- hwmon: $(basename "$hw") ($name) $(basename "$f")$([ "$name" = power_meter ] && echo ": an ACPI power meter")"
		done
	done
	[ $n -gt 0 ] && have_hwmon=1 || echo "- hwmon power or energy sensors: absent"
	ls "$sys"/bus/acpi/drivers/power_meter/ACPI000D:* >/dev/null 2>&1 &&
		echo "- ACPI power meter device: present (the acpi_power_meter driver bound)"
	if [ -c /dev/ipmi0 ]; then
		have_ipmi=1
		echo "- /dev/ipmi0: present (in-band IPMI: platform.ipmi.enabled with no BMC file)"
	else
		echo "- /dev/ipmi0: absent"
	fi
}

# the kernel's own counters every 200 ms, as JSON lines: realtime ns, powercap
# package energy (uJ, summed over sockets, wraps unfolded) and the power PMU's
# package count in joules (perf_event_open on each CPU of its cpumask)
cpu_sampler_py='
import ctypes, glob, json, os, struct, sys, time
sysfs, end = sys.argv[1], time.time() + float(sys.argv[2])
zones = [z for z in glob.glob(sysfs + "/class/powercap/intel-rapl:*")
         if open(z + "/name").read().startswith("package")]
rng = {z: int(open(z + "/max_energy_range_uj").read()) for z in zones}
last, acc = {}, {z: 0 for z in zones}
fds, scale = [], 0.0
pmu = sysfs + "/bus/event_source/devices/power"
if os.path.exists(pmu + "/events/energy-pkg") and sysfs == "/sys":
    libc = ctypes.CDLL(None, use_errno=True)
    typ = int(open(pmu + "/type").read())
    cfg = int(open(pmu + "/events/energy-pkg").read().split("=")[1], 16)
    scale = float(open(pmu + "/events/energy-pkg.scale").read())
    for part in open(pmu + "/cpumask").read().strip().split(","):
        a, _, b = part.partition("-")
        for cpu in range(int(a), int(b or a) + 1):
            attr = struct.pack("IIQ", typ, 64, cfg) + bytes(48)
            fd = libc.syscall(298, ctypes.c_char_p(attr), -1, cpu, -1, 8)
            if fd >= 0:
                fds.append(fd)
            else:
                print(json.dumps({"perf_error": os.strerror(ctypes.get_errno())}), flush=True)
while time.time() < end:
    row = {"t": time.time_ns()}
    if zones:
        for z in zones:
            try:
                v = int(open(z + "/energy_uj").read())
            except ValueError:  # a stand-in tree caught mid-write (sysfs reads are whole)
                continue
            if z in last:
                acc[z] += v - last[z] if v >= last[z] else rng[z] - last[z] + v
            last[z] = v
        row["powercap_uj"] = sum(acc.values())
    if fds:
        row["perf_j"] = sum(struct.unpack("Q", os.read(fd, 8))[0] for fd in fds) * scale
    print(json.dumps(row), flush=True)
    time.sleep(0.2)
'

# per phase: the collector'"'"'s package watts from its snapshots, the kernel'"'"'s over the
# same window (interpolated), the error; then the model held out
cpu_report_py='
import bisect, json, re, statistics, sys
w, phases_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
snaps = [json.loads(l) for l in open(w + "/all.jsonl") if l.strip()]
rows = [json.loads(l) for l in open(w + "/kernel.jsonl") if l.strip() and "t" in l]
phases = [l.split() for l in open(phases_file) if l.strip()]
def interp(key, t):
    pts = [(r["t"], r[key]) for r in rows if key in r]
    if not pts or t < pts[0][0] or t > pts[-1][0]:
        return None
    i = bisect.bisect_left([p[0] for p in pts], t)
    if pts[i][0] == t or i == 0:
        return pts[i][1]
    (t0, v0), (t1, v1) = pts[i - 1], pts[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)
print("| phase | CPUs busy | snapshots | kepler-c package W | powercap W | error | perf PMU W | error |")
print("|---|---|---|---|---|---|---|---|")
worst = []
for name, busy, t0, t1 in phases:
    t0, t1 = int(t0) + 2 * 10**9, int(t1)
    s = [x for x in snaps if not x["first"] and x["wall_ns"] - x["interval_ns"] >= t0 and x["wall_ns"] <= t1]
    if not s:
        print(f"| {name} | {busy} | 0 | | | | | |")
        continue
    a, b = s[0]["wall_ns"] - s[0]["interval_ns"], s[-1]["wall_ns"]
    uj = sum(z["delta_uj"] for x in s for z in x["node"]["zones"] if z["name"] == "package")
    kw = uj / (b - a) * 1e3
    cells = [name, busy, str(len(s)), f"{kw:.2f}"]
    for key, mult in (("powercap_uj", 1.0), ("perf_j", 1e6)):
        va, vb = interp(key, a), interp(key, b)
        if va is None or vb is None:
            cells += ["-", "-"]
            continue
        ref = (vb - va) * mult / (b - a) * 1e3
        err = (kw - ref) / ref * 100 if ref else float("nan")
        worst.append(abs(err))
        cells += [f"{ref:.2f}", f"{err:+.2f} %"]
    print("| " + " | ".join(cells) + " |")
if worst:
    print(f"\nWorst phase error against the kernel'"'"'s counters: {max(worst):.2f} %.")
'

cpu_model_py='
import csv, statistics, sys
model, test = sys.argv[1], sys.argv[2]
# the package zone of the model file: "  package:", "    intercept: X", "    coefficients:", "      name: X"
icpt, coef, inside = None, {}, False
for line in open(model):
    depth, text = len(line) - len(line.lstrip()), line.strip()
    if depth == 2:
        inside = text == "package:"
    elif inside and text.startswith("intercept:"):
        icpt = float(text.split(":")[1])
    elif inside and depth == 6 and ":" in text:
        k, v = text.split(":")
        coef[k.strip()] = float(v)
if icpt is None:
    sys.exit("no package zone in " + model)
y, p = [], []
for r in csv.DictReader(open(test)):
    try:
        y.append(float(r["package_watts"]))
        p.append(icpt + sum(c * float(r[f]) for f, c in coef.items()))
    except (KeyError, ValueError):
        pass
if len(y) < 3:
    sys.exit(f"only {len(y)} held-out rows")
mape = statistics.mean(abs(a - b) / a for a, b in zip(y, p) if a) * 100
mean = statistics.mean(y)
ss = sum((a - mean) ** 2 for a in y)
r2 = 1 - sum((a - b) ** 2 for a, b in zip(y, p)) / ss if ss else float("nan")
print(f"Model trained on the first four phases, tested on the other four ({len(y)} rows): "
      f"MAPE {mape:.2f} %, R2 {r2:.4f}; watts = {icpt:.3f} + " + " + ".join(f"{c:.3f} x {f}" for f, c in coef.items()))
'

cpu() {
	local dry=0 seconds=20 sys=/sys
	while [ $# -gt 0 ]; do
		case $1 in
		--dry-run) dry=1 ;;
		--sysfs) sys=${2:?--sysfs needs a directory}; shift ;;
		*[!0-9]* | '') echo "cpu: unknown argument '$1'"; return 2 ;;
		*) seconds=$1 ;;
		esac
		shift
	done
	local n
	n=$(nproc)
	local phases=("idle 0" "one 1" "half $((n / 2 > 0 ? n / 2 : 1))" "all $n" "idle-2 0" "one-2 1" "half-2 $((n / 2 > 0 ? n / 2 : 1))" "all-2 $n")
	mkdir -p "$out"
	# not in a pipeline: it sets have_*
	cpu_inventory "$sys" >"$out/cpu-inventory.md"
	{
		echo "# The CPU side: power interfaces on $(hostname) and kepler-c against them"
		echo
		cat "$out/cpu-inventory.md"
	} | tee "$out/cpu.md"
	local what=none
	[ "$have_hwmon" = 1 ] && what=hwmon
	[ "$have_perf" = 1 ] && what=rapl-perf
	[ "$have_powercap" = 1 ] && what=rapl
	if [ $dry = 1 ]; then
		{
			echo
			echo "## What a run would do (--dry-run: nothing run)"
			echo
			if [ $what = none ]; then
				echo "- Nothing to compare: this machine has no powercap zone, no perf power PMU and no hwmon power sensor (a VM's view). kepler-collectd would use the power model here (meter.source auto says so at start); a run would only record that."
			else
				echo "- Start the bundled kepler-collectd: --meter.source auto (it would choose $what here), --monitor.interval 1s, the eBPF informer."
				echo "- Sample the kernel's own counters every 200 ms: $([ "$have_powercap" = 1 ] && echo "powercap package energy_uj")$([ "$have_powercap" = 1 ] && [ "$have_perf" = 1 ] && echo " and ")$([ "$have_perf" = 1 ] && echo "power/energy-pkg/ through perf_event_open on each CPU of its cpumask")."
			fi
			echo "- Phases of ${seconds} s each: ${phases[*]} (name, CPUs kept busy by a built-in burner); the first 2 s of each not compared."
			echo "- Per phase: kepler-c's package watts from its snapshots against the kernel's counter over the same window, and the error."
			echo "- kepler-dataset --level node, kepler-train --features cpu_busy on the first four phases; the model's MAPE and R2 on the other four."
			echo "- Time: about $(( ${#phases[@]} * seconds + 30 )) s. Report: build-device/cpu.md (and \$OUT/device-cpu.md)."
		} | tee -a "$out/cpu.md"
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || { echo "run as root (energy_uj is root-only; perf_event_open of CPU-wide events)"; return 1; }
	if [ $what = none ]; then
		echo "- No CPU power interface on this machine: nothing to compare kepler-c with (it uses the power model here)." | tee -a "$out/cpu.md"
		[ -n "${OUT:-}" ] && cp "$out/cpu.md" "$OUT/device-cpu.md"
		return 0
	fi
	local bin=$out/bundle/bin lib=$out/bundle/lib w=/tmp/kepler-device-cpu
	local ld=("$lib/ld-linux-x86-64.so.2" --library-path "$lib")
	# checking the check here: KEPLER_DEVICE_BIN, a directory with the four binaries of a local build
	[ -n "${KEPLER_DEVICE_BIN:-}" ] && bin=$KEPLER_DEVICE_BIN && ld=(env)
	[ -x "$bin/kepler-train" ] || { echo "no bundle with kepler-train: run 'tools/device-check.sh bundle' on the build machine first"; return 1; }
	rm -rf "$w"
	mkdir -p "$w"
	chmod 0755 "$w"
	local total=$(( ${#phases[@]} * seconds * 3 + 120 )) # stopped once the phases end
	python3 -c "$cpu_sampler_py" "$sys" "$total" >"$w/kernel.jsonl" 2>"$w/sampler.err" &
	local sampler=$!
	"${ld[@]}" "$bin/kepler-collectd" --store.path "$w/store" --store.group "" --host.sysfs "$sys" \
		--monitor.interval 1s --gpu.enabled false >"$w/collectd.log" 2>&1 &
	local c=$! p name busy t0 burners
	sleep 4
	: >"$w/phases"
	for p in "${phases[@]}"; do
		read -r name busy <<<"$p"
		burners=()
		for ((i = 0; i < busy; i++)); do
			sh -c 'while :; do :; done' &
			burners+=($!)
		done
		t0=$(date +%s%N)
		sleep "$seconds"
		echo "$name $busy $t0 $(date +%s%N)" >>"$w/phases"
		if [ ${#burners[@]} -gt 0 ]; then
			kill "${burners[@]}" 2>/dev/null
			wait "${burners[@]}" 2>/dev/null
		fi
	done
	kill "$c"
	wait "$c"
	kill "$sampler" 2>/dev/null
	wait "$sampler" 2>/dev/null
	"${ld[@]}" "$bin/kepler-stdout" --store.path "$w/store" --format json --all >"$w/all.jsonl" 2>/dev/null
	"${ld[@]}" "$bin/kepler-dataset" --store.path "$w/store" --level node --output "$w/node.csv" 2>"$w/dataset.err"
	# the first four phases to train, the last four to test, split at the fifth phase's start
	local cut
	cut=$(awk 'NR == 5 {print $3}' "$w/phases")
	awk -F, -v cut="$cut" 'NR == 1 || $2 < cut' "$w/node.csv" >"$w/train.csv"
	awk -F, -v cut="$cut" 'NR == 1 || $2 >= cut' "$w/node.csv" >"$w/test.csv"
	{
		echo
		echo "## kepler-c ($what, chosen by meter.source auto) against the kernel's counters"
		echo
		grep -E "energy source|meter .* not used" "$w/collectd.log" | sed 's/^.* info: /- collector: /'
		echo
		python3 -c "$cpu_report_py" "$w" "$w/phases" "$seconds"
		echo
		"${ld[@]}" "$bin/kepler-train" "$w/train.csv" --features cpu_busy --output "$w/model.yaml" 2>&1 | sed 's/^/    /'
		if [ -f "$w/model.yaml" ]; then
			python3 -c "$cpu_model_py" "$w/model.yaml" "$w/test.csv" 2>&1
		else
			echo "No model: kepler-train refused the first four phases (above)."
		fi
		grep -h perf_error "$w/kernel.jsonl" | head -1
	} | tee -a "$out/cpu.md"
	[ -n "${OUT:-}" ] && cp "$out/cpu.md" "$OUT/device-cpu.md" && cp "$w/collectd.log" "$OUT/collectd-cpu.log"
	return 0
}
