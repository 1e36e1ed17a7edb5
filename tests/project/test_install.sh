#!/usr/bin/env bash
# `cmake --install` as a new user runs it (into a DESTDIR): every binary, the
# man pages, the example configuration, the systemd units, sysusers.d and
# tmpfiles.d, the models and the docs land under the GNUInstallDirs paths.
# Each man page renders with man -l without a warning and names every
# option its binary's --help lists, and every flag of its examples is one
# the program the example runs knows. The example configuration loads as it is (all
# commented) and with every option uncommented (each default valid).
# Usage: test_install.sh BUILD_DIR
set -uo pipefail
build=$1
. "$(dirname "$0")/../lib.sh"
command -v man >/dev/null || skip "man (man-db) missing: tools/setup.sh installs it"

root=$tmp/root
DESTDIR=$root cmake --install "$build" >"$tmp/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$tmp/install.log")"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
p=$root$prefix
etc=$root$([ "$prefix" = /usr ] && echo /etc || echo "$prefix/etc")
# docs/install.md's table of what the package installs names every binary and unit installed, and
# nothing that is not (a row's later names are in its first path's folder)
python3 - "$(dirname "$0")/../../docs/install.md" "$root" "$prefix" <<'PY' || fail "docs/install.md's table differs from what is installed"
import os, re, sys
doc, root, prefix = sys.argv[1:4]
named = set()
for line in open(doc):
    if not line.startswith("| `/"):
        continue
    first = line.split("|")[1]
    items = re.findall(r"`([^`]+)`", first)
    base = os.path.dirname(items[0])
    for it in items:
        named.add(it if it.startswith("/") else os.path.join(base, it))
# the package's prefix is /usr; units under /lib/systemd there (cmake: PREFIX/lib/systemd)
def doc_path(p):
    p = p[len(root):]
    p = "/usr" + p[len(prefix):] if p.startswith(prefix + "/") else p
    return p.replace("/usr/lib/systemd/system/", "/lib/systemd/system/")
installed = set()
for d in ("sbin", "bin", "lib/systemd/system"):
    full = os.path.join(root + prefix, d)
    for f in sorted(os.listdir(full)) if os.path.isdir(full) else []:
        installed.add(doc_path(os.path.join(full, f)))
missing = sorted(installed - named)
extra = sorted(n for n in named - installed if re.match(r"/(usr/s?bin|lib/systemd/system)/", n))
for m in missing:
    print("docs/install.md does not name", m)
for e in extra:
    print("docs/install.md names", e, "which is not installed")
print("docs/install.md's table names the %d binaries and units installed" % len(installed))
sys.exit(1 if missing or extra else 0)
PY
want=(
	"$p/sbin/kepler-collectd" "$p/bin/kepler-exporter" "$p/bin/kepler-stdout" "$p/bin/kepler-top"
	"$p/bin/kepler-dataset" "$p/bin/kepler-train" "$p/bin/kepler-passthrough" "$p/bin/kepler-report" "$p/bin/kepler-push"
	"$p/share/man/man8/kepler-collectd.8.gz" "$p/share/man/man1/kepler-exporter.1.gz"
	"$p/share/man/man1/kepler-stdout.1.gz" "$p/share/man/man1/kepler-top.1.gz"
	"$p/share/man/man1/kepler-dataset.1.gz" "$p/share/man/man1/kepler-train.1.gz"
	"$p/share/man/man1/kepler-passthrough.1.gz" "$p/share/man/man1/kepler-report.1.gz" "$p/share/man/man1/kepler-push.1.gz"
	"$etc/kepler/config.yaml" "$p/share/kepler/models/generic-vm.yaml"
	"$p/share/doc/kepler-c/README.md" "$p/share/doc/kepler-c/copyright" "$p/share/doc/kepler-c/install.md"
	"$p/share/doc/kepler-c/configuration.md"
)
for f in "${want[@]}"; do [ -f "$f" ] || fail "not installed: ${f#"$root"}"; done
units=$(find "$root" -name 'kepler-*.service' | wc -l)
[ "$units" -eq 4 ] || fail "$units systemd units installed, want 4 (collectd, exporter, push, carbon)"
[ -n "$(find "$root" -path '*sysusers.d/kepler.conf')" ] || fail "no sysusers.d/kepler.conf"
[ -n "$(find "$root" -path '*tmpfiles.d/kepler.conf')" ] || fail "no tmpfiles.d/kepler.conf"
ok "cmake --install: $(find "$root" -type f | wc -l) files, every one expected there"

# man pages: render cleanly; every --help option and every example flag is in them
for page in "$p"/share/man/man*/kepler-*.gz; do
	name=$(basename "$page" | sed 's/\.[18]\.gz$//')
	bin=$(ls "$p"/bin/"$name" "$p"/sbin/"$name" 2>/dev/null | head -1)
	warnings=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >"$tmp/page.txt")
	[ -z "$warnings" ] || fail "$name: man -l warns: $warnings"
	# its NAME line is what `man -k kepler` lists: a few words, not a paragraph
	whatis=$(zcat "$page" | sed -n '/^\.SH NAME/{n;p;q}')
	[ "${#whatis}" -le 120 ] || fail "$name: the NAME line is ${#whatis} characters (at most 120): $whatis"
	help=$("$bin" --help) # whole, then searched: grep -q on a pipe would cut it (SIGPIPE under pipefail)
	missing=()
	for opt in $(grep -o -- '--[a-z][a-z0-9.-]*' <<<"$help" | sort -u); do
		grep -q -- "$opt" "$tmp/page.txt" || missing+=("$opt")
	done
	[ ${#missing[@]} -eq 0 ] || fail "$name: options in --help but not in the man page: ${missing[*]}"
	# each example command's flags are options of the program it runs
	while read -r cmd rest; do
		case $cmd in kepler-*) ;; *) continue ;; esac
		b=$(ls "$p"/bin/"$cmd" "$p"/sbin/"$cmd" 2>/dev/null | head -1)
		[ -n "$b" ] || { fail "$name: an example runs $cmd, which is not installed"; continue; }
		h=$("$b" --help)
		for opt in $(grep -o -- ' --[a-z][a-z0-9.-]*' <<<" $rest" | sort -u); do
			grep -q -- "$opt" <<<"$h" || fail "$name: the example flag $opt is not an option of $cmd"
		done
	done < <(sed -n '/^EXAMPLES/,/^FILES/p' "$tmp/page.txt")
	grep -q "^EXIT STATUS" "$tmp/page.txt" || fail "$name: no EXIT STATUS section"
	echo "$name: man page renders, $(grep -c -- '^       --' "$tmp/page.txt") options, examples checked"
done

# the example configuration, as shipped (all commented) and with everything uncommented
conf=$etc/kepler/config.yaml
out=$("$p/bin/kepler-stdout" --config "$conf" --store.path "$tmp/none" 2>&1)
grep -q "no store at" <<<"$out" || fail "the shipped config.yaml does not load: $out"
awk 'body { sub(/^#/, "") } /^$/ { body = 1 } { print }' "$conf" >"$tmp/active.yaml"
keys=$(grep -c '^ *[a-z-]*: ' "$tmp/active.yaml")
# every key is parsed and checked whichever program reads the file
out=$("$p/bin/kepler-stdout" --config "$tmp/active.yaml" --store.path "$tmp/none" 2>&1)
grep -q "no store at" <<<"$out" && ok "config.yaml loads as shipped and with all $keys options uncommented" ||
	fail "the uncommented config.yaml: $out"
finish install
