#!/usr/bin/env bash
# kepler-push against a real Prometheus (--web.enable-remote-write-receiver):
# samples stamped with their snapshots' own times; a receiver outage and a
# kepler-push outage, after which what was missed is sent oldest first; the
# store's retention passed during an outage (counted and said, not
# invented); the receiver ends with exactly one sample per snapshot sent,
# with the store's values. One log line per outage, not per retry. Backlogs go as
# three requests at once (push.max-in-flight), each series in one.
# Usage: test_push.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/../lib.sh"
command -v prometheus >/dev/null || skip "prometheus missing (tools/setup.sh installs it)"
collectd=$build/collectd/kepler-collectd
push=$build/readers/push/kepler-push
stdout=$build/readers/stdout/kepler-stdout
store=$tmp/store

# started as root, kepler-push becomes push.user (nobody) with the store's group: a store of group
# nogroup. The collector sees only its own PID namespace: what is pushed is the test's, not the host's.
# A carbon intensity and 2 s tiers: the CO2e families are pushed from the history ledger
own_pids "$collectd" --store.path "$store" --meter.source fake --informer procfs --monitor.interval 500ms --store.group nogroup \
	--store.retention.snapshots 40 --store.tiers 2s:1h --carbon.intensity 412.5 --log.level warn >"$tmp/c.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$store" 2 || fail "no snapshots: $(tail -3 "$tmp/c.log")"
pport=$(free_port)
printf 'global: {}\n' >"$tmp/prometheus.yml"
start_prometheus() {
	prometheus --config.file "$tmp/prometheus.yml" --storage.tsdb.path "$tmp/tsdb" --web.listen-address 127.0.0.1:$pport \
		--web.enable-remote-write-receiver >>"$tmp/prometheus.log" 2>&1 &
	prom=$!
	pids+=($prom)
	eventually 120 curl -sf -o /dev/null "http://127.0.0.1:$pport/-/ready"
}
start_push() {
	"$push" --store.path "$store" --push.remote-write.url "http://127.0.0.1:$pport/api/v1/write" \
		--push.state-dir "$tmp/state" --push.batch 8 --push.max-in-flight 3 --log.level info >>"$tmp/push.log" 2>&1 &
	pusher=$!
	pids+=($pusher)
}
acked() { cat "$tmp/state/remote-write.state" 2>/dev/null || echo 0; }
caught_up() { [ "$(acked)" -ge "$1" ] 2>/dev/null; }
snapshots() { "$stdout" --store.path "$store" --format json --all --level node >>"$tmp/all.jsonl" 2>/dev/null; }

start_prometheus || fail "prometheus did not start: $(tail -3 "$tmp/prometheus.log")"
start_push
eventually 120 caught_up $(($(store_seq "$store") + 2)) || fail "nothing acknowledged: $(tail -3 "$tmp/push.log")"
first=$(( $(acked) ))
ok "kepler-push sends to a real Prometheus: snapshot $first acknowledged"
snapshots

# the receiver down for 10 snapshots, then back (its TSDB kept): what it missed comes, oldest first
kill "$prom"
wait "$prom" 2>/dev/null
wait_seq "$store" $(($(store_seq "$store") + 10))
start_prometheus || fail "prometheus did not come back"
eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after the receiver's outage: $(tail -3 "$tmp/push.log")"
n=$(grep -c "cannot send to" "$tmp/push.log")
[ "$n" -eq 1 ] && grep -q "remote-write takes samples again after" "$tmp/push.log" &&
	ok "the receiver's outage: one line when it began ($(grep -o 'cannot send to [^;]*' "$tmp/push.log" | head -1)), one when it ended" ||
	fail "receiver outage logged $n times: $(grep -E 'cannot send|again' "$tmp/push.log")"
snapshots

# kepler-push itself down (a clean stop: exit 0, nothing left for the sanitizers to say); its
# state brings it back where it was
kill "$pusher"
wait "$pusher"
rc=$?
[ $rc -eq 0 ] && ! grep -q "Sanitizer" "$tmp/push.log" && ok "kepler-push stopped by SIGTERM: exit 0" ||
	fail "kepler-push stopped by SIGTERM: exit $rc: $(grep -A3 Sanitizer "$tmp/push.log" | head -4)"
before=$(acked)
wait_seq "$store" $(($(store_seq "$store") + 8))
start_push
eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after kepler-push's restart"
grep -q "resuming after the snapshot last acknowledged" "$tmp/push.log" &&
	ok "kepler-push restarted: resumed after snapshot $before, caught up to $(acked)" || fail "no resume: $(tail -3 "$tmp/push.log")"
snapshots

# down longer than the store keeps (40 snapshots): what the store no longer holds is counted and said
kill "$pusher"
wait "$pusher" 2>/dev/null
gap_from=$(($(acked) + 1))
snapshots
wait_seq "$store" $(($(store_seq "$store") + 48))
snapshots # what the ring holds as kepler-push comes back: what it can still send
start_push
eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after a long outage"
grep -q "snapshots $gap_from to [0-9]* are no longer in the store" "$tmp/push.log" &&
	ok "an outage longer than the store's retention: $(grep -o 'snapshots [0-9]* to [0-9]* are no longer in the store' "$tmp/push.log")" ||
	fail "no word of the snapshots lost: $(tail -3 "$tmp/push.log")"
last=$(acked) # before the store is read: every snapshot up to it is then in the capture
snapshots

# the receiver's samples: one per snapshot sent, at the snapshot's time, with the store's value
curl -s --data-urlencode "query=kepler_node_cpu_joules_total{zone=\"package\"}[10m]" \
	"http://127.0.0.1:$pport/api/v1/query" >"$tmp/q.json"
python3 - "$tmp/all.jsonl" "$tmp/q.json" "$first" "$last" "$tmp/push.log" <<'PY' || fail "the receiver's samples do not match the store"
import json, re, sys
snaps = {}
for l in open(sys.argv[1]):
    if l.strip():
        s = json.loads(l)
        snaps[s["seq"]] = s
q = json.load(open(sys.argv[2]))["data"]["result"]
first, last = int(sys.argv[3]), int(sys.argv[4])
lost = set()
for a, b in re.findall(r"snapshots (\d+) to (\d+) are no longer in the store", open(sys.argv[5]).read()):
    lost |= set(range(int(a), int(b) + 1))
want = {}
for seq in range(first, last + 1):
    if seq in lost:
        continue
    s = snaps.get(seq)
    if s is None:
        print(f"snapshot {seq} was never read here"); sys.exit(1)
    z = next(z for z in s["node"]["zones"] if z["name"] == "package")
    want[s["wall_ns"] // 1000000] = z["energy_uj"] / 1e6
assert len(q) == 1, q
got = {}
for ts, v in q[0]["values"]:
    ms = round(float(ts) * 1000)
    if ms in got:
        print("two samples at", ms); sys.exit(1)
    got[ms] = float(v)
inwin = {ms: v for ms, v in got.items() if min(want) <= ms <= max(want)}
missing = sorted(set(want) - set(inwin))
extra = sorted(set(inwin) - set(want))
bad = [ms for ms in want if ms in inwin and abs(inwin[ms] - want[ms]) > 1e-6 * max(1, want[ms])]
print(f"snapshots {first} to {last}: {len(want)} sent ({len(lost)} no longer in the store), {len(inwin)} samples received; missing {len(missing)}, extra {len(extra)}, values off {len(bad)}")
sys.exit(0 if not missing and not extra and not bad else 1)
PY
[ $fails -eq 0 ] && ok "across both outages the receiver holds one sample per snapshot sent, at its time, with the store's value"
# the backlogs were sent as 3 requests at once (each series in one), and the real Prometheus, which
# refuses a series' samples out of order, took every one (above)
inflight=$(curl -s --data-urlencode 'query=max_over_time(kepler_push_requests_in_flight[1h])' "http://127.0.0.1:$pport/api/v1/query" |
	jq -r '.data.result[0].value[1] // "none"')
[ "$inflight" = 3 ] && ok "a backlog went as 3 requests at once (push.max-in-flight 3): every sample taken, in order" ||
	fail "kepler_push_requests_in_flight never 3 (most: $inflight)"
curl -s --data-urlencode 'query=kepler_push_sent_snapshots_total' "http://127.0.0.1:$pport/api/v1/query" |
	jq -e '.data.result | length == 1' >/dev/null && ok "kepler-push's own figures arrive with the samples (kepler_push_sent_snapshots_total)" ||
	fail "no kepler_push_sent_snapshots_total"

# CO2e (issue 63): the collector stopped and kepler-push caught up, its last kepler_node_co2e_grams_total
# is the exporter's on the same snapshot, to the µg; between the oldest pushed snapshot a report can begin at
# and the last, the pushed counters' growth is kepler-report's CO2e over that window (both the exact
# figure, the report's floored to the mg; the report from the store's very beginning cannot be asked
# once the ring has pruned it, there being no tier record before it); every sample received through
# the outages is a counter that never went down
stop_own "$cpid"
end=$(store_seq "$store")
eventually 120 caught_up "$end" || fail "not caught up with the stopped collector's last snapshot $end"
eport=$(free_port)
start_exporter_for "$store" "$eport"
wait_metrics "$eport" "$tmp/m.txt" || fail "the exporter served nothing: $(tail -3 "$tmp/exporter-$eport.log")"
exp=$(sed -n 's/^kepler_node_co2e_grams_total{node_name="[^"]*",zone="package"} //p' "$tmp/m.txt")
last_snap=$("$stdout" --store.path "$store" --seq "$end" --format json)
"$stdout" --store.path "$store" --format json --all --level node >"$tmp/ring.jsonl"
curl -s --data-urlencode 'query=kepler_node_co2e_grams_total{zone="package"}[1h]' "http://127.0.0.1:$pport/api/v1/query" >"$tmp/co2e.json"
curl -s --data-urlencode 'query=kepler_carbon_intensity_grams_per_kwh[1h]' "http://127.0.0.1:$pport/api/v1/query" >"$tmp/intensity.json"
# the ring's snapshots that were pushed, oldest first (the ring's very oldest may have been passed
# over as lost while kepler-push came back from its long outage), each with the pushed counter's
# growth from it to the last snapshot
read -r pushed n down < <(python3 - "$tmp/co2e.json" <<'PY'
import json, sys
from decimal import Decimal
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
down = sum(1 for i in range(1, len(v)) if Decimal(v[i][1]) < Decimal(v[i - 1][1]))
print(v[-1][1], len(v), down)
PY
)
python3 - "$tmp/co2e.json" "$tmp/ring.jsonl" "$(jq .wall_ns <<<"$last_snap")" >"$tmp/co2e-from.txt" <<'PY'
import json, sys
from decimal import Decimal
v = json.load(open(sys.argv[1]))["data"]["result"][0]["values"]
at = {round(float(t) * 1000): Decimal(x) for t, x in v}
b = at.get(int(sys.argv[3]) // 1000000)
for s in (json.loads(l) for l in open(sys.argv[2]) if l.strip()):
    a = at.get(s["wall_ns"] // 1000000)
    if a is not None and b is not None:
        print(s["seq"], s["timestamp"], s["wall_ns"], int((b - a) * 1000))
PY
# the report from the first of them it can begin at exactly (where the ring pruned the snapshots
# right after a tier record, a report from there rests on that record's boundary, earlier than asked,
# and the snapshot at the boundary may be one kepler-push passed over: docs/history.md)
grew=none mg= from_seq=none tried=0
while read -r seq ts _ g && [ $tried -lt 8 ]; do
	tried=$((tried + 1))
	"$build/readers/report/kepler-report" --store.path "$store" --since "$ts" \
		--until "$(jq -r .timestamp <<<"$last_snap")" --by node --format json >"$tmp/co2e-report.json" || continue
	[ "$(jq -r .since_resolution "$tmp/co2e-report.json")" = snapshot ] || {
		echo "a report from snapshot $seq rests on a tier record's boundary before it ($(jq -r .since "$tmp/co2e-report.json"); the ring pruned after the record): trying the next"
		continue
	}
	grew=$g from_seq=$seq
	mg=$(jq '.rows[0].zones[] | select(.name == "package") | .co2e_mg' "$tmp/co2e-report.json")
	break
done <"$tmp/co2e-from.txt"
same() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) == float(sys.argv[2]) else 1)' "$1" "$2"; }
[ -n "$exp" ] && same "${pushed:-x}" "$exp" && [ -n "$mg" ] && [ "$grew" = "$mg" ] &&
	[ "${n:-0}" -gt 20 ] && [ "$down" = 0 ] &&
	jq -e '.data.result[0].values[-1][1] == "412.5"' "$tmp/intensity.json" >/dev/null &&
	ok "CO2e pushed: the last kepler_node_co2e_grams_total{zone=package} $pushed g = the exporter's on snapshot $end; from snapshot $from_seq to it the pushed counter grew $grew mg = kepler-report's $mg mg; $n samples through both outages, none lower than the one before; kepler_carbon_intensity_grams_per_kwh 412.5" ||
	fail "CO2e: pushed '$pushed' exporter '$exp'; growth '$grew' mg, report '$mg' mg; $n samples, $down decreases; intensity $(jq -c '.data.result[0].values[-1]' "$tmp/intensity.json")"

# usage errors
"$push" --store.path "$store" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "no destination" "$tmp/e" && ok "no URL: exit 2, $(grep -o 'error: .*' "$tmp/e")" || fail "no url: $(cat "$tmp/e")"
echo secret >"$tmp/token" && chmod 0644 "$tmp/token"
"$push" --store.path "$store" --push.remote-write.url http://127.0.0.1:1/ --push.bearer-token-file "$tmp/token" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "may be read by others" "$tmp/e" && ok "a token file others may read is refused" || fail "token: $(cat "$tmp/e")"

# Secret files (issue 60): a planted link (to a root-only file whose mode passes the
# others check), a FIFO, a folder, another user's file, an empty one: each refused,
# naming the file, before anything is sent; a receiver that records every request
# gets none. As root the files are root's and push.user (nobody) is the allowed owner.
cport=$(free_port)
python3 - "$cport" "$tmp/captured" <<'PY' &
import http.server, sys
class Cap(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "ab") as f:
            f.write(str(self.headers).encode() + body + b"\n")
        self.send_response(204)
        self.end_headers()
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Cap).serve_forever()
PY
pids+=($!)
eventually 30 curl -sf -o /dev/null "http://127.0.0.1:$cport/"
target=/etc/shadow
[ -r $target ] || target=/etc/passwd
printf 'root-only-first-line\nsecond\n' >"$tmp/root-only" && chmod 0640 "$tmp/root-only"
ln -s "$target" "$tmp/link-shadow"
ln -s "$tmp/root-only" "$tmp/link-file"
mkfifo -m 0600 "$tmp/fifo"
mkdir -m 0700 "$tmp/folder"
: >"$tmp/empty" && chmod 0600 "$tmp/empty"
cases=("link-shadow:symbolic link" "link-file:symbolic link" "fifo:not a regular file" "folder:not a regular file" "empty:is empty")
if [ "$(id -u)" -eq 0 ]; then
	printf 'tok\n' >"$tmp/other-owner" && chmod 0600 "$tmp/other-owner" && chown 4242 "$tmp/other-owner"
	cases+=("other-owner:owned by uid 4242")
fi
for c in "${cases[@]}"; do
	f=$tmp/${c%%:*} why=${c#*:}
	for opt in "--push.bearer-token-file $f" "--push.basic-auth.username u --push.basic-auth.password-file $f" \
		"--push.remote-write.bearer-token-file $f" "--push.tls.cert-file $tmp/root-only --push.tls.key-file $f"; do
		# shellcheck disable=SC2086 # the option and its value as two words
		timeout 60 "$push" --store.path "$store" --push.remote-write.url "http://127.0.0.1:$cport/" $opt \
			--push.state-dir "$tmp/state-secret" >/dev/null 2>"$tmp/e"
		st=$?
		{ [ $st -eq 2 ] && grep -qF "$f" "$tmp/e" && grep -qF "$why" "$tmp/e"; } ||
			fail "${opt%% *} ${c%%:*}: exit $st, $(cat "$tmp/e")"
	done
done
[ -s "$tmp/captured" ] && fail "the receiver got requests with a refused secret: $(head -c 300 "$tmp/captured")" ||
	ok "secret files: ${#cases[@]} kinds (a planted link to $target, a link to a root-only file, a FIFO, a folder, an empty file$([ "$(id -u)" -eq 0 ] && echo ", another user's file")) x 4 options refused, naming the file and why, with exit 2; the receiver got no request ($(grep -o 'error: .*' "$tmp/e" | head -c 150))"
finish push
