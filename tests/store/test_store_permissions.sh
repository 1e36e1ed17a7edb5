#!/usr/bin/env bash
# Store permissions with real users: a reader in the store's group reads; a
# reader outside it gets a clear "permission denied ... group" message; no
# reader modifies the data file; a collector that cannot write the store's
# folder is told its owner and mode. Needs root (setpriv); skips otherwise.
# Usage: test_store_permissions.sh BUILD_DIR
set -uo pipefail
probe=$1/tests/store_probe
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root and setpriv to run readers as other users"
	exit 77
fi
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
chmod 0755 "$top"
store=$top/store
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$probe" write "$store" 3 nogroup || fail "writer could not create the store"
[ "$(stat -c %a:%G "$store/data.mdb")" = "640:nogroup" ] || fail "data.mdb is $(stat -c %a:%G "$store/data.mdb")"
[ "$(stat -c %a "$store/lock.mdb")" = "600" ] && [ "$(stat -c %G "$store/lock.mdb")" != nogroup ] || fail "lock.mdb is $(stat -c %a:%G "$store/lock.mdb") (must be 0600, not the readers' group)"
[ "$(stat -c %a "$store")" = "750" ] && echo "ok: a new store directory is 0750" || fail "store directory is $(stat -c %a "$store")"
# an existing world-writable directory: used, and said
mkdir -m 0777 "$top/open" && chmod 0777 "$top/open"
out=$("$probe" write "$top/open" 1 "" 2>&1)
grep -q "warning: the store directory '$top/open' is world-writable (mode 0777)" <<<"$out" &&
	echo "ok: world-writable store directory: warned" || fail "no warning for a 0777 store directory: $out"
before=$(sha256sum "$store/data.mdb")
mtime=$(stat -c %Y.%y "$store/data.mdb")

out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$probe" read "$store" 2>&1)
[ "$out" = "3" ] && echo "ok: reader in group nogroup read seq $out" || fail "in-group reader: $out"

out=$(setpriv --reuid=65534 --regid=4321 --clear-groups "$probe" read "$store" 2>&1)
rc=$?
if [ $rc -ne 0 ] && grep -q "permission denied opening the store .* group 'nogroup'" <<<"$out"; then
	echo "ok: outsider told: $out"
else
	fail "outsider reader (status $rc): $out"
fi

# a collector that cannot write where the store is (not started as root, a root-owned 0755
# folder): told whose the folder is, its mode and its own ids, not to join a group
mkdir -m 0755 "$top/rootdir"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$1/collectd/kepler-collectd" --store.path "$top/rootdir" \
	--meter.source fake --informer procfs --store.group "" 2>&1)
rc=$?
if [ $rc -eq 1 ] && grep -q "$top/rootdir is owned by uid 0, gid 0, mode 0755, and this collector runs as uid 65534, gid 65534" <<<"$out"; then
	echo "ok: a collector that cannot write the store's folder told why: $(grep -o 'error: .*' <<<"$out" | head -c 200)"
else
	fail "a collector in a root-owned folder (status $rc): $out"
fi

[ "$(sha256sum "$store/data.mdb")" = "$before" ] || fail "a reader changed data.mdb"
[ "$(stat -c %Y.%y "$store/data.mdb")" = "$mtime" ] || fail "a reader touched data.mdb"
[ $fails -eq 0 ] && echo "ok: data.mdb unchanged by readers"
exit $((fails > 0))
