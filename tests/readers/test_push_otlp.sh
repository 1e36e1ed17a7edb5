#!/usr/bin/env bash
# kepler-push to an OTLP/HTTP receiver that decodes every request with
# OpenTelemetry's own protobuf definitions (tests/readers/otlp-receiver:
# the generated code @opentelemetry/otlp-transformer 0.57 ships; no decoder
# of ours). Checked: the node as the resource; joules and seconds as
# cumulative monotonic sums, watts as gauges, the exporter's names and
# labels as attributes; each point at its snapshot's time with the store's
# value, one per snapshot across a receiver answering 503, a 429 with
# Retry-After, the receiver stopped, and kepler-push stopped; a 400 drops
# its batch and the next goes on; a partial success is said; OTLP goes on
# while a remote-write receiver beside it is down; headers, a bearer token
# and basic auth arrive, and each destination's own credentials and headers
# reach it alone; bodies gzipped (push.otlp.compression none: not);
# TLS with a client certificate; started as root it
# runs as push.user with no capability.
# Usage: test_push_otlp.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/../lib.sh"
rx=$(cd "$(dirname "$0")" && pwd)/otlp-receiver
collectd=$build/collectd/kepler-collectd
push=$build/readers/push/kepler-push
stdout=$build/readers/stdout/kepler-stdout
store=$tmp/store
command -v node >/dev/null || skip "node missing (tools/setup.sh installs nodejs and npm)"
if [ ! -f "$rx/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js" ]; then
	command -v npm >/dev/null || skip "npm missing (tools/setup.sh installs it)"
	# the versions package-lock.json pins, exactly
	(cd "$rx" && timeout 300 npm ci --no-audit --no-fund --loglevel=error >"$tmp/npm.log" 2>&1) ||
		skip "npm could not install @opentelemetry/otlp-transformer: $(tail -2 "$tmp/npm.log")"
fi

# started as root, kepler-push becomes push.user (nobody) with the store's group: a store of group
# nogroup. The collector sees only its own PID namespace: what is pushed is the test's, not the host's
own_pids "$collectd" --store.path "$store" --meter.source fake --informer procfs --monitor.interval 500ms --store.group nogroup \
	--store.retention.snapshots 400 --store.tiers 2s:1h --carbon.intensity 412.5 --log.level warn >"$tmp/c.log" 2>&1 &
pids+=($!)
wait_seq "$store" 2 || fail "no snapshots: $(tail -3 "$tmp/c.log")"
rport=$(free_port)
echo ok >"$tmp/mode"
start_receiver() { # [ENV...]
	rm -f "$tmp/port"
	env PORT=$rport "$@" node "$rx/receiver.js" "$tmp/port" "$tmp/got.jsonl" "$tmp/mode" >>"$tmp/receiver.log" 2>&1 &
	receiver=$!
	pids+=($receiver)
	eventually 60 test -s "$tmp/port"
}
echo "secret-token" >"$tmp/token" && chmod 0600 "$tmp/token"
start_push() {
	"$push" --store.path "$store" --push.otlp.url "http://127.0.0.1:$rport/v1/metrics" \
		--push.remote-write.url "http://127.0.0.1:1/api/v1/write" --push.headers X-Scope-OrgID:team-a \
		--push.bearer-token-file "$tmp/token" --push.state-dir "$tmp/state" --push.batch 8 --log.level info \
		>>"$tmp/push.log" 2>&1 &
	pusher=$!
	pids+=($pusher)
}
acked() { cat "$tmp/state/otlp.state" 2>/dev/null || echo 0; }
caught_up() { [ "$(acked)" -ge "$1" ] 2>/dev/null; }
logged() { grep -c -- "$1" "$tmp/push.log"; }
logged_more() { [ "$(logged "$1")" -gt "$2" ]; }

start_receiver || fail "the receiver did not start: $(tail -3 "$tmp/receiver.log")"
start_push
eventually 120 caught_up $(($(store_seq "$store") + 2)) || fail "nothing acknowledged: $(tail -3 "$tmp/push.log")"
first=$(($(acked)))
ok "kepler-push sends OTLP: snapshot $first acknowledged"

# privileges: every thread nobody, no capability, no_new_privs
if [ "$(id -u)" -eq 0 ]; then
	creds=$(for t in /proc/$pusher/task/*; do grep -E '^(Uid|CapEff|CapPrm|NoNewPrivs):' "$t/status" | tr -s '\t\n' '  '; echo; done | sort -u)
	[ "$(wc -l <<<"$creds")" = 1 ] && grep -q 'Uid: 65534 65534 65534 65534 ' <<<"$creds" &&
		grep -q 'CapEff: 0000000000000000 ' <<<"$creds" && grep -q 'NoNewPrivs: 1' <<<"$creds" &&
		grep -q "now user nobody" "$tmp/push.log" &&
		ok "started as root: every thread is nobody, no capability, no_new_privs" || fail "privileges: $creds"
fi
# the remote-write receiver beside it is down the whole time: OTLP goes on regardless
grep -q "cannot send to remote-write" "$tmp/push.log" &&
	ok "a remote-write receiver down beside it holds back nothing sent by OTLP" || fail "remote-write: $(grep remote-write "$tmp/push.log" | head -2)"

# 503 for 6 snapshots, then 429 with Retry-After for 4, then the receiver stopped for 6: each an outage, then caught up
for phase in 503:6 429:4; do
	n=$(logged "cannot send to otlp")
	echo "${phase%%:*}" >"$tmp/mode"
	wait_seq "$store" $(($(store_seq "$store") + ${phase##*:}))
	eventually 60 logged_more "cannot send to otlp" "$n" || fail "answer ${phase%%:*}: no outage logged"
	echo ok >"$tmp/mode"
	eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after ${phase%%:*}"
done
kill "$receiver"
wait "$receiver" 2>/dev/null
wait_seq "$store" $(($(store_seq "$store") + 6))
start_receiver || fail "the receiver did not come back"
eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after the receiver's outage"
n=$(logged "cannot send to otlp")
a=$(logged "otlp takes samples again after")
[ "$n" -eq 3 ] && [ "$a" -eq 3 ] && ok "three outages (503, 429, the receiver gone): three lines when they began, three when they ended" ||
	fail "outages logged $n times, ends $a times: $(grep otlp "$tmp/push.log" | tail -4)"
# kepler-push itself down; its state brings it back where it was
kill "$pusher"
wait "$pusher" 2>/dev/null
wait_seq "$store" $(($(store_seq "$store") + 6))
start_push
eventually 120 caught_up "$(store_seq "$store")" || fail "not caught up after kepler-push's restart"
last=$(acked)
"$stdout" --store.path "$store" --format json --all --level node >"$tmp/all.jsonl" 2>/dev/null

# every request decoded by OpenTelemetry's definitions; one point per snapshot, at its time, with the store's value
python3 - "$tmp/got.jsonl" "$tmp/all.jsonl" "$first" "$last" >"$tmp/check.out" 2>&1 <<'PY'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
errors = [r["error"] for r in reqs if "error" in r]
assert not errors, errors[:2]
snaps = {json.loads(l)["seq"]: json.loads(l) for l in open(sys.argv[2]) if l.strip()}
first, last = int(sys.argv[3]), int(sys.argv[4])
kinds, points, heads, co2e = {}, {}, set(), {}
for r in reqs:
    rm = r["request"]["resourceMetrics"]
    assert len(rm) == 1, len(rm)
    res = {a["key"]: a["value"]["stringValue"] for a in rm[0]["resource"]["attributes"]}
    assert res["service.name"] == "kepler-c" and res["host.name"], res
    heads.add((r["headers"].get("x-scope-orgid"), r["headers"].get("authorization"), r["headers"].get("content-encoding")))
    for m in rm[0]["scopeMetrics"][0]["metrics"]:
        kind = m["data"] + ("/" + m["sum"]["aggregationTemporality"] + "/" + str(m["sum"]["isMonotonic"]) if m["data"] == "sum" else "")
        kinds[m["name"]] = (kind, m["unit"])
        if m["name"] == "kepler_node_co2e_grams_total":
            for p in m["sum"]["dataPoints"]:
                attrs = {a["key"]: a["value"]["stringValue"] for a in p["attributes"]}
                if attrs["zone"] == "package":
                    co2e.setdefault(int(p["timeUnixNano"]), set()).add(p["asDouble"])
        if m["name"] != "kepler_node_cpu_joules_total":
            continue
        for p in m["sum"]["dataPoints"]:
            attrs = {a["key"]: a["value"]["stringValue"] for a in p["attributes"]}
            if attrs["zone"] == "package":
                points.setdefault(int(p["timeUnixNano"]), set()).add(p["asDouble"])
assert kinds["kepler_node_cpu_joules_total"] == ("sum/AGGREGATION_TEMPORALITY_CUMULATIVE/True", "J"), kinds["kepler_node_cpu_joules_total"]
assert kinds["kepler_node_cpu_watts"] == ("gauge", "W"), kinds["kepler_node_cpu_watts"]
assert kinds["kepler_process_cpu_seconds_total"][0].startswith("sum/"), kinds["kepler_process_cpu_seconds_total"]
assert kinds["kepler_push_sent_snapshots_total"][0].startswith("sum/"), kinds["kepler_push_sent_snapshots_total"]
assert heads == {("team-a", "Bearer secret-token", "gzip")}, heads
# CO2e: a cumulative monotonic sum in g, one point a snapshot, never lower than the one before;
# its value at each snapshot is its energy's (µJ x 412.5 g/kWh / 3.6e12, to the µg below)
assert kinds["kepler_node_co2e_grams_total"] == ("sum/AGGREGATION_TEMPORALITY_CUMULATIVE/True", "g"), kinds["kepler_node_co2e_grams_total"]
assert kinds["kepler_carbon_intensity_grams_per_kwh"] == ("gauge", "g/kW.h"), kinds["kepler_carbon_intensity_grams_per_kwh"]
co2e_t = sorted(co2e)
assert all(len(co2e[t]) == 1 for t in co2e_t), "two CO2e values at one time"
vals = [next(iter(co2e[t])) for t in co2e_t]
assert len(vals) > 20 and all(b >= a for a, b in zip(vals, vals[1:])), vals[:5]
want = {}
for seq in range(first, last + 1):
    z = next(z for z in snaps[seq]["node"]["zones"] if z["name"] == "package")
    want[snaps[seq]["wall_ns"]] = z["energy_uj"] / 1e6
inwin = {t: v for t, v in points.items() if min(want) <= t <= max(want)}
# the energy counted into CO2e since the first snapshot's: the CO2e's growth is that × 412.5 g/kWh
t0, t1 = min(want), max(want)
if t0 in co2e and t1 in co2e:
    de = (want[t1] - want[t0]) * 1e6  # µJ
    dg = next(iter(co2e[t1])) - next(iter(co2e[t0]))
    assert abs(dg - de * 412.5 / 3.6e12) < 2e-6, (dg, de * 412.5 / 3.6e12)
else:
    print("no CO2e point at the first or the last snapshot"); sys.exit(1)
missing = sorted(set(want) - set(inwin))
extra = sorted(set(inwin) - set(want))
twice = [t for t, v in inwin.items() if len(v) > 1]
off = [t for t in want if t in inwin and any(abs(x - want[t]) > 1e-6 * max(1, want[t]) for x in inwin[t])]
print(f"{len(reqs)} requests decoded, {len(kinds)} metrics; CO2e {dg:.6f} g over the window = its energy x 412.5 g/kWh; snapshots {first} to {last}: {len(want)} sent, "
      f"{len(inwin)} points received; missing {len(missing)}, extra {len(extra)}, two values {len(twice)}, values off {len(off)}")
sys.exit(0 if not missing and not extra and not twice and not off else 1)
PY
[ $? -eq 0 ] && ok "$(cat "$tmp/check.out")" || fail "the receiver's points: $(tail -5 "$tmp/check.out")"

# a 400 drops its batch (said) and the next goes on; a partial success is said
n=$(logged "otlp refused snapshots")
echo 400 >"$tmp/mode"
eventually 60 logged_more "otlp refused snapshots" "$n" && ok "a 400: $(grep -o 'otlp refused snapshots [^(]*([^)]*): dropped' "$tmp/push.log" | head -1)" ||
	fail "no drop logged: $(tail -2 "$tmp/push.log")"
# a receiver refusing every batch is said once (and when its reason changes), not per batch
s0=$(store_seq "$store")
eventually 60 test "$(store_seq "$store")" -ge $((s0 + 3))
[ "$(logged "otlp refused snapshots")" -eq $((n + 1)) ] &&
	ok "a receiver refusing every batch: said once while $(($(store_seq "$store") - s0)) more snapshots came" ||
	fail "refusals said $(($(logged "otlp refused snapshots") - n)) times: $(grep 'otlp refused' "$tmp/push.log" | tail -3)"
echo partial >"$tmp/mode"
eventually 60 logged_more "rejected 3 data points" 0 &&
	ok "a partial success: $(grep -o 'rejected 3 data points: .*' "$tmp/push.log" | head -1)" || fail "no partial success logged"
echo ok >"$tmp/mode"
eventually 60 caught_up "$(store_seq "$store")" || fail "not going on after a 400"
grep -q "otlp takes samples again, from snapshot [0-9]* (it had refused [1-9][0-9]* snapshots)" "$tmp/push.log" &&
	ok "the end of the refusals said, with their count: $(grep -o 'it had refused [0-9]* snapshots' "$tmp/push.log" | tail -1)" ||
	fail "the end of the refusals was not said: $(tail -3 "$tmp/push.log")"
kill "$pusher"
wait "$pusher" 2>/dev/null

# basic auth (and no compression), from a state directory a run as root left root's: given to push.user
printf 'pw-1\nsecond line, never sent\n' >"$tmp/password" && chmod 0600 "$tmp/password"
: >"$tmp/got.jsonl"
mkdir -m 0700 "$tmp/state-basic" && store_seq "$store" >"$tmp/state-basic/otlp.state"
"$push" --store.path "$store" --push.otlp.url "http://127.0.0.1:$rport/v1/metrics" --push.basic-auth.username kepler \
	--push.otlp.compression none \
	--push.basic-auth.password-file "$tmp/password" --push.state-dir "$tmp/state-basic" >>"$tmp/basic.log" 2>&1 &
p2=$!
pids+=($p2)
eventually 60 test -s "$tmp/got.jsonl"
kill "$p2"
wait "$p2" 2>/dev/null
grep -q "\"authorization\":\"Basic $(printf 'kepler:pw-1' | base64)\"" "$tmp/got.jsonl" &&
	ok "basic auth: the password file's first line, with the username" || fail "basic auth: $(head -c 300 "$tmp/got.jsonl")"
grep -q '"content-encoding"' "$tmp/got.jsonl" && fail "push.otlp.compression none still compressed" ||
	ok "push.otlp.compression none: bodies sent as they are"
if [ "$(id -u)" -eq 0 ]; then
	grep -q "resuming after the snapshot last acknowledged" "$tmp/basic.log" &&
		[ "$(stat -c %U "$tmp/state-basic" "$tmp/state-basic/otlp.state" | sort -u)" = nobody ] &&
		ok "a state directory left root's: given to push.user, and resumed from" ||
		fail "root's state directory: $(stat -c '%U %n' "$tmp/state-basic" "$tmp/state-basic/otlp.state"); $(tail -2 "$tmp/basic.log")"
fi
# each destination its own credentials and headers: neither gets the other's (a remote-write
# receiver that records what it is sent beside the OTLP one)
printf 'rw-pw\n' >"$tmp/rw-password" && printf 'otlp-token\n' >"$tmp/otlp-token" && chmod 0600 "$tmp/rw-password" "$tmp/otlp-token"
wport=$(free_port)
python3 - "$wport" "$tmp/rw-got.jsonl" <<'PY' &
import http.server, json, sys
class Rec(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({k.lower(): v for k, v in self.headers.items()}) + "\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Rec).serve_forever()
PY
pids+=($!)
: >"$tmp/got.jsonl"
mkdir -p "$tmp/state-own" && store_seq "$store" >"$tmp/state-own/otlp.state" && store_seq "$store" >"$tmp/state-own/remote-write.state"
[ "$(id -u)" -ne 0 ] || chown -R nobody "$tmp/state-own"
"$push" --store.path "$store" --push.state-dir "$tmp/state-own" --push.headers X-Common:both \
	--push.bearer-token-file "$tmp/token" \
	--push.remote-write.url "http://127.0.0.1:$wport/api/v1/write" --push.remote-write.headers X-Scope-OrgID:team-b \
	--push.remote-write.basic-auth.username mimir --push.remote-write.basic-auth.password-file "$tmp/rw-password" \
	--push.otlp.url "http://127.0.0.1:$rport/v1/metrics" --push.otlp.bearer-token-file "$tmp/otlp-token" \
	>"$tmp/own.log" 2>&1 &
p4=$!
pids+=($p4)
eventually 60 test -s "$tmp/got.jsonl" && eventually 60 test -s "$tmp/rw-got.jsonl"
kill "$p4"
wait "$p4" 2>/dev/null
python3 - "$tmp/got.jsonl" "$tmp/rw-got.jsonl" "$(printf 'mimir:rw-pw' | base64)" >"$tmp/own.out" 2>&1 <<'PY'
import json, sys
otlp = {(h.get("authorization"), h.get("x-scope-orgid"), h.get("x-common")) for h in (json.loads(l)["headers"] for l in open(sys.argv[1]))}
rw = {(h.get("authorization"), h.get("x-scope-orgid"), h.get("x-common")) for h in (json.loads(l) for l in open(sys.argv[2]))}
print(f"OTLP got {sorted(otlp)}; remote-write got {sorted(rw)}")
assert otlp == {("Bearer otlp-token", None, "both")}, otlp
assert rw == {("Basic " + sys.argv[3], "team-b", "both")}, rw
PY
[ $? -eq 0 ] && ok "each destination its own credentials and headers: $(cat "$tmp/own.out")" ||
	fail "per-destination credentials: $(tail -3 "$tmp/own.out"); $(tail -2 "$tmp/own.log")"
chmod 0644 "$tmp/password"
"$push" --store.path "$store" --push.otlp.url http://127.0.0.1:1/ --push.basic-auth.username kepler \
	--push.basic-auth.password-file "$tmp/password" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "may be read by others" "$tmp/e" && ok "a password file others may read is refused" || fail "password: $(cat "$tmp/e")"

# TLS: the receiver asks for a client certificate signed by the test CA
if command -v openssl >/dev/null && test_certs server 127.0.0.1 && test_certs client kepler-push-test; then
	kill "$receiver"
	wait "$receiver" 2>/dev/null
	chmod 0600 "$tmp/client.key"
	start_receiver TLS_KEY="$tmp/server.key" TLS_CERT="$tmp/server.crt" TLS_CA="$tmp/ca.crt" ||
		fail "the TLS receiver did not start: $(tail -3 "$tmp/receiver.log")"
	: >"$tmp/got.jsonl"
	tls=(--store.path "$store" --push.otlp.url "https://127.0.0.1:$rport/v1/metrics" --push.tls.ca-file "$tmp/ca.crt")
	"$push" "${tls[@]}" --push.tls.cert-file "$tmp/client.crt" --push.tls.key-file "$tmp/client.key" \
		--push.state-dir "$tmp/state-tls" >"$tmp/tls.log" 2>&1 &
	p3=$!
	pids+=($p3)
	eventually 60 test -s "$tmp/got.jsonl"
	kill "$p3"
	wait "$p3" 2>/dev/null
	grep -q '"client":"kepler-push-test"' "$tmp/got.jsonl" &&
		ok "TLS: the receiver's certificate checked against push.tls.ca-file, the client certificate presented (read before dropping root)" ||
		fail "TLS: $(tail -3 "$tmp/tls.log")"
	"$push" "${tls[@]}" --push.state-dir "$tmp/state-notls" >"$tmp/notls.log" 2>&1 &
	p4=$!
	pids+=($p4)
	eventually 60 grep -q "cannot send to otlp" "$tmp/notls.log"
	kill "$p4"
	wait "$p4" 2>/dev/null
	grep -q "cannot send to otlp" "$tmp/notls.log" &&
		ok "TLS without the client certificate: refused by the receiver, retried ($(grep -o 'cannot send to otlp ([^)]*): [^;]*' "$tmp/notls.log"))" ||
		fail "no client certificate: $(tail -2 "$tmp/notls.log")"
else
	echo "SKIP part: openssl could not make the test certificates: TLS not checked"
fi
finish push_otlp
