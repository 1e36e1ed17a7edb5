#!/usr/bin/env bash
# kepler-top driven in tmux against a live collector (fake meter): header
# and the busiest process first, Tab, sort and filter keys change the
# screen, resize to 40x10 and back, the stale warning, q exits 0, no busy
# loop; --once and TERM=dumb print plain text.
# Usage: test_top.sh BUILD_DIR
set -uo pipefail
build=$1
top=$build/readers/top/kepler-top
command -v tmux >/dev/null || { echo "SKIP: tmux missing (tools/setup.sh installs it)"; exit 77; }
. "$(dirname "$0")/../lib.sh"
sess=kepler-top-test-$$
# a tmux server of its own (-L): another job's server, or its end, cannot take this session with it
tm() { tmux -L "$sess" "$@"; }
at_exit+=('tm kill-server 2>/dev/null')
screen() { tm capture-pane -p -t "$sess"; }
# wait_for TEXT: until the pane shows it (30 s at most: a bound for what never comes)
wait_for() {
	for _ in $(seq 300); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
	return 1
}
first_row() { screen | awk '/^ +PID NAME/ {getline; print; exit}'; }
# the NAME column of the rows on screen, lower-cased, one per line
row_names() { awk '/^ +PID NAME/ {on = 1; next} on && /^ +[0-9]+ / {print tolower(substr($0, 10, 16))}'; }
# busiest SEQ PID: PID has the most package energy of snapshot SEQ (ties allowed)
busiest() {
	"$build/readers/stdout/kepler-stdout" --store.path "$tmp/store" --seq "$1" --format json --level process >"$tmp/snap.json" || return 1
	best=$(jq '[.processes[].zones[0].delta_uj] | max' "$tmp/snap.json")
	mine=$(jq --argjson p "$2" '[.processes[] | select(.pid == $p) | .zones[0].delta_uj] | max' "$tmp/snap.json")
	[ "$mine" = "$best" ]
}

# a busy process with a name to look for (on a busy machine it need not be the
# busiest: every check compares with the snapshot on screen, not the host)
mkdir -p "$tmp/bin" && cp "$(command -v bash)" "$tmp/bin/kepler-burner"
"$tmp/bin/kepler-burner" -c 'while :; do :; done' &
pids+=($!)
"$build/collectd/kepler-collectd" --store.path "$tmp/store" --meter.source fake --monitor.interval 500ms \
	--store.group "" --log.level warn >"$tmp/collectd.log" 2>&1 &
cpid=$!
pids+=($cpid)
sleep 3

# --once in a pipe: plain text, no terminal codes
"$top" --store.path "$tmp/store" --once >"$tmp/once" 2>&1
rc=$?
oseq=$(sed -n '1s/.* snapshot \([0-9]*\) .*/\1/p' "$tmp/once")
opid=$(awk '/^ +PID NAME/ {getline; print $1; exit}' "$tmp/once")
[ $rc -eq 0 ] && grep -q '^kepler-top ' "$tmp/once" && ! grep -q $'\033' "$tmp/once" && [ -n "$opid" ] &&
	busiest "$oseq" "$opid" && ok "--once: one plain screen, exit 0, the busiest process of snapshot $oseq first" ||
	fail "--once ($rc): $(head -7 "$tmp/once")"

# today's energy from the store's history: the burner's group is the burner alone and the store
# began after midnight (or at it), so its TODAY Wh is its cumulative energy in the snapshot shown
burner=$(grep -m1 ' kepler-burner ' "$tmp/once")
bpid=$(awk '{print $1}' <<<"$burner")
uj=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/store" --seq "$oseq" --format json --level process |
	jq --argjson p "${bpid:-0}" '[.processes[] | select(.pid == $p) | .zones[0].energy_uj] | add')
grep -q 'TODAY Wh' "$tmp/once" && python3 -c '
import sys
wh, uj = float(sys.argv[1].split()[-2]), int(sys.argv[2])
sys.exit(0 if abs(uj / 3.6e9 - wh) < 0.0001 else 1)' "$burner" "${uj:-0}" &&
	ok "TODAY Wh from the history: the burner's $(awk '{print $(NF-1)}' <<<"$burner") Wh = its $uj µJ in snapshot $oseq" ||
	fail "today: $burner ($uj µJ)"

tm new-session -d -s "$sess" -x 120 -y 40 \
	"$top --store.path '$tmp/store'; echo \"EXIT=\$?\" > '$tmp/exit'; sleep 5"
wait_for "[Processes]" && ok "started in a 120x40 tmux pane" || fail "no screen: $(screen | head -5)"
screen | head -1 | grep -q '^kepler-top .* snapshot [0-9]' && ok "header: $(screen | head -1 | sed 's/  */ /g')" || fail "header: $(screen | head -1)"
screen | grep -q 'fake' && ok "zones with their source" || fail "no zone line"
# the sparkline covers the series so far (the collector started seconds ago), not "10 min"
screen | grep -Eq '^package W, last [0-9]+ s: ([▁▂▃▄▅▆▇█]|[-_.:=+*#]){2,} [0-9.]+-[0-9.]+ W$' &&
	ok "sparkline: $(screen | grep '^package W')" || fail "sparkline: $(screen | sed -n 3p)"
row=$(first_row)
# the first row is the busiest process of the snapshot on screen (paused, so it stays)
tm send-keys -t "$sess" p
wait_for "[PAUSED]"
seq=$(screen | head -1 | sed -n 's/.* snapshot \([0-9]*\) .*/\1/p')
row=$(first_row)
pid=$(awk '{print $1}' <<<"$row")
[ -n "$pid" ] && busiest "$seq" "$pid" &&
	ok "busiest process first (snapshot $seq, $best uJ in package): $(sed 's/  */ /g' <<<"$row")" ||
	fail "first row pid $pid has $mine uJ, the busiest $best: $row"
tm send-keys -t "$sess" p
wait_for "sort: watts"
tm send-keys -t "$sess" Tab
wait_for "[Containers]" && ok "Tab: containers view" || fail "Tab did not switch: $(screen | sed -n 5,6p)"
tm send-keys -t "$sess" Tab Tab Tab
wait_for "[Processes]" && ok "Tab cycles back to processes" || fail "Tab cycle"
tm send-keys -t "$sess" n
wait_for "sort: name" && screen | row_names >"$tmp/names" && [ -s "$tmp/names" ] && LC_ALL=C sort -c "$tmp/names" &&
	ok "n: sorted by name ($(wc -l <"$tmp/names") rows in order), first row now $(first_row | awk '{print $2}')" ||
	fail "sort by name: $(screen | row_names | head -5 | tr '\n' ' ')"
# e: by energy, which with a history is the TODAY column the table shows (before: the hidden
# cumulative energy); paused, so the numbers stay
tm send-keys -t "$sess" e p
wait_for "sort: energy" && wait_for "[PAUSED]"
screen | grep -E '^ +[0-9]+ ' | awk '$(NF-1) ~ /^[0-9.]+$/ {print $(NF-1)}' >"$tmp/today" # (an exe with a space moves the column: left out)
[ -s "$tmp/today" ] && sort -g -r -c "$tmp/today" 2>/dev/null &&
	ok "e: sorted by the TODAY column shown ($(head -3 "$tmp/today" | paste -sd' ') ... Wh)" ||
	fail "sort by energy is not the TODAY column: $(paste -sd' ' "$tmp/today")"
tm send-keys -t "$sess" p
tm send-keys -t "$sess" w
wait_for "sort: watts" && ok "w: back to watts" || fail "sort watts"
tm send-keys -t "$sess" / k e p l e r - b u Enter
wait_for "filter: kepler-bu" && [ "$(screen | grep -cE '^ +[0-9]+ ')" = 1 ] && grep -q kepler-burner <<<"$(first_row)" &&
	ok "/ filter: only kepler-burner left" || fail "filter: $(screen | sed -n 5,9p)"
tm send-keys -t "$sess" / Escape
sleep 0.5
! screen | grep -q "filter:" && ok "Esc clears the filter" || fail "filter not cleared"
tm send-keys -t "$sess" h
wait_for "Keys" && ok "h: help" || fail "no help"
tm send-keys -t "$sess" x
sleep 0.3
tm resize-window -t "$sess" -x 40 -y 10
sleep 1
tm has-session -t "$sess" 2>/dev/null && [ -n "$(screen)" ] && [ ! -e "$tmp/exit" ] && ok "resized to 40x10: still running" || fail "resize to 40x10"
tm resize-window -t "$sess" -x 20 -y 3
sleep 0.5
[ ! -e "$tmp/exit" ] && ok "3 lines by 20 columns: still running ($(screen | head -1))" || fail "tiny terminal"
tm resize-window -t "$sess" -x 120 -y 40
wait_for "[Processes]" && ok "back to 120x40: full screen again" || fail "after resize: $(screen | head -3)"

# travelling back through the store, and live again
tm send-keys -t "$sess" '['
# (new snapshots keep coming: the one shown stays, so how far back it is grows)
wait_for "HISTORY: " && shown=$(screen | head -1 | sed -n 's/.* snapshot \([0-9]*\) .*/\1/p') &&
	newest=$(screen | sed -n 's/^HISTORY: .* before the newest (\([0-9]*\)).*/\1/p') &&
	[ -n "$shown" ] && [ -n "$newest" ] && [ "$shown" -lt "$newest" ] &&
	ok "[: back in the store (snapshot $shown of $newest)" || fail "[: $(screen | head -3)"
tm send-keys -t "$sess" '{'
wait_for "HISTORY: " && s1=$(screen | head -1 | sed -n 's/.* snapshot \([0-9]*\) .*/\1/p')
sleep 1.2 # new snapshots arrive: the one shown stays
s2=$(screen | head -1 | sed -n 's/.* snapshot \([0-9]*\) .*/\1/p')
[ -n "$s1" ] && [ "$s1" = "$s2" ] && ok "{: back 60 (or to the ring's oldest), snapshot $s1 stays while new ones arrive" ||
	fail "{: snapshot $s1 then $s2"
tm send-keys -t "$sess" L
for _ in $(seq 50); do screen | grep -q "HISTORY:" || break; sleep 0.1; done
! screen | grep -q "HISTORY:" && ok "L: live again ($(screen | head -1 | sed 's/  */ /g'))" || fail "L: $(screen | head -3)"

# no busy loop: CPU time of kepler-top over 5 s while nothing changes (paused)
tpid=$(pgrep -f "^$top --store.path" | head -1)
tm send-keys -t "$sess" p
wait_for "[PAUSED]" && ok "p: paused" || fail "pause"
c0=$(awk '{print $1}' "/proc/$tpid/schedstat")
sleep 5
c1=$(awk '{print $1}' "/proc/$tpid/schedstat")
ms=$(( (c1 - c0) / 1000000 ))
[ "$ms" -lt 100 ] && ok "idle for 5 s: ${ms} ms of CPU (no busy loop)" || fail "busy: ${ms} ms of CPU in 5 s"
tm send-keys -t "$sess" p

# the collector stops: a visible warning
kill -TERM $cpid; wait $cpid 2>/dev/null
wait_for "STALE" && ok "collector stopped: $(screen | grep STALE)" || fail "no stale warning: $(screen | head -3)"

tm send-keys -t "$sess" q
for _ in $(seq 50); do [ -e "$tmp/exit" ] && break; sleep 0.1; done
[ "$(cat "$tmp/exit" 2>/dev/null)" = "EXIT=0" ] && ok "q: exit 0" || fail "q: $(cat "$tmp/exit" 2>/dev/null)"

# TERM=dumb: plain screens, no curses
tm kill-session -t "$sess" 2>/dev/null
TERM=dumb tm new-session -d -s "$sess" -x 100 -y 30 "TERM=dumb NO_COLOR=1 $top --store.path '$tmp/store'"
wait_for "kepler-top " && ! tm capture-pane -p -e -t "$sess" | grep -q $'\033\[[0-9;]*m' &&
	ok "TERM=dumb NO_COLOR: plain text screen" || fail "TERM=dumb: $(screen | head -3)"
# an unprivileged user in the store's group
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	"$build/tests/store_probe" write "$tmp/grp" 2 nogroup >/dev/null 2>&1
	setpriv --reuid=65534 --regid=65534 --clear-groups "$top" --store.path "$tmp/grp" --once >"$tmp/nobody" 2>&1 &&
		grep -q '^kepler-top .* snapshot 2 ' "$tmp/nobody" && ok "runs as nobody in the store's group" ||
		fail "unprivileged: $(head -3 "$tmp/nobody")"
fi
finish kepler-top
