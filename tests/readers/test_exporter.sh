#!/usr/bin/env bash
# kepler-exporter over real HTTP on loopback: exposition checked by promtool
# on a store full of hostile names, gzip, /healthz (no store, fresh, stale),
# methods and paths, TLS and basic auth from a web config file, bad web
# configs, an address in use, idle connections, an unprivileged run.
# Usage: test_exporter.sh BUILD_DIR
set -uo pipefail
build=$1
exporter=$build/readers/exporter/kepler-exporter
collectd=$build/collectd/kepler-collectd
probe=$build/tests/store_probe
for tool in promtool curl openssl htpasswd; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"

# start_exporter NAME ARGS...: sets $port and $epid once it listens
start_exporter() {
	local name=$1 log=$tmp/$1.log
	shift
	"$exporter" --web.listen-address 127.0.0.1:0 "$@" >"$log" 2>&1 &
	epid=$!
	pids+=($epid)
	for _ in $(seq 100); do
		port=$(sed -n 's|.*started: https\{0,1\}://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$log")
		[ -n "$port" ] && return 0
		kill -0 $epid 2>/dev/null || break
		sleep 0.1
	done
	fail "$name did not start: $(cat "$log")"
	port=0
	return 1
}

# --- no store yet: metrics has build info only, healthz 503 with the reason
start_exporter nostore --store.path "$tmp/later"
code=$(curl -s -o "$tmp/h" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 503 ] && grep -q "no store" "$tmp/h" && ok "no store: /healthz 503: $(cat "$tmp/h")" ||
	fail "no store: /healthz $code: $(cat "$tmp/h")"
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/m0"
grep -q '^kepler_build_info{' "$tmp/m0" && promtool check metrics <"$tmp/m0" &&
	ok "no store: /metrics has build info and passes promtool" || fail "no store: /metrics: $(cat "$tmp/m0")"
# the store appears: the exporter attaches by itself
"$probe" write "$tmp/later" 2 nogroup >/dev/null 2>&1
for _ in $(seq 50); do
	grep -q '^kepler_snapshot_seq{node_name="[^"]*"} 2$' <(curl -s "http://127.0.0.1:$port/metrics") && break
	sleep 0.1
done
grep -q '^kepler_snapshot_seq{node_name="[^"]*"} 2$' <(curl -s "http://127.0.0.1:$port/metrics") &&
	ok "attached to the store once it appeared" || fail "never served the new store"
kill $epid; wait $epid 2>/dev/null
[ $? -eq 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit status not 0"

# --- kepler_node_cpu_info comes from the store, as the collector read it:
# the collector's --host.procfs holds a cpuinfo with CPUs this machine does
# not have; the exporter, which has no such option, exports exactly those
"$exporter" --host.procfs /proc >"$tmp/opt.log" 2>&1
[ $? = 2 ] && grep -q -- '--host.procfs is not an option of kepler-exporter' "$tmp/opt.log" &&
	ok "the exporter has no --host.procfs (exit 2)" || fail "--host.procfs accepted: $(cat "$tmp/opt.log")"
mkdir -p "$tmp/fakeproc"
ln -s /proc/stat /proc/sys "$tmp/fakeproc/"
for i in 0 1 2 3 4; do
	printf 'processor\t: %s\nvendor_id\t: KeplerFake\nmodel name\t: Fake "CPU" 9000\nphysical id\t: 7\ncore id\t\t: %s\n\n' $((i + 40)) $i
done >"$tmp/fakeproc/cpuinfo"
"$collectd" --store.path "$tmp/cpus" --host.procfs "$tmp/fakeproc" --informer procfs --meter.source fake \
	--monitor.interval 200ms --store.group "" --log.level warn >"$tmp/cpus-collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
start_exporter cpus --store.path "$tmp/cpus"
for _ in $(seq 50); do
	curl -s "http://127.0.0.1:$port/metrics" | grep '^kepler_node_cpu_info{' >"$tmp/cpus.got"
	[ -s "$tmp/cpus.got" ] && break
	sleep 0.1
done
for i in 0 1 2 3 4; do
	echo "kepler_node_cpu_info{core_id=\"$i\",model_name=\"Fake \\\"CPU\\\" 9000\",physical_id=\"7\",processor=\"$((i + 40))\",vendor_id=\"KeplerFake\"} 1"
done >"$tmp/cpus.want"
diff "$tmp/cpus.want" "$tmp/cpus.got" >"$tmp/cpus.diff" &&
	ok "kepler_node_cpu_info: exactly the collector's 5 fake CPUs (processor 40-44)" ||
	fail "kepler_node_cpu_info from the store: $(cat "$tmp/cpus.diff" "$tmp/cpus-collectd.log")"
kill "$epid" "$cpid"; wait "$epid" "$cpid" 2>/dev/null

# --- hostile names: promtool, escaping, gzip, methods, paths
"$probe" write "$tmp/hostile" 3 nogroup 200 >/dev/null 2>&1 || fail "store_probe write"
start_exporter hostile --store.path "$tmp/hostile"
for _ in $(seq 50); do
	curl -s "http://127.0.0.1:$port/metrics" >"$tmp/m1"
	grep -q '^kepler_process_cpu_joules_total' "$tmp/m1" && break
	sleep 0.1
done
if promtool check metrics <"$tmp/m1" >"$tmp/promtool.out" 2>&1; then
	ok "promtool check metrics passes on $(grep -c '^kepler_' "$tmp/m1") hostile series"
else
	fail "promtool: $(head -5 "$tmp/promtool.out")"
fi
# self-metrics: the exporter's own process_* (as the client libraries name them) and the collector's cost
rss=$(sed -n 's/^process_resident_memory_bytes \([0-9]*\)$/\1/p' "$tmp/m1")
fds=$(sed -n 's/^process_open_fds \([0-9]*\)$/\1/p' "$tmp/m1")
epid=$(pgrep -n -f "kepler-exporter.*$tmp/hostile")
if [ "${rss:-0}" -gt 1000000 ] && [ "${fds:-0}" -ge 3 ] && grep -q '^process_start_time_seconds [0-9]' "$tmp/m1" &&
	grep -q '^kepler_collector_cpu_seconds_total{node_name=".*"} 0.00[0-9]' "$tmp/m1" &&
	grep -q '^kepler_collector_resident_memory_bytes{node_name=".*"} 8388608$' "$tmp/m1"; then
	ok "self-metrics: process_resident_memory_bytes $rss (VmRSS $(awk '/VmRSS/ {print $2 * 1024}' "/proc/$epid/status" 2>/dev/null)), process_open_fds $fds, the collector's cost from the snapshot"
else
	fail "self-metrics: $(grep '^process_\|^kepler_collector_' "$tmp/m1")"
fi
n=$(grep -c '^kepler_node_cpu_info{' "$tmp/m1")
[ "$n" = 3 ] && ! grep '^kepler_node_cpu_info{' "$tmp/m1" | grep -q node_name &&
	grep -qF 'kepler_node_cpu_info{core_id="2",model_name="Probe \"quoted\" \\ CPU 9000",physical_id="7",processor="2",vendor_id="Probe\"Vendor"} 1' "$tmp/m1" &&
	ok "kepler_node_cpu_info: the 3 CPUs store_probe recorded, labels escaped, no node_name" ||
	fail "cpu_info: $n series: $(grep '^kepler_node_cpu_info{' "$tmp/m1")"
grep -q 'comm="with \\"quotes\\"-11"' "$tmp/m1" && grep -q 'comm="new\\nline-2"' "$tmp/m1" &&
	grep -q 'comm="back\\\\slash-3"' "$tmp/m1" && grep -q $'comm="bad utf8 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd-4"' "$tmp/m1" &&
	ok "quotes, newlines, backslashes escaped; invalid UTF-8 replaced" || fail "escaping"
dups=$(grep -v '^#' "$tmp/m1" | sed 's/} .*/}/' | sort | uniq -d | head -3)
[ -z "$dups" ] && ok "no duplicate series" || fail "duplicate series: $dups"
[ "$(grep -c '^# TYPE kepler_process_cpu_joules_total ' "$tmp/m1")" = 1 ] && ok "TYPE once per family" || fail "TYPE repeated"
curl -s -H 'Accept-Encoding: gzip' -D "$tmp/hdr" "http://127.0.0.1:$port/metrics" -o "$tmp/m1.gz"
grep -qi '^Content-Encoding: gzip' "$tmp/hdr" && gunzip -t <"$tmp/m1.gz" && gunzip <"$tmp/m1.gz" >"$tmp/m1.gunzipped" &&
	diff <(grep -v '^kepler_snapshot_age_seconds\|^process_' "$tmp/m1.gunzipped") <(grep -v '^kepler_snapshot_age_seconds\|^process_' "$tmp/m1") >/dev/null &&
	[ "$(sed -n 3p "$tmp/m1.gunzipped" | cut -d' ' -f1)" = 'kepler_snapshot_age_seconds{node_name=""}' ] &&
	ok "gzip: same body as plain ($(stat -c %s "$tmp/m1.gz") vs $(stat -c %s "$tmp/m1") bytes), after this scrape's age and process_*" ||
	fail "gzip response"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$tmp/hdr" && ok "content type 0.0.4" || fail "content type"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/metrics")" = 405 ] && ok "POST: 405" || fail "POST not 405"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")" = 404 ] && ok "unknown path: 404" || fail "no 404"
[ "$(curl -s -o /dev/null -w '%{http_code}' -I "http://127.0.0.1:$port/metrics")" = 200 ] && ok "HEAD: 200" || fail "HEAD"
curl -s "http://127.0.0.1:$port/" | grep -q 'href="metrics"' && ok "landing page links /metrics" || fail "landing page"
# level and zone selection
kill $epid; wait $epid 2>/dev/null
start_exporter levels --store.path "$tmp/hostile" --metrics.level node,pod --metrics.zones dram
sleep 0.5
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/m2"
! grep -q '^kepler_process_' "$tmp/m2" && grep -q '^kepler_pod_cpu_watts{' "$tmp/m2" &&
	! grep -q 'zone="package"' "$tmp/m2" && grep -q 'zone="dram"' "$tmp/m2" &&
	ok "--metrics.level node,pod --metrics.zones dram" || fail "levels/zones selection"
kill $epid; wait $epid 2>/dev/null

# --- idle connections do not stop others being served
start_exporter idle --store.path "$tmp/hostile"
for i in $(seq 20); do exec {fd}<>/dev/tcp/127.0.0.1/$port; idle+=($fd); done
t0=$(date +%s%N)
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$code" = 200 ] && ok "served in ${ms} ms beside 20 idle connections" || fail "blocked by idle connections ($code)"
for fd in "${idle[@]}"; do exec {fd}>&-; done
# an address in use
"$exporter" --store.path "$tmp/hostile" --web.listen-address 127.0.0.1:$port >"$tmp/inuse.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "cannot listen on 127.0.0.1:$port: Address already in use" "$tmp/inuse.log" &&
	ok "address in use: exit 1: $(grep -o 'cannot listen.*' "$tmp/inuse.log")" || fail "address in use ($rc): $(cat "$tmp/inuse.log")"
kill $epid; wait $epid 2>/dev/null
# a malformed listen address is a usage error: exit 2, before anything starts
for bad in 127.0.0.1 :99999 :4294976396 '[::1]28282' 'host:port'; do # (4294976396 wrapped to 9100 with atoi)
	"$exporter" --store.path "$tmp/hostile" --web.listen-address "$bad" >"$tmp/badaddr.log" 2>&1
	rc=$?
	[ $rc -eq 2 ] && grep -qF "invalid listen address '$bad'" "$tmp/badaddr.log" && ok "listen address '$bad': exit 2" ||
		fail "listen address '$bad' ($rc): $(cat "$tmp/badaddr.log")"
done
# the default, every address: the start-up line has a URL one can open
start_exporter anyaddr --store.path "$tmp/hostile" --web.listen-address :0
grep -Eq "started: http://localhost:[0-9]+/metrics \(every address of this host\)" "$tmp/anyaddr.log" &&
	ok "listening on every address: $(grep -o 'started: [^;]*' "$tmp/anyaddr.log")" || fail "start-up line: $(cat "$tmp/anyaddr.log")"
kill $epid; wait $epid 2>/dev/null

# --- /healthz with a real collector: fresh, then stale after it stops
"$collectd" --store.path "$tmp/live" --meter.source fake --monitor.interval 500ms --store.group "" \
	--log.level warn >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
start_exporter health --store.path "$tmp/live"
for _ in $(seq 50); do
	code=$(curl -s -o "$tmp/h" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
	[ "$code" = 200 ] && break
	sleep 0.1
done
[ "$code" = 200 ] && ok "collector running: /healthz 200: $(cat "$tmp/h")" || fail "healthz with collector: $code $(cat "$tmp/h")"
kill -TERM $cpid; wait $cpid 2>/dev/null
sleep 2
code=$(curl -s -o "$tmp/h" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 503 ] && grep -q stale "$tmp/h" && ok "collector stopped: /healthz 503: $(cat "$tmp/h")" ||
	fail "healthz after stop: $code $(cat "$tmp/h")"
# the snapshot /healthz names is the one whose age it gives: the newest, though no scrape rendered it
newest=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/live" --format json 2>/dev/null | tail -1 | jq -r .seq)
named=$(grep -o 'seq [0-9]*' "$tmp/h" | cut -d' ' -f2)
[ -n "$newest" ] && [ "$named" = "$newest" ] && ok "/healthz names the newest snapshot ($named), whose age it gives" ||
	fail "/healthz names snapshot '$named', the store's newest is '$newest'"
kill $epid; wait $epid 2>/dev/null

# --- TLS and basic auth
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$tmp/key.pem" \
	-out "$tmp/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a certificate"
hash=$(htpasswd -nbBC 10 alice 's3cret!' | cut -d: -f2)
cat >"$tmp/web.yml" <<YML
tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
basic_auth_users:
  alice: '$hash'
YML
chmod 0600 "$tmp/web.yml" # it names the users and the key: a secret file (docs/security.md)
start_exporter tls --store.path "$tmp/hostile" --web.config-file "$tmp/web.yml"
grep -q "started: https://" "$tmp/tls.log" && ok "started with TLS and basic auth" || fail "TLS start: $(cat "$tmp/tls.log")"
url=https://127.0.0.1:$port/metrics
[ "$(curl -sk -o "$tmp/m3" -w '%{http_code}' -u 'alice:s3cret!' "$url")" = 200 ] && grep -q '^kepler_build_info' "$tmp/m3" &&
	ok "https with the right password: 200 and metrics" || fail "https + right password"
[ "$(curl -sk -o /dev/null -w '%{http_code}' "$url")" = 401 ] && ok "https without password: 401" || fail "no password not 401"
[ "$(curl -sk -o /dev/null -w '%{http_code}' -u 'alice:wrong' "$url")" = 401 ] && ok "https with a wrong password: 401" || fail "wrong password not 401"
sleep 0.3 # the address's back-off after one failure: 100 ms
[ "$(curl -sk -o /dev/null -w '%{http_code}' -u 'mallory:s3cret!' "$url")" = 401 ] && ok "https with an unknown user: 401" || fail "unknown user not 401"
# again at once: the address waits (200 ms now, doubling with each failure) and is told so,
# without bcrypt; a known login passes. On a busy machine a TLS handshake can outlast the first
# waits: wrong passwords are sent until one is answered 429 (the wait doubles: a few suffice).
for i in 2 3 4 5 6 7 8; do
	code=$(curl -sk -o /dev/null -D "$tmp/h429" -w '%{http_code}' -u "alice:wrong$i" "$url")
	[ "$code" = 429 ] && break
done
known=$(curl -sk -o /dev/null -w '%{http_code}' -u 'alice:s3cret!' "$url")
[ "$code" = 429 ] && grep -qi '^Retry-After: [0-9]' "$tmp/h429" && [ "$known" = 200 ] &&
	ok "a wrong password right after another: 429 with Retry-After; the known login still 200" ||
	fail "back-off: $code, known login $known"
grep -q "failed login for user 'alice'" "$tmp/tls.log" && ok "failed logins logged" || fail "no failed-login log line"
curl -s -m 5 -o /dev/null "http://127.0.0.1:$port/metrics"
rc=$?
[ $rc -ne 0 ] && kill -0 $epid 2>/dev/null && [ "$(curl -sk -o /dev/null -w '%{http_code}' -u 'alice:s3cret!' "$url")" = 200 ] &&
	ok "plain http to the TLS port fails (curl exit $rc); the exporter goes on serving https" || fail "plain http to TLS port"
# TLS 1.2 at least by default (the client allowed to offer 1.1: SECLEVEL=0)
echo | openssl s_client -connect "127.0.0.1:$port" -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' >"$tmp/s11" 2>&1
rc11=$?
echo | openssl s_client -connect "127.0.0.1:$port" -tls1_2 >"$tmp/s12" 2>&1
rc12=$?
[ $rc11 -ne 0 ] && [ $rc12 -eq 0 ] && ok "TLS 1.1 refused, TLS 1.2 accepted (min_version TLS12 by default)" ||
	fail "TLS versions: 1.1 status $rc11, 1.2 status $rc12: $(grep -E 'Protocol|Cipher is' "$tmp/s11" | head -2)"
kill $epid; wait $epid 2>/dev/null

# --- mTLS and response headers
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=clients-ca -keyout "$tmp/ca.key" -out "$tmp/ca.pem" \
	>/dev/null 2>&1 &&
	openssl req -newkey rsa:2048 -nodes -subj /CN=prometheus -keyout "$tmp/client.key" -out "$tmp/client.csr" \
		>/dev/null 2>&1 &&
	openssl x509 -req -in "$tmp/client.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 2 \
		-out "$tmp/client.pem" >/dev/null 2>&1 &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=mallory -keyout "$tmp/rogue.key" \
		-out "$tmp/rogue.pem" >/dev/null 2>&1 || fail "openssl could not make the client certificates"
cat >"$tmp/mtls.yml" <<YML
tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
http_server_config:
  headers:
    Strict-Transport-Security: max-age=31536000
    X-Content-Type-Options: nosniff
YML
chmod 0600 "$tmp/mtls.yml" # it names the users and the key: a secret file (docs/security.md)
start_exporter mtls --store.path "$tmp/hostile" --web.config-file "$tmp/mtls.yml"
url=https://127.0.0.1:$port/metrics
good=$(curl -sk -o /dev/null -w '%{http_code}' --cert "$tmp/client.pem" --key "$tmp/client.key" -D "$tmp/mh" "$url")
none=$(curl -sk -o /dev/null -w '%{http_code}' "$url")
rogue=$(curl -sk -o /dev/null -w '%{http_code}' --cert "$tmp/rogue.pem" --key "$tmp/rogue.key" "$url")
[ "$good" = 200 ] && [ "$none" = 000 ] && [ "$rogue" = 000 ] &&
	ok "mTLS: a client certificate from the configured CA gets 200; none, or one from another CA, is cut off" ||
	fail "mTLS: CA's client $good, no certificate $none, another CA's $rogue"
grep -qi '^Strict-Transport-Security: max-age=31536000' "$tmp/mh" && grep -qi '^X-Content-Type-Options: nosniff' "$tmp/mh" &&
	ok "http_server_config.headers on the responses" || fail "headers: $(cat "$tmp/mh")"
kill $epid; wait $epid 2>/dev/null

# --- cipher_suites (TLS 1.2): the listed suites only; a list whose parts combine into more is said
cat >"$tmp/suites.yml" <<YML
tls_server_config:
  cert_file: cert.pem
  key_file: key.pem
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256]
YML
chmod 0600 "$tmp/suites.yml" # it names the users and the key: a secret file (docs/security.md)
start_exporter suites --store.path "$tmp/hostile" --web.config-file "$tmp/suites.yml"
url=https://127.0.0.1:$port/metrics
with() { curl -sk -o /dev/null -w '%{http_code}' --tlsv1.2 --tls-max 1.2 --ciphers "$1" "$url"; }
listed=$(with ECDHE-RSA-AES256-GCM-SHA384)
listed2=$(with ECDHE-RSA-CHACHA20-POLY1305)
any12=$(curl -sk -o /dev/null -w '%{http_code}' --tlsv1.2 --tls-max 1.2 "$url")
other=$(with ECDHE-RSA-AES128-GCM-SHA256)
other2=$(with AES256-GCM-SHA384)
tls13=$(curl -sk -o /dev/null -w '%{http_code}' --tlsv1.3 "$url")
[ "$listed" = 200 ] && [ "$listed2" = 200 ] && [ "$any12" = 200 ] && [ "$other" = 000 ] && [ "$other2" = 000 ] &&
	[ "$tls13" = 200 ] &&
	ok "cipher_suites: each listed suite 200 (and a client offering many), others cut off; TLS 1.3 still 200" ||
	fail "cipher_suites: listed $listed and $listed2, any $any12, others $other and $other2, TLS 1.3 $tls13"
kill $epid; wait $epid 2>/dev/null
printf 'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_RSA_WITH_AES_128_GCM_SHA256]\n' >"$tmp/crossed.yml"
chmod 0600 "$tmp/crossed.yml"
start_exporter crossed --store.path "$tmp/hostile" --web.config-file "$tmp/crossed.yml"
grep -q "cipher_suites: .* also allow: TLS_RSA_WITH_AES_256_GCM_SHA384, TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" "$tmp/crossed.log" &&
	ok "a list whose parts combine: the extra suites named at start" ||
	fail "crossed suites: $(grep cipher_suites "$tmp/crossed.log")"
kill $epid; wait $epid 2>/dev/null

# --- bad web configs: exit 2 with file:line and the key
check_bad() {
	printf '%s\n' "$2" >"$tmp/bad.yml" && chmod 0600 "$tmp/bad.yml"
	out=$("$exporter" --store.path "$tmp/hostile" --web.listen-address 127.0.0.1:0 --web.config-file "$tmp/bad.yml" 2>&1)
	rc=$?
	[ $rc -eq 2 ] && grep -q "$3" <<<"$out" && ok "$1: exit 2: $(grep -o 'error: .*' <<<"$out")" || fail "$1 ($rc): $out"
}
check_bad "unknown key" "tls_server_confg: {}" "bad.yml:1: unknown key 'tls_server_confg'"
check_bad "unsupported TLS option" $'tls_server_config:\n  cert_file: c\n  curve_preferences: [X25519]' "bad.yml:3: tls_server_config.curve_preferences is not supported"
check_bad "an insecure cipher suite" $'tls_server_config:\n  cert_file: c\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]' "bad.yml:3: cipher suite 'TLS_RSA_WITH_RC4_128_SHA' is unknown or insecure"
check_bad "bad TLS version" $'tls_server_config:\n  min_version: SSL3' "bad.yml:2: tls_server_config.min_version must be TLS10, TLS11, TLS12 or TLS13"
check_bad "client auth without CA" $'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n  client_auth_type: RequireAndVerifyClientCert' "needs client_ca_file"
check_bad "a header that cannot be set" $'http_server_config:\n  headers:\n    Set-Cookie: x=1' "bad.yml:3: header 'Set-Cookie' cannot be set"
check_bad "plain-text password" $'basic_auth_users:\n  bob: hunter2' "bad.yml:2: the password of user 'bob' must be a bcrypt hash"
check_bad "malformed YAML" $'basic_auth_users: [unclosed' "bad.yml:"
check_bad "certificate without key" $'tls_server_config:\n  cert_file: cert.pem' "needs both cert_file and key_file"
out=$("$exporter" --store.path "$tmp/hostile" --web.listen-address 127.0.0.1:0 --web.config-file "$tmp/none.yml" 2>&1)
[ $? -eq 2 ] && grep -q "none.yml: No such file" <<<"$out" && ok "missing web config: exit 2" || fail "missing web config: $out"
# the web config and the TLS key are secret files: a planted link, a file others may read, refused at start
ln -s /etc/shadow "$tmp/planted.yml"
cp "$tmp/web.yml" "$tmp/open.yml" && chmod 0644 "$tmp/open.yml"
sed 's/key_file: key.pem/key_file: open.key/' "$tmp/web.yml" >"$tmp/openkey.yml" && chmod 0600 "$tmp/openkey.yml"
cp "$tmp/key.pem" "$tmp/open.key" && chmod 0644 "$tmp/open.key"
for c in "planted.yml:is a symbolic link (to /etc/shadow)" "open.yml:may be read by others" "openkey.yml:open.key may be read by others"; do
	out=$("$exporter" --store.path "$tmp/hostile" --web.listen-address 127.0.0.1:0 --web.config-file "$tmp/${c%%:*}" 2>&1)
	rc=$?
	[ $rc -eq 2 ] && grep -qF "${c#*:}" <<<"$out" && ok "web config ${c%%:*}: exit 2: $(grep -o 'error: .*' <<<"$out" | head -c 160)" ||
		fail "web config ${c%%:*} ($rc): $out"
done

# --- started as root: it becomes exporter.user (nobody) with the store's group, no capability
if [ "$(id -u)" -eq 0 ]; then
	"$probe" write "$tmp/rootgrp" 2 nogroup >/dev/null 2>&1
	start_exporter asroot --store.path "$tmp/rootgrp"
	sleep 0.5
	creds=$(for t in /proc/$epid/task/*; do grep -E '^(Uid|Groups|CapEff|CapPrm|NoNewPrivs):' "$t/status" | tr -s '\t\n' '  '; echo; done | sort -u)
	body=$(curl -s "http://127.0.0.1:$port/metrics")
	if [ "$(wc -l <<<"$creds")" = 1 ] && grep -q 'Uid: 65534 65534 65534 65534 ' <<<"$creds" &&
		grep -q 'Groups: 65534 ' <<<"$creds" && grep -q 'CapEff: 0000000000000000 ' <<<"$creds" &&
		grep -q 'CapPrm: 0000000000000000 ' <<<"$creds" && grep -q 'NoNewPrivs: 1' <<<"$creds" &&
		grep -q '^kepler_snapshot_seq{node_name="[^"]*"} 2$' <<<"$body"; then
		ok "started as root, every thread is nobody with the store's group nogroup, no capability, no_new_privs; it serves the store"
	else
		fail "started as root: $creds; $(head -3 "$tmp/asroot.log")"
	fi
	kill $epid; wait $epid 2>/dev/null
	# a store in root's group: the exporter never keeps group 0 (it would read every root-group file)
	"$probe" write "$tmp/root0" 2 "" >/dev/null 2>&1
	start_exporter root0 --store.path "$tmp/root0"
	sleep 0.5
	groups=$(grep -h '^Groups:' /proc/$epid/task/*/status | sort -u)
	if [ "$(wc -l <<<"$groups")" = 1 ] && ! grep -qw 0 <<<"$groups" &&
		grep -q "is in group root: the exporter does not keep root's group" "$tmp/root0.log"; then
		ok "a store in group root: the exporter keeps no group 0 ($groups), and says so"
	else
		fail "store in group root: $groups; $(grep -m1 'group root' "$tmp/root0.log")"
	fi
	kill $epid; wait $epid 2>/dev/null
	# a store its exporter.user owns (a collector that ran as nobody): refused, the network side must not own it
	"$probe" write "$tmp/owned" 2 nogroup >/dev/null 2>&1
	chown 65534 "$tmp/owned/data.mdb"
	out=$("$exporter" --store.path "$tmp/owned" --web.listen-address 127.0.0.1:0 2>&1)
	rc=$?
	[ $rc -eq 1 ] && grep -q "exporter.user 'nobody' owns the store" <<<"$out" &&
		ok "started as root on a store nobody owns: refused (exit 1), exporter.user must not own it" ||
		fail "an exporter.user that owns the store ($rc): $out"
	out=$("$exporter" --store.path "$tmp/rootgrp" --web.listen-address 127.0.0.1:0 --exporter.user no-such-user-kepler 2>&1)
	rc=$?
	[ $rc -eq 1 ] && grep -q "exporter.user 'no-such-user-kepler' does not exist: the exporter refuses to serve the network as root" <<<"$out" &&
		ok "started as root with a missing exporter.user: refused (exit 1)" || fail "missing exporter.user ($rc): $out"
else
	echo "SKIP part: dropping root needs root"
fi

# --- unprivileged, in the store's group
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	"$probe" write "$tmp/grp" 2 nogroup >/dev/null 2>&1
	setpriv --reuid=65534 --regid=65534 --clear-groups "$exporter" --store.path "$tmp/grp" \
		--web.listen-address 127.0.0.1:0 >"$tmp/nobody.log" 2>&1 &
	epid=$!
	pids+=($epid)
	for _ in $(seq 50); do
		port=$(sed -n 's|.*started: http://[^ ]*:\([0-9]*\)/metrics.*|\1|p' "$tmp/nobody.log")
		[ -n "$port" ] && break
		sleep 0.1
	done
	sleep 0.5
	body=$(curl -s "http://127.0.0.1:$port/metrics") # whole: grep -q on the pipe would cut curl short
	grep -q '^kepler_snapshot_seq{node_name="[^"]*"} 2$' <<<"$body" &&
		! grep -q "running as root" "$tmp/nobody.log" && ok "runs as nobody in the store's group" ||
		fail "unprivileged run: $(cat "$tmp/nobody.log")"
	kill $epid; wait $epid 2>/dev/null
else
	echo "skip: unprivileged run needs root and setpriv"
fi

# --- render on demand: a snapshot is rendered only for a scrape that serves it, once; an exporter
# nobody scrapes renders nothing after its first (counted in snapshots, not seconds)
"$collectd" --store.path "$tmp/lazy" --meter.source fake --monitor.interval 1s --store.group "" \
	--log.level warn >"$tmp/lazy-collectd.log" 2>&1 &
lcpid=$!
pids+=($lcpid)
eventually 120 seq_at_least "$tmp/lazy" 1 || fail "the lazy store's collector wrote nothing: $(cat "$tmp/lazy-collectd.log")"
start_exporter lazy --store.path "$tmp/lazy" --log.level debug
renderings() { grep -c "serving snapshot" "$tmp/lazy.log"; }
rendered_one() { [ "$(renderings)" -ge 1 ]; }
eventually 120 rendered_one || fail "the exporter rendered nothing at start: $(cat "$tmp/lazy.log")"
first=$(store_seq "$tmp/lazy")
eventually 300 seq_at_least "$tmp/lazy" $((first + 4)) || fail "the lazy store's collector stopped"
renders=$(renderings)
newest=$(store_seq "$tmp/lazy")
served=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^kepler_snapshot_seq/ {print $2}')
after=$(renderings)
[ "$renders" -eq 1 ] && [ "${served:-0}" -ge "${newest:-1}" ] && [ "$after" -eq 2 ] &&
	ok "unscraped for 4+ snapshots: 1 rendering; the first scrape renders once and gets the newest (seq $served >= $newest)" ||
	fail "render on demand: $renders renderings unscraped, served seq '$served' of newest '$newest', $after after"
eventually 300 seq_at_least "$tmp/lazy" $((served + 3)) || fail "the lazy store's collector stopped"
code=$(curl -s -o "$tmp/lazy-h" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
before=$(renderings)
[ "$code" = 200 ] && [ "$before" -eq "$after" ] &&
	ok "/healthz 200 while 3 snapshots wait unrendered (their time counts; no rendering)" ||
	fail "/healthz with pending: $code $(cat "$tmp/lazy-h"), renderings $after -> $before"
# scrapes in pairs (two Prometheus replicas): each distinct snapshot served is one rendering, whatever
# the pace; a scrape waits for the rendering it asked for (at most 2 s, far above a rendering here)
: >"$tmp/lazy-seqs"
for _ in 1 2 3 4 5 6; do
	for _ in 1 2; do curl -s "http://127.0.0.1:$port/metrics" | awk '/^kepler_snapshot_seq/ {print $2}' >>"$tmp/lazy-seqs"; done
	eventually 300 seq_at_least "$tmp/lazy" $(($(tail -1 "$tmp/lazy-seqs") + 1)) || break
done
n=$(($(renderings) - before)) distinct=$(sort -u "$tmp/lazy-seqs" | wc -l)
[ "$n" -eq "$distinct" ] && [ "$(wc -l <"$tmp/lazy-seqs")" -eq 12 ] &&
	ok "12 scrapes in pairs of 6 snapshots: $n renderings for $distinct snapshots served (one each, shared by the pair)" ||
	fail "scraped in pairs: $n renderings for $distinct snapshots served: $(tr '\n' ' ' <"$tmp/lazy-seqs")"
kill $epid
wait $epid 2>/dev/null

# --- metrics.process.top 5: per zone 5 processes and "other" (and the folds of short processes); the sums still hold
start_exporter top --store.path "$tmp/lazy" --metrics.process.top 5
curl -s "http://127.0.0.1:$port/metrics" >"$tmp/top.txt"
all=$(curl -s "http://127.0.0.1:$port/metrics" >/dev/null; "$build/readers/stdout/kepler-stdout" --store.path "$tmp/lazy" --format json 2>/dev/null | jq '.processes | length')
if promtool check metrics <"$tmp/top.txt" >"$tmp/top.lint" 2>&1; then
	ok "metrics.process.top 5: promtool clean"
else
	fail "metrics.process.top 5: promtool: $(head -3 "$tmp/top.lint")"
fi
bad=$(awk '
	/^kepler_node_cpu_active_watts\{/ { match($0, /zone="[^"]*"/); node[substr($0, RSTART, RLENGTH)] += $NF }
	/^kepler_node_cpu_unattributed_watts\{/ { match($0, /zone="[^"]*"/); node[substr($0, RSTART, RLENGTH)] -= $NF }
	/^kepler_process_cpu_watts\{/ { match($0, /zone="[^"]*"/); z = substr($0, RSTART, RLENGTH); sum[z] += $NF; if ($0 !~ /type="folded"/) n[z]++ }
	END { for (z in node) { d = node[z] - sum[z]; if (d < 0) d = -d; if (d > 1e-9 || n[z] != 6) print z, node[z], sum[z], n[z] } }' "$tmp/top.txt")
series=$(grep -c '^kepler_process_cpu_' "$tmp/top.txt")
[ -z "$bad" ] && ok "metrics.process.top 5: per zone 5 processes + other, sum == node active - unattributed watts; $series process series for $all processes (every process: $((all * 7)))" ||
	fail "metrics.process.top sums: $bad"
# HTTP keep-alive: two scrapes on one connection (few connections open)
ka=$(curl -sv -o /dev/null -o /dev/null "http://127.0.0.1:$port/metrics" "http://127.0.0.1:$port/metrics" 2>&1)
grep -q "Re-using existing connection" <<<"$ka" && ! grep -qi "^< Connection: close" <<<"$ka" &&
	ok "HTTP keep-alive: the second scrape reuses the connection" ||
	fail "no keep-alive: $(grep -iE 'connection' <<<"$ka" | head -4)"
kill $epid $lcpid
finish exporter
