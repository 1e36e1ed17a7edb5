#!/usr/bin/env bash
# kepler-carbon against tests/fakes/fake_carbon.py (the Electricity Maps v3,
# UK Carbon Intensity and WattTime v3 APIs answering their documentation's
# examples, then hostile variants) and the shipped static table: the file it
# keeps (values, kinds, times ascending, atomic, 0644), each provider's
# rules (tokens, WattTime's login and its expiry, lb/MWh converted), every
# hostile answer refused with the file unchanged, a provider down for many
# polls (said once, a fallback line, said again when back), and the
# collector's CO2e following a change of the file within two intervals.
# Usage: test_carbon.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/../lib.sh"
carbon=$build/readers/carbon/kepler-carbon
collectd=$build/collectd/kepler-collectd
table=$(cd "$(dirname "$0")/../.." && pwd)/readers/carbon/carbon-intensity-static.csv
out=$tmp/feed/carbon.csv
mkdir -p "$tmp/feed" && chmod 0777 "$tmp/feed" # kepler-carbon started as root writes it as nobody
printf 'emaps-secret\n' >"$tmp/emaps" && printf 'wt-password\n' >"$tmp/wt" && chmod 0600 "$tmp/emaps" "$tmp/wt"
[ "$(id -u)" -eq 0 ] && chown nobody "$tmp/emaps" "$tmp/wt"
state() { printf '{"mode":"%s","value":%s,"time":"%s"%s}\n' "$1" "$2" "$3" "${4:-}" >"$tmp/state.new" && mv "$tmp/state.new" "$tmp/state"; }
state ok 302 2018-04-25T18:07:00.350Z
python3 "$(dirname "$0")/../fakes/fake_carbon.py" "$tmp/port" "$tmp/state" "$tmp/requests.log" 2>"$tmp/fake.log" &
pids+=($!)
eventually 60 test -s "$tmp/port" || fail "the fake did not start: $(cat "$tmp/fake.log")"
base=http://127.0.0.1:$(cat "$tmp/port")
once() { "$carbon" --carbon.intensity-file "$out" --carbon.url "$base" --carbon.timeout 2s --once "$@" 2>"$tmp/e"; }

# Electricity Maps: the last 24 hours at start, then the latest (the docs' example), estimated or not
once --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file "$tmp/emaps"
rc=$?
[ $rc -eq 0 ] && grep -qx '2018-04-25T17:00:00Z,312.000,estimated' "$out" &&
	grep -qx '2018-04-25T18:07:00.350000000Z,302.000,measured' "$out" && [ "$(stat -c %a "$out")" = 644 ] &&
	grep -q 'GET /v3/carbon-intensity/history?zone=DE' "$tmp/requests.log" &&
	ok "Electricity Maps: its history (estimated) and latest (measured) in the file, times ascending, mode 0644: $(grep -v '^#' "$out" | tr '\n' ' ')" ||
	fail "Electricity Maps: rc $rc $(cat "$tmp/e") $(cat "$out" 2>/dev/null)"
cp "$out" "$tmp/good.csv"

# hostile answers: each refused (exit 1, said), the file as it was
for m in 500 garbage truncated string negative huge empty deep big slow close; do
	state "$m" 302 2018-04-25T19:00:00Z
	once --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file "$tmp/emaps"
	rc=$?
	# a failed poll marks the time since the last good value as a fallback: only that line may be new
	if [ $rc -eq 1 ] && diff <(grep -v ',fallback$' "$out") "$tmp/good.csv" >/dev/null && grep -q 'carbon.provider' "$tmp/e"; then
		said+=("$m: $(sed -n 's/.*carbon.provider [a-z-]* ([^)]*): \([^;]*\);.*/\1/p' "$tmp/e" | head -1 | cut -c1-70)")
	else
		fail "hostile answer '$m': rc $rc, $(cat "$tmp/e" | tail -2) $(diff "$out" "$tmp/good.csv")"
	fi
	cp "$tmp/good.csv" "$out"
done
ok "11 hostile answers refused, the file's values kept: $(printf '%s; ' "${said[@]}")"
state ok 302 2018-04-25T18:07:00.350Z
once --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file "$tmp/emaps.wrong" >/dev/null
[ $? -eq 2 ] && grep -q 'emaps.wrong' "$tmp/e" && ok "a token file that is missing: exit 2 before any request: $(head -c 120 "$tmp/e")" ||
	fail "missing token file: $(cat "$tmp/e")"
printf 'not-the-token\n' >"$tmp/bad" && chmod 0600 "$tmp/bad" && { [ "$(id -u)" -ne 0 ] || chown nobody "$tmp/bad"; }
once --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file "$tmp/bad"
[ $? -eq 1 ] && grep -q 'HTTP 401' "$tmp/e" && ok "a token the provider refuses: $(grep -o 'HTTP 401[^;]*' "$tmp/e" | head -1)" || fail "bad token: $(cat "$tmp/e")"
ln -s "$tmp/emaps" "$tmp/link"
once --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file "$tmp/link"
[ $? -eq 2 ] && grep -q 'symbolic link' "$tmp/e" && ok "a token file through a link: refused" || fail "link: $(cat "$tmp/e")"

# the UK grid: national (actual: measured) and a region (forecast only); the API's times have no seconds
rm -f "$out"
state ok 263 2018-01-20T12:00Z
once --carbon.provider uk-grid --carbon.zone national && grep -qx '2018-01-20T12:00:00Z,263.000,measured' "$out" &&
	ok "UK grid, national: the docs' example, actual 263 at 12:00 measured" || fail "UK national: $(cat "$tmp/e") $(cat "$out")"
state ok 190 2018-01-20T12:30Z
once --carbon.provider uk-grid --carbon.zone 3 && grep -qx '2018-01-20T12:30:00Z,190.000,forecast' "$out" &&
	grep -q 'GET /regional/regionid/3' "$tmp/requests.log" && ok "UK grid, region 3: a forecast, after the national line" ||
	fail "UK region: $(cat "$tmp/e") $(cat "$out")"
once --carbon.provider uk-grid --carbon.zone 18
[ $? -eq 1 ] && grep -q 'national or a region id 1 to 17' "$tmp/e" && ok "UK grid, zone 18: refused" || fail "zone 18: $(cat "$tmp/e")"

# WattTime: login, the forecast's first value, lb/MWh converted to g/kWh; a token refused is renewed once
rm -f "$out"
state ok 412.5 2026-04-01T00:00:00+00:00 ',"expire":true'
once --carbon.provider watttime --carbon.zone CAISO_NORTH --carbon.username kepler --carbon.token-file "$tmp/wt"
rc=$?
# 412.5 lb/MWh x 0.45359237 = 187.106852625 g/kWh: 187.107 to the mg
[ $rc -eq 0 ] && grep -qx '2026-04-01T00:00:00Z,187.107,forecast' "$out" && [ "$(grep -c 'GET /login' "$tmp/requests.log")" -eq 2 ] &&
	ok "WattTime: 412.5 lbs_co2_per_mwh = 187.107 g/kWh (forecast); the expired token renewed by a second login" ||
	fail "WattTime: rc $rc $(cat "$tmp/e") $(cat "$out" 2>/dev/null) logins $(grep -c 'GET /login' "$tmp/requests.log")"
state units 412.5 2026-04-01T00:05:00+00:00
once --carbon.provider watttime --carbon.zone CAISO_NORTH --carbon.username kepler --carbon.token-file "$tmp/wt"
[ $? -eq 1 ] && grep -q "meta.units 'kg_per_mwh'" "$tmp/e" && ok "WattTime in units it does not know: refused, not converted" ||
	fail "units: $(cat "$tmp/e")"

# the static table: a cloud region's figure and its source; a key it lacks
rm -f "$out"
"$carbon" --carbon.intensity-file "$out" --carbon.static-table "$table" --carbon.zone gcp:europe-west1 --once 2>"$tmp/e" &&
	grep -q ',212.000,static$' "$out" && grep -q 'cloud.google.com/sustainability/region-carbon' "$tmp/e" &&
	ok "static: gcp:europe-west1 212 g/kWh, its source said" || fail "static: $(cat "$tmp/e")"
"$carbon" --carbon.intensity-file "$out" --carbon.static-table "$table" --carbon.zone gcp:mars-1 --once 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "'gcp:mars-1' is not in carbon.static-table" "$tmp/e" && ok "static: an unknown key refused" || fail "static unknown: $(cat "$tmp/e")"

# the daemon with a collector reading the file: down for many polls (said once, a fallback line), back,
# and the collector's intensity follows each change of the file within two of its intervals
rm -f "$out"
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }
state ok 250 "$(now)"
"$carbon" --carbon.intensity-file "$out" --carbon.url "$base" --carbon.provider uk-grid --carbon.zone national \
	--carbon.poll-interval 1s --carbon.timeout 2s --log.level info >"$tmp/daemon.log" 2>&1 &
dpid=$!
pids+=($dpid)
has() { [ -f "$out" ] && grep -q "$1" "$out"; }
eventually 60 has ',250.000,measured$' || fail "the daemon wrote nothing: $(cat "$tmp/daemon.log")"
own_pids "$collectd" --store.path "$tmp/store" --meter.source fake --informer procfs --monitor.interval 500ms \
	--store.group "" --carbon.intensity-file "$out" --log.level info >"$tmp/c.log" 2>&1 &
cpid=$!
pids+=($cpid)
wait_seq "$tmp/store" 2 || fail "no snapshots: $(tail -3 "$tmp/c.log")"
port=$(free_port)
start_exporter_for "$tmp/store" "$port"
intensity() { curl -s "http://127.0.0.1:$port/metrics" | sed -n 's/^kepler_carbon_intensity_grams_per_kwh{[^}]*} //p'; }
is() { [ "$(intensity)" = "$1" ]; }
eventually 60 is 250.000 || fail "the exporter's intensity is '$(intensity)', not 250"
n0=$(grep -c GET "$tmp/requests.log")
state 500 250 "$(now)"
asked() { [ $(($(grep -c GET "$tmp/requests.log") - n0)) -ge "$1" ]; }
eventually 120 asked 6
state ok 420 "$(now)"
eventually 60 has ',420.000,measured$' || fail "not back: $(tail -3 "$tmp/daemon.log")"
s0=$(store_seq "$tmp/store")
wait_seq "$tmp/store" $((s0 + 2))
[ "$(grep -c 'carbon.provider uk-grid .*HTTP 500' "$tmp/daemon.log")" -eq 1 ] && grep -q 'answers again, after [0-9]* failed polls' "$tmp/daemon.log" &&
	grep -q ',250.000,fallback$' "$out" && is 420.000 &&
	ok "down for $(sed -n 's/.*answers again, after \([0-9]*\) failed polls.*/\1/p' "$tmp/daemon.log") polls: said once, a fallback line kept the last value, said again when back; the collector's intensity 420 two snapshots after the file changed" ||
	fail "outage: $(grep -c 'HTTP 500' "$tmp/daemon.log") lines; $(tail -2 "$tmp/daemon.log"); $(grep -v '^#' "$out" | tr '\n' ' '); exporter $(intensity)"
kill -TERM $dpid
wait $dpid
[ $? -eq 0 ] && grep -q 'stopping on' "$tmp/daemon.log" && ok "SIGTERM: stops, exit 0" || fail "stop: $(tail -2 "$tmp/daemon.log")"
stop_own "$cpid"
finish carbon
