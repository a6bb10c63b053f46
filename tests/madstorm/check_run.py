#!/usr/bin/env python3
"""Checks madstorm JSON results: every count adds up, no wrong answers, all
issued queries answered, the expected host and query counts, the oracle
checked every PathRecord (--oracle), or the counts equal another run's
(--same-counts OTHER.json: a merge of shards against one whole run). Usage:
  check_run.py RESULT.json [--hosts N] [--queries N] [--oracle] [--same-counts OTHER.json]"""
import json
import sys

args = sys.argv[1:]
path = args.pop(0)
want = {}
while args:
    key = args.pop(0).lstrip("-")
    want[key] = True if key == "oracle" else args.pop(0)
r = json.load(open(path))
c = r["counts"]
problems = []
if not r["counts_add_up"]:
    problems.append("counts do not add up")
if c["errors"] != 0:
    problems.append(f"{c['errors']} wrong answers: {c['error_kinds']}")
if c["answered"] != c["issued"]:
    problems.append(f"issued {c['issued']} but answered {c['answered']}")
if "hosts" in want and r["config"]["hosts"] != int(want["hosts"]):
    problems.append(f"{r['config']['hosts']} hosts, expected {want['hosts']}")
if "queries" in want and c["issued"] != int(want["queries"]):
    problems.append(f"{c['issued']} queries, expected {want['queries']}")
if "oracle" in want:
    o = r.get("oracle")
    expect = c["answered_by_kind"]["path_record"] + c["records"]
    if not o:
        problems.append("no oracle ran")
    elif o["checked"] != expect or o["wrong"] != 0:
        problems.append(f"oracle checked {o['checked']} of {expect} PathRecords, {o['wrong']} wrong")
if "same-counts" in want:
    other = json.load(open(want["same-counts"]))
    for k, v in other["counts"].items():
        if c.get(k) != v:
            problems.append(f"counts.{k} = {c.get(k)}, {want['same-counts']} has {v}")
    if r["latency"]["count"] != other["latency"]["count"]:
        problems.append("latency sample counts differ")
    if r.get("oracle") and other.get("oracle") and r["oracle"]["checked"] != other["oracle"]["checked"]:
        problems.append("oracle counts differ")
for p in problems:
    print(f"{path}: {p}")
print(f"{path}: {c['issued']} issued, {c['answered']} answered, {c['errors']} errors")
sys.exit(1 if problems else 0)
