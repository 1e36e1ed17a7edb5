#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The chart's values table, made from values.yaml's own comments.

Each key documented in deploy/helm/kepler-c/values.yaml by a line
"# -- TEXT" just above it becomes a row: the key's dotted path, its default
(from the parsed file, as JSON; a long one is abridged) and TEXT.

  helm-values-doc.py                 print the table
  helm-values-doc.py --write DOC     put it into DOC between the markers
  helm-values-doc.py --check DOC     exit 1 (and say what differs) unless DOC holds it

The markers are the lines "<!-- values: tools/helm-values-doc.py -->" and
"<!-- end of values -->". tools/test-k8s-manifests.sh runs --check on
docs/kubernetes.md, and also checks that every key of values.yaml is
documented.
"""
import json
import os
import re
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
VALUES = os.path.join(HERE, "..", "deploy", "helm", "kepler-c", "values.yaml")
BEGIN = "<!-- values: tools/helm-values-doc.py -->"
END = "<!-- end of values -->"
KEY = re.compile(r"^( *)([A-Za-z][-A-Za-z0-9_.]*):( |$)")


def rows():
    with open(VALUES) as f:
        lines = f.read().splitlines()
    values = yaml.safe_load("\n".join(lines))
    stack, doc, out, documented = [], None, [], set()
    for line in lines:
        s = line.strip()
        if s.startswith("# -- "):
            doc = s[5:]
            continue
        m = KEY.match(line)
        if not m:
            if not s.startswith("#"):
                doc = None
            continue
        indent, key = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if stack and stack[-1][1] in ("config",):  # inside free-form blocks: not chart keys
            doc = None
            continue
        if len(stack) >= 2 and stack[0][1] == "push" and stack[1][1] == "config":
            doc = None
            continue
        stack.append((indent, key))
        path = ".".join(k for _, k in stack)
        if doc is not None:
            v = values
            for _, k in stack:
                v = v[k]
            default = json.dumps(v, ensure_ascii=False)
            if len(default) > 60:
                default = "see values.yaml"
            out.append((path, default, doc))
            documented.add(path)
        doc = None
    return out, documented, values


def leaves(values, prefix=""):
    """Every key a user sets: nested maps' keys, except inside free-form maps."""
    for k, v in values.items():
        path = f"{prefix}{k}"
        free = path in ("config", "push.config") or not isinstance(v, dict) or not v
        if free or all(not isinstance(x, dict) for x in v.values()) and path.count(".") >= 2:
            yield path
        else:
            yield from leaves(v, path + ".")


def table():
    out, _, _ = rows()
    esc = lambda t: t.replace("|", "\\|")
    lines = ["| Key | Default | Description |", "|---|---|---|"]
    lines += [f"| `{p}` | `{esc(d)}` | {esc(t)} |" for p, d, t in out]
    return "\n".join(lines)


def undocumented():
    _, documented, values = rows()
    missing = []
    for path in leaves(values):
        parts = path.split(".")
        if not any(".".join(parts[:i]) in documented for i in range(1, len(parts) + 1)):
            missing.append(path)
    return missing


def main():
    args = sys.argv[1:]
    if not args:
        print(table())
        return 0
    mode, doc = args[0], args[1]
    with open(doc) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        print(f"helm-values-doc.py: {doc} has no '{BEGIN}' ... '{END}' markers", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    want = f"{head}{BEGIN}\n{table()}\n{END}{tail}"
    if mode == "--write":
        with open(doc, "w") as f:
            f.write(want)
        return 0
    bad = 0
    if want != text:
        have = rest.split(END, 1)[0].strip().splitlines()
        new = table().splitlines()
        for line in sorted(set(new) - set(have))[:5]:
            print(f"  values.yaml has: {line[:150]}")
        for line in sorted(set(have) - set(new))[:5]:
            print(f"  {doc} has:   {line[:150]}")
        print(f"FAIL: {doc}'s values table is not values.yaml's (tools/helm-values-doc.py --write {doc})")
        bad = 1
    missing = undocumented()
    if missing:
        print(f"FAIL: values.yaml keys without a '# --' line: {', '.join(missing)}")
        bad = 1
    if not bad:
        print(f"ok: {doc}'s values table is values.yaml's ({len(rows()[0])} keys, each documented)")
    return bad


if __name__ == "__main__":
    sys.exit(main())
