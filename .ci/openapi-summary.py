"""The end of .ci/openapi-check: what the schemathesis runs did, in one place.

    openapi-summary.py WORK_DIR DOC... 

Reads each run's console output (WORK_DIR/st-*.log), its JUnit report, and the server's
request log (WORK_DIR/server.log: one line per request with its route template and status),
and prints cases per run, the documents' operations reached and reached with a 2xx,
failures and warnings, and names the operations never answered with a 2xx."""
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

work, docs = sys.argv[1], sys.argv[2:]
METHODS = {"get", "put", "post", "patch", "delete", "head", "options"}

# Every documented operation, as the server's trace names it (its route template).
operations = {}
for path in docs:
    doc = json.load(open(path))
    base = "/v1"
    for route, item in doc.get("paths", {}).items():
        prefix = "" if any(s.get("url") == "/" for s in item.get("servers", [])) else base
        for method in item:
            if method in METHODS:
                operations[(method.upper(), prefix + route)] = os.path.basename(path).split(".")[0]

trace = re.compile(r'method=(\w+) route="([^"]+)" status=(\d+)')
seen, ok = set(), set()
with open(os.path.join(work, "server.log"), errors="replace") as log:
    for line in log:
        m = trace.search(line)
        if not m:
            continue
        key = (m.group(1), m.group(2))
        seen.add(key)
        # A socket's success is its upgrade: 101 Switching Protocols.
        if m.group(3).startswith("2") or m.group(3) == "101":
            ok.add(key)

total_cases = total_failures = total_warnings = 0
print("== summary")
print(f"{'run':<40} {'cases':>7} {'failures':>9} {'warnings':>9}")
for out in sorted(glob.glob(os.path.join(work, "st-*.log"))):
    name = os.path.basename(out)[3:-4]
    text = open(out, errors="replace").read()
    m = re.search(r"Test cases:\s*\n\s*(\d+) generated", text)
    cases = int(m.group(1)) if m else 0
    # The SUMMARY's "Warnings:" block lists one "⚠️" line per kind of warning.
    block = text.split("Warnings:", 1)[1] if "Warnings:" in text else ""
    warnings = sum(1 for line in block.splitlines() if line.strip().startswith("⚠"))
    failures = 0
    for report in glob.glob(os.path.join(work, "junit", name, "*.xml")):
        root = ET.parse(report).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        failures += sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    if "Internal Error" in text:
        failures += 1
    total_cases += cases
    total_failures += failures
    total_warnings += warnings
    print(f"{name:<40} {cases:>7} {failures:>9} {warnings:>9}")
print(f"{'all runs':<40} {total_cases:>7} {total_failures:>9} {total_warnings:>9}")
documented = set(operations)
reached, reached_ok = documented & seen, documented & ok
print(f"operations documented: {len(documented)}; reached: {len(reached)}; "
      f"reached with a 2xx (101 for a socket): {len(reached_ok)}")
never = sorted(documented - ok, key=lambda k: (k[1], k[0]))
if never:
    print(f"never answered with a 2xx ({len(never)}):")
    for method, route in never:
        status = "reached" if (method, route) in seen else "not reached"
        print(f"  {method} {route} ({status})")
