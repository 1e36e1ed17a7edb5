#!/usr/bin/env bash
# The maps a newcomer reads are whole: docs/development.md names every
# source file of the product (include/kepler, common, store, collectd,
# readers, bpf, tools' C), and names none that is gone; tests/README.md maps
# every product .c file to its tests, and names every file of tests/ by
# its path there (collectd/test_meter.c; data/ and golden/ as folders).
# Usage: test_code_maps.sh SOURCE_DIR
set -uo pipefail
src=$(cd "$1" && pwd)
exec python3 - "$src" <<'PY'
import os, re, sys

src = sys.argv[1]
fails = 0

def fail(msg):
    global fails
    print("FAIL: " + msg)
    fails += 1

def named(md):
    """Paths a map names: **`FOLDER/`** sets the folder; `NAME`s in table rows after it join it."""
    out, folder = set(), None
    for line in open(os.path.join(src, md), encoding="utf-8"):
        if line.startswith("#"):
            folder = None  # a heading ends the folder's tables
        m = re.match(r"^\*\*`([^`]+/)`\*\*\s*$", line)
        if m:
            folder = m.group(1)
            continue
        if folder and line.startswith("|"):
            first = line.split("|")[1]
            for name in re.findall(r"`([^`]+)`", first):
                out.add(folder + name)
    return out

def product(exts):
    files = set()
    for top in ("include/kepler", "common", "store", "collectd", "readers", "bpf", "tools"):
        for root, _, names in os.walk(os.path.join(src, top)):
            for n in names:
                if n.endswith(exts):
                    files.add(os.path.relpath(os.path.join(root, n), src))
    return files

dev = named("docs/development.md")
every = product((".c", ".h", ".h.in"))
for f in sorted(every - dev):
    fail("docs/development.md's map does not name %s" % f)
for f in sorted(dev - every):
    fail("docs/development.md's map names %s, which does not exist" % f)
print("ok: docs/development.md names %d source files" % len(every & dev))

mapped = named("tests/README.md")
mods = product((".c",))
for f in sorted(mods - mapped):
    fail("tests/README.md maps no tests to %s" % f)
for f in sorted(p for p in mapped - mods):
    fail("tests/README.md maps %s, which does not exist" % f)
print("ok: tests/README.md maps %d modules" % len(mods & mapped))

text = open(os.path.join(src, "tests/README.md"), encoding="utf-8").read()
ticks = set(re.findall(r"`([^`]+)`", text))
seen = 0
for root, dirs, names in os.walk(os.path.join(src, "tests")):
    rel = os.path.relpath(root, os.path.join(src, "tests"))
    if rel.split(os.sep)[0] in ("data", "golden") or "node_modules" in rel.split(os.sep):
        continue  # (node_modules: what npm installs for a test, ignored by git)
    for n in names:
        path = n if rel == "." else os.path.join(rel, n)
        if path == "README.md":
            continue
        seen += 1
        if path not in ticks:
            fail("tests/README.md does not name tests/%s" % path)
for t in sorted(ticks):
    if re.match(r"^(\w+/)?(test|bench|fuzz)_\w+\.(c|sh)$", t) and not os.path.exists(os.path.join(src, "tests", t)):
        fail("tests/README.md names tests/%s, which does not exist" % t)
print("ok: tests/README.md names the %d files of tests/" % seen)
if fails:
    print("%d map check(s) failed" % fails)
    sys.exit(1)
print("all code_maps checks passed")
PY
