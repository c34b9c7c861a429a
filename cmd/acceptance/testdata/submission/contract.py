"""M0: create, endpoint, keyless create, delete, get after delete; writes {out}/contract.json."""
import argparse
import json
import os

from osbhttp import call

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
out = ap.parse_args().out
req = {"image": {"uri": "python:3.12"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 120,
       "resourceLimits": {"cpu": "1", "memory": "1Gi"},
       "metadata": {"capstone-run-id": os.environ.get("CAPSTONE_RUN_ID", "")}}
ex = []
st, sb = call("POST", "/v1/sandboxes", req)
sid = sb.get("id", "")
ex.append({"step": "create", "method": "POST", "path": "/v1/sandboxes", "status": st,
           "fields": {"id": sid, "status.state": sb.get("status", {}).get("state", ""), "createdAt": sb.get("createdAt", "")}})
try:
    st, ep = call("GET", "/v1/sandboxes/%s/endpoints/44772" % sid)
    ex.append({"step": "endpoint", "method": "GET", "path": "/v1/sandboxes/%s/endpoints/44772" % sid, "status": st,
               "fields": {"endpoint": ep.get("endpoint", "")}})
    st, err = call("POST", "/v1/sandboxes", req, key=False)
    ex.append({"step": "unauthorized", "method": "POST", "path": "/v1/sandboxes", "status": st,
               "fields": {"code": err.get("code", "")}})
finally:
    st, _ = call("DELETE", "/v1/sandboxes/%s" % sid)
    ex.append({"step": "delete", "method": "DELETE", "path": "/v1/sandboxes/%s" % sid, "status": st, "fields": {}})
st, _ = call("GET", "/v1/sandboxes/%s" % sid)
ex.append({"step": "get_after_delete", "method": "GET", "path": "/v1/sandboxes/%s" % sid, "status": st, "fields": {}})
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "contract.json"), "w") as f:
    json.dump({"exchanges": ex}, f, indent=2)
