#!/usr/bin/env python3
"""Checks madstorm JSON results: every count adds up, no wrong answers, all
issued queries answered, the expected host count. Usage:
  check_run.py RESULT.json [--hosts N] [--queries N]"""
import json
import sys

args = sys.argv[1:]
path = args.pop(0)
want = {}
while args:
    key = args.pop(0).lstrip("-")
    want[key] = int(args.pop(0))
r = json.load(open(path))
c = r["counts"]
problems = []
if not r["counts_add_up"]:
    problems.append("counts do not add up")
if c["errors"] != 0:
    problems.append(f"{c['errors']} wrong answers: {c['error_kinds']}")
if c["answered"] != c["issued"]:
    problems.append(f"issued {c['issued']} but answered {c['answered']}")
if "hosts" in want and r["config"]["hosts"] != want["hosts"]:
    problems.append(f"{r['config']['hosts']} hosts, expected {want['hosts']}")
if "queries" in want and c["issued"] != want["queries"]:
    problems.append(f"{c['issued']} queries, expected {want['queries']}")
for p in problems:
    print(f"{path}: {p}")
print(f"{path}: {c['issued']} issued, {c['answered']} answered, {c['errors']} errors")
sys.exit(1 if problems else 0)
