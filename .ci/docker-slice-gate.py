#!/usr/bin/env python3
"""The docker slice's gate (.ci/test-docker.sh): the reference's M0, M1 and M2 on the real control plane.

Usage: docker-slice-gate.py REPORT_JSON [ENTRY ...]   (entries default to M0 M1 M2)

Each entry must be passed. A not-measured outcome (under a passed entry too) fails the gate unless it is a
documented limit of a real target: category unsupported_by_target and a reason naming one of LIMITS
(README "Grading against a real OpenSandbox on Docker"; harness/fidelity/FIDELITY.md "Known differences").
Failed, harness error, timeout, or an undocumented not-measured fails it. Exit 0 = pass, 1 = fail.
Tested by TestDockerSliceGate (harness/dockertarget).
"""
import json, sys
# Documented limits of a real target: the only reasons a not-measured M0-M2 outcome may give here.
LIMITS = (
    "the target has no upstream",  # offline: an allowed host gets SERVFAIL (FIDELITY.md: allowed host without upstream)
    "no audit trail",              # a real OpenSandbox has no audit of commands/files/egress (CONTRACT §3.4)
    "offers no way to",            # fault injection needs the bundled server's admin API (the older wording)
    "injects this fault through the bundled server's admin API only",  # the same limit, steps/drill.go's wording
)
d = json.load(open(sys.argv[1]))
entries = sys.argv[2:] or ["M0", "M1", "M2"]
m = {e["id"]: e for e in d["milestones"]}
bad = []
for k in entries:
    e = m.get(k)
    if e is None:
        bad.append(f"{k}: no verdict in the report")
        continue
    v = e.get("verdict")
    print(f"docker target: {k} {v} {e.get('category', '')} {e.get('reason', '')[:200]}")
    undocumented = [o for o in e.get("outcomes", []) if o.get("verdict") == "not_measured" and not (
        o.get("category") == "unsupported_by_target" and any(l in o.get("reason", "") for l in LIMITS))]
    if v == "passed" and not undocumented:
        continue
    if v == "not_measured" and e.get("outcomes") and not undocumented:
        print(f"docker target: {k} not measured, a documented real-target limit")
        continue
    why = "; ".join(f"{o.get('scenario', '')}: {o.get('category', '')} {o.get('reason', '')[:160]}" for o in undocumented)
    bad.append(f"{k} {v}" + (f" (not measured without a documented real-target limit: {why})" if undocumented else f": {e.get('reason', '')[:200]}"))
for b in bad:
    print(f"docker target: GATE: {b}")
sys.exit(1 if bad else 0)
