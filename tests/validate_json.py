#!/usr/bin/python3
"""Validate JSON lines on stdin against a JSON Schema (Debian's python3-jsonschema).
Usage: validate_json.py SCHEMA < LINES   -> prints the count, exit 1 on the first invalid line."""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
n = 0
for n, line in enumerate(sys.stdin, 1):
    try:
        validator.validate(json.loads(line))
    except (ValueError, jsonschema.ValidationError) as e:
        print(f"line {n}: {e}".splitlines()[0])
        sys.exit(1)
print(n)
