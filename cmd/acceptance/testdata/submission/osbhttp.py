"""Raw HTTP to OpenSandbox (standard library only)."""
import json
import os
import urllib.error
import urllib.request

DOMAIN = os.environ["OPEN_SANDBOX_DOMAIN"]
KEY = os.environ["OPEN_SANDBOX_API_KEY"]
BASE = DOMAIN if "://" in DOMAIN else "http://" + DOMAIN


def call(method, path, body=None, key=True):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if key:
        req.add_header("OPEN-SANDBOX-API-KEY", KEY)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw.strip() else {})
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, {}
