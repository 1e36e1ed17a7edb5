#!/usr/bin/env bash
# kepler-stdout on stores written by a test writer (tests/store_probe,
# fixture snapshots with hostile names): JSON valid against
# docs/snapshot.schema.json at every level, the golden table, history
# (--all, --seq, --at), --follow --count 3, exit codes, no terminal codes
# in a pipe, an unprivileged reader.
# Usage: test_stdout.sh BUILD_DIR
set -uo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$build/readers/stdout/kepler-stdout
probe=$build/tests/store_probe
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import jsonschema' 2>/dev/null ||
	{ echo "SKIP: python3-jsonschema missing (tools/setup.sh installs it)"; exit 77; }
. "$(dirname "$0")/../lib.sh"
validate() { /usr/bin/python3 "$src/tests/validate_json.py" "$src/docs/snapshot.schema.json"; }

# --- exit codes without data
"$out" --store.path "$tmp/none" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "no store at" "$tmp/e" && ok "missing store: exit 2: $(grep -o 'error: .*' "$tmp/e")" || fail "missing store: $(cat "$tmp/e")"
"$probe" write "$tmp/empty" 0 >/dev/null 2>&1
"$out" --store.path "$tmp/empty" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "no snapshot yet" "$tmp/e" && [ ! -s "$tmp/o" ] && ok "empty store: exit 1, nothing on stdout" || fail "empty store: $(cat "$tmp/e")"

# --- JSON at every level, against the schema
"$probe" write "$tmp/s" 3 "" 12 >/dev/null 2>&1 || fail "store_probe write"
for level in node process container vm pod node,process,container,vm,pod; do
	n=$("$out" --store.path "$tmp/s" --format json --all --level "$level" | validate)
	[ "$n" = 3 ] && ok "--all --level $level: 3 snapshots valid against docs/snapshot.schema.json" || fail "level $level: $n"
done
"$out" --store.path "$tmp/s" --format json --level process | jq -e '.processes | length == 12 and (.[11].comm == "with \"quotes\"-11") and (.[2].comm == "new\nline-2")' >/dev/null &&
	ok "hostile names round-trip through JSON" || fail "hostile names in JSON"
"$out" --store.path "$tmp/s" --format json --level process | jq -e '.processes[4].comm | test("\ufffd")' >/dev/null &&
	ok "invalid UTF-8 becomes U+FFFD" || fail "invalid UTF-8 in JSON"
[ "$("$out" --store.path "$tmp/s" --all | jq -r .seq | tr '\n' ' ')" = "1 2 3 " ] && ok "--all: oldest first; JSON when stdout is not a terminal" || fail "--all order"
[ "$("$out" --store.path "$tmp/s" --all --count 2 | jq -r .seq | tr '\n' ' ')" = "1 2 " ] && ok "--all --count 2" || fail "--all --count 2"
[ "$("$out" --store.path "$tmp/s" --seq 2 | jq -r .seq)" = 2 ] && ok "--seq 2" || fail "--seq 2"
"$out" --store.path "$tmp/s" --seq 9 >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && grep -q "snapshot 9 is not in the store (it keeps 1 to 3)" "$tmp/e" && ok "--seq 9: exit 1, says what is kept" || fail "--seq 9: $(cat "$tmp/e")"
t2=$(date -u -d @$(( $("$out" --store.path "$tmp/s" --seq 2 | jq -r .wall_ns) / 1000000000 + 2 )) +%Y-%m-%dT%H:%M:%SZ)
[ "$("$out" --store.path "$tmp/s" --at "$t2" | jq -r .seq)" = 2 ] && ok "--at $t2: snapshot 2" || fail "--at $t2"
"$out" --store.path "$tmp/s" --at 2000-01-01T00:00:00Z >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] && ok "--at before the first snapshot: exit 1" || fail "--at early: $(cat "$tmp/e")"

# --- usage errors: exit 2
for args in "--sort bogus" "--seq 2 --all" "--at yesterday" "--follow --seq 2" "--format yaml"; do
	"$out" --store.path "$tmp/s" $args >/dev/null 2>"$tmp/e"
	[ $? -eq 2 ] && ok "$args: exit 2: $(head -1 "$tmp/e" | sed 's/.*error: //')" || fail "$args: not exit 2"
done

# --- tables: golden, stable, no terminal codes
"$out" --store.path "$tmp/s" --format table --seq 3 --limit 6 --sort name >"$tmp/table"
diff -u "$src/tests/golden/stdout_table.txt" "$tmp/table" >"$tmp/diff" && ok "table matches tests/golden/stdout_table.txt" ||
	fail "table differs: $(head -20 "$tmp/diff")"
"$out" --store.path "$tmp/s" --format table --all --sort watts >"$tmp/t1"
"$out" --store.path "$tmp/s" --format table --all --sort watts >"$tmp/t2"
cmp -s "$tmp/t1" "$tmp/t2" && ok "table output is stable" || fail "table output changed between runs"
! grep -q $'\033' "$tmp/t1" && ! grep -qP '[\x00-\x08\x0b-\x1f]' "$tmp/t1" && ok "no terminal codes or control characters in a pipe" || fail "control characters in table"
for key in watts energy cpu pid name; do
	"$out" --store.path "$tmp/s" --format table --sort "$key" --level process --limit 3 >/dev/null || fail "--sort $key"
done
ok "--sort watts|energy|cpu|pid|name"
first_pid=$("$out" --store.path "$tmp/s" --format table --sort pid --level process | awk '$1 ~ /^[0-9]+$/ {print $1; exit}')
[ "$first_pid" = 1 ] && ok "--sort pid: pid 1 first" || fail "--sort pid: $first_pid first"

# --- --follow --count 3: the newest, then two as they are committed
"$probe" write "$tmp/f" 2 >/dev/null 2>&1
"$out" --store.path "$tmp/f" --follow --count 3 --format json >"$tmp/follow" 2>"$tmp/fe" &
fpid=$!
sleep 1
"$probe" write "$tmp/f" 1 >/dev/null 2>&1
sleep 0.5
"$probe" write "$tmp/f" 1 >/dev/null 2>&1
for _ in $(seq 50); do kill -0 $fpid 2>/dev/null || break; sleep 0.1; done
if kill -0 $fpid 2>/dev/null; then
	kill $fpid
	fail "--follow --count 3 did not stop: $(cat "$tmp/follow" | jq -r .seq | tr '\n' ' ')"
else
	wait $fpid
	rc=$?
	seqs=$(jq -r .seq "$tmp/follow" | tr '\n' ' ')
	[ $rc -eq 0 ] && [ "$seqs" = "2 3 4 " ] && ok "--follow --count 3: printed $seqs then exit 0" || fail "--follow: rc $rc, seqs '$seqs'"
fi

# --- unprivileged reader in the store's group
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	"$probe" write "$tmp/g" 1 nogroup >/dev/null 2>&1
	setpriv --reuid=65534 --regid=65534 --clear-groups "$out" --store.path "$tmp/g" --format json >"$tmp/o" 2>"$tmp/e" &&
		[ "$(jq -r .seq "$tmp/o")" = 1 ] && ok "runs as nobody in the store's group" || fail "nobody: $(cat "$tmp/e")"
	setpriv --reuid=65534 --regid=4321 --clear-groups "$out" --store.path "$tmp/g" >/dev/null 2>"$tmp/e"
	[ $? -eq 2 ] && grep -q "permission denied" "$tmp/e" && ok "outside the group: exit 2, told why" || fail "outsider: $(cat "$tmp/e")"
fi
# docs/stdout.md's field table names every field the JSON has (the snapshot, the node, its zones,
# processes, folds and each kind of workload)
"$out" --store.path "$tmp/s" --format json --all | python3 -c '
import json, re, sys
doc = open(sys.argv[1]).read()
named = {w for quoted in re.findall(r"`([^`\n]+)`", doc) for w in re.findall(r"[a-z_0-9]+", quoted)}
keys = set()
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            keys.add(k)
            walk(v)
    elif isinstance(o, list):
        for x in o:
            walk(x)
for line in sys.stdin:
    walk(json.loads(line))
missing = sorted(keys - named)
print("docs/stdout.md names %d of the %d JSON fields%s" % (len(keys) - len(missing), len(keys), (": missing " + ", ".join(missing)) if missing else ""))
sys.exit(1 if missing else 0)' "$(dirname "$0")/../../docs/stdout.md" && ok "docs/stdout.md names every JSON field" || fail "docs/stdout.md misses JSON fields"
finish kepler-stdout
