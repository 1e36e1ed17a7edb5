#!/usr/bin/env bash
# The collector holds nothing after start-up. Started as root with the eBPF
# informer and a RAPL tree whose energy_uj files are root-only (0400, as
# since Linux 5.10), it becomes collector.user (uid 64998 here, no such
# user: a uid alone works) in the store's group, and /proc shows: that uid
# and gid, no supplementary group but the store's, every capability set
# empty (bounding and ambient too), NoNewPrivs 1, Seccomp 2, and no libcurl
# mapped (no kubelet or Redfish client: it is loaded on demand). It still reads
# the energy (the files were opened before the drop: the node's energy
# grows), still names the programs of root's processes (one running before
# it started, read at start; one started after, recorded by the eBPF
# program at exec), and owns its store. Then the three escalations that
# worked against the old credentials (append to a root-owned file, read
# /etc/shadow, PTRACE_ATTACH to a root process) are replayed with exactly
# the collector's credentials (setpriv) and each is refused. A collector
# told to become a user that does not exist becomes uid 65432, which no
# account uses (never nobody, which the exporter runs as), and says so.
# Restarted as root without CAP_DAC_OVERRIDE (the systemd unit's bounding
# set) it takes its store back and goes on.
# Needs root, setpriv and BPF; skips otherwise.
# Usage: test_collector_privileges.sh BUILD_DIR
set -uo pipefail
build=$1
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root: the collector drops root's privileges"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux) to replay the collector's credentials"
py=/usr/bin/python3
[ -x "$py" ] || skip "no $py"
uid=64998

"$(dirname "$0")/../../tools/fake-sysfs.sh" "$tmp/sys" --sockets 1 --dram >/dev/null
rapl=$tmp/sys/devices/virtual/powercap/intel-rapl/intel-rapl:0
echo 1000000 >"$rapl/energy_uj"
echo 1000000 >"$rapl/intel-rapl:0:0/energy_uj"
chmod 0400 "$rapl/energy_uj" "$rapl/intel-rapl:0:0/energy_uj"
(
	p=1000000
	while :; do
		p=$((p + 1000000))
		echo $p 1<>"$rapl/energy_uj" # in place, growing: no reader sees a torn file
		echo $p 1<>"$rapl/intel-rapl:0:0/energy_uj"
		sleep 0.1
	done
) &
pids+=($!)

# root's programs: one running before the collector starts, one after (each wakes every 50 ms)
sh -c 'while :; do sleep 0.05; done' &
before=$!
pids+=($before)
"$collectd" --host.sysfs "$tmp/sys" --informer ebpf --store.path "$tmp/store" --store.group nogroup \
	--collector.user $uid --monitor.interval 300ms >"$tmp/c.log" 2>&1 &
cpid=$!
pids+=($cpid)
for _ in $(seq 100); do grep -q "started:" "$tmp/c.log" && break; kill -0 $cpid 2>/dev/null || break; sleep 0.1; done
grep -q "informer ebpf" "$tmp/c.log" || skip "the eBPF informer did not load here: $(grep -m1 informer "$tmp/c.log")"
grep -q "started:" "$tmp/c.log" || { cat "$tmp/c.log"; fail "the collector did not start"; finish collector_privileges; }
sh -c 'while :; do sleep 0.05; done' &
after=$!
pids+=($after)
grep -m1 "privileges:" "$tmp/c.log" | sed 's/^.*info: /log: /'

status=/proc/$cpid/status
nogroup=$(getent group nogroup | cut -d: -f3)
field() { sed -n "s/^$1:[[:space:]]*//p" "$status" | tr -s '\t ' ' '; }
[ "$(field Uid)" = "$uid $uid $uid $uid" ] && ok "Uid: $(field Uid)" || fail "Uid: $(field Uid)"
[ "$(field Gid)" = "$nogroup $nogroup $nogroup $nogroup" ] && ok "Gid: $(field Gid) (the store's group)" ||
	fail "Gid: $(field Gid), expected $nogroup"
[ "$(field Groups)" = "$nogroup" ] || [ "$(field Groups)" = "$nogroup " ] && ok "Groups: $(field Groups)" ||
	fail "Groups: '$(field Groups)'"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	[ "$(field $c)" = 0000000000000000 ] && ok "$c: $(field $c)" || fail "$c: $(field $c)"
done
[ "$(field NoNewPrivs)" = 1 ] && ok "NoNewPrivs: 1" || fail "NoNewPrivs: $(field NoNewPrivs)"
[ "$(field Seccomp)" = 2 ] && ok "Seccomp: 2 (filter)" || fail "Seccomp: $(field Seccomp)"
# no kubelet or Redfish client: libcurl and what it pulls in (GnuTLS, Kerberos, LDAP) are not loaded
! grep -Eq "libcurl|libgnutls|libkrb5|libldap" /proc/$cpid/maps &&
	ok "libcurl not loaded (no kubelet or Redfish client): $(awk '$6 ~ /\.so/ {print $6}' /proc/$cpid/maps | sort -u | wc -l) libraries mapped" ||
	fail "libraries no client needs: $(grep -Eo 'lib(curl|gnutls|krb5|ldap)[^ ]*' /proc/$cpid/maps | sort -u | tr '\n' ' ')"
owner=$(stat -c %u "$tmp/store/data.mdb")
[ "$owner" = $uid ] && ok "the store's data.mdb is owned by uid $uid" || fail "data.mdb owned by $owner"

# the energy keeps coming from the root-only files, and root's programs are named
json() { "$stdout" --store.path "$tmp/store" --format json 2>/dev/null; }
first=$(json)
sleep 2
"$py" - "$before" "$after" <(echo "$first") <(json) <<'PY' || fail "after the drop"
import json, sys
before, after = int(sys.argv[1]), int(sys.argv[2])
a, b = json.load(open(sys.argv[3])), json.load(open(sys.argv[4]))
za = {z["name"]: z["energy_uj"] for z in a["node"]["zones"]}
zb = {z["name"]: z["energy_uj"] for z in b["node"]["zones"]}
assert b["seq"] > a["seq"], (a["seq"], b["seq"])
for z in ("package", "dram"):
    assert zb[z] > za[z], f"{z}: {za[z]} -> {zb[z]}: no energy read after the drop"
print(f"ok: energy read from root-only files after the drop: package +{zb['package'] - za['package']} uJ, "
      f"dram +{zb['dram'] - za['dram']} uJ over snapshots {a['seq']} -> {b['seq']}")
exe = {p["pid"]: p.get("exe", "") for p in b["processes"]}
for pid, when in ((before, "running before the start, read at start"), (after, "started after, recorded at exec")):
    assert pid in exe, f"pid {pid} ({when}) not in the snapshot"
    e = exe[pid]
    assert e.endswith(("/sh", "/dash")), f"pid {pid} ({when}): exe {e!r}"
    print(f"ok: root's pid {pid} ({when}): exe {e}")
PY

# the escalations, with the collector's credentials exactly
as_collector() {
	setpriv --reuid=$uid --regid="$nogroup" --groups="$nogroup" --inh-caps=-all --ambient-caps=-all \
		--bounding-set=-all --no-new-privs "$@"
}
echo root >"$tmp/root-owned"
chmod 0644 "$tmp/root-owned"
as_collector sh -c "echo pwned >>'$tmp/root-owned'" 2>/dev/null && fail "appended to a root-owned file" ||
	ok "append to a root-owned file: refused"
as_collector cat /etc/shadow >/dev/null 2>&1 && fail "read /etc/shadow" || ok "read /etc/shadow: refused"
sleep 60 &
victim=$!
pids+=($victim)
if as_collector "$py" -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), None, None)  # PTRACE_ATTACH
sys.exit(0 if r == 0 else 1)' "$victim"; then
	fail "PTRACE_ATTACH to root's pid $victim succeeded"
else
	ok "PTRACE_ATTACH to root's pid $victim: refused"
fi
[ "$(cat "$tmp/root-owned")" = root ] || fail "the root-owned file changed"
# a second collector started by hand as root beside it is refused, and changes nothing in the store
owners() { stat -c '%n %U:%G %a' "$tmp/store"/* | sed "s|$tmp/store/||" | tr '\n' ' '; }
before_owners=$(owners)
"$collectd" --host.sysfs "$tmp/sys" --informer procfs --store.path "$tmp/store" --store.group nogroup \
	--collector.user $uid --monitor.interval 300ms >"$tmp/second.log" 2>&1
rc=$?
after_owners=$(owners)
[ $rc != 0 ] && grep -q "another kepler-collectd (pid $cpid) is writing to the store" "$tmp/second.log" &&
	[ "$before_owners" = "$after_owners" ] && ok "a second collector as root: refused, naming pid $cpid; the store's files unchanged ($after_owners)" ||
	fail "second collector: status $rc, $(tail -1 "$tmp/second.log"); owners before: $before_owners, after: $after_owners"
kill -0 $cpid 2>/dev/null && ok "the collector still runs" || fail "the collector died: $(tail -3 "$tmp/c.log")"
grep -E "error|SIGSYS|Bad system call" "$tmp/c.log" && fail "errors in the collector's log"
kill $cpid
wait $cpid 2>/dev/null
last=$(json | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p')

# root again, without CAP_DAC_OVERRIDE (the systemd unit's bounding set): the store, owned by
# uid $uid now, is taken back and the sequence goes on
setpriv --bounding-set=-all,+bpf,+perfmon,+sys_ptrace,+chown,+setuid,+setgid,+setpcap \
	"$collectd" --host.sysfs "$tmp/sys" --informer ebpf --store.path "$tmp/store" --store.group nogroup \
	--collector.user $uid --monitor.interval 300ms >"$tmp/c3.log" 2>&1 &
c3=$!
pids+=($c3)
for _ in $(seq 100); do
	now=$(json | sed -n 's/^{"seq":\([0-9]*\),.*/\1/p')
	[ "${now:-0}" -gt $((last + 1)) ] && break
	sleep 0.1
done
[ "${now:-0}" -gt $((last + 1)) ] && ok "restarted as root without CAP_DAC_OVERRIDE: snapshot $last -> $now" ||
	fail "restart without CAP_DAC_OVERRIDE: seq ${now:-none} after $last: $(grep -v info "$tmp/c3.log" | head -3)"
kill $c3
wait $c3 2>/dev/null

# a user that does not exist: a uid of its own (no account uses it), not nobody (the exporter's), said
"$collectd" --meter.source fake --informer procfs --store.path "$tmp/store2" --store.group "" \
	--collector.user no-such-user-here --monitor.interval 200ms >"$tmp/c2.log" 2>&1 &
c2=$!
pids+=($c2)
for _ in $(seq 50); do grep -q "started:" "$tmp/c2.log" && break; sleep 0.1; done
owner=$(stat -c '%u' "$tmp/store2/data.mdb" 2>/dev/null)
grep -q "collector.user 'no-such-user-here' does not exist: running as uid 65432, a uid no account uses" "$tmp/c2.log" &&
	[ "$(sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$c2/status)" = 65432 ] && [ "$owner" = 65432 ] &&
	ok "a user that does not exist: uid 65432 (no account's), the store's owner ($owner), and the log says so" ||
	fail "unknown user: owner $owner; $(grep -m1 -E 'collector.user|privileges' "$tmp/c2.log")"
finish collector_privileges
