import json
import os
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from osbhttp import call  # noqa: E402


def run_command(endpoint, headers, command):
    """POST /command on the sandbox's execd; returns the SSE stream's text."""
    base = endpoint if "://" in endpoint else "http://" + endpoint
    req = urllib.request.Request(base.rstrip("/") + "/command", data=json.dumps({"command": command}).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.status, r.read().decode("utf-8", "replace")


class IntegrationTest(unittest.TestCase):
    def test_create_execute_delete(self):
        """create -> execute -> destroy: the course's integration test."""
        st, sb = call("POST", "/v1/sandboxes", {"image": {"uri": "python:3.12"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 120,
                                                    "resourceLimits": {"cpu": "1", "memory": "1Gi"}})
        self.assertEqual(st, 202)
        sid = sb["id"]
        try:
            deadline = time.time() + 60
            while (sb.get("status") or {}).get("state") != "Running" and time.time() < deadline:
                time.sleep(0.2)
                st, sb = call("GET", "/v1/sandboxes/%s" % sid)
            self.assertEqual((sb.get("status") or {}).get("state"), "Running")
            st, ep = call("GET", "/v1/sandboxes/%s/endpoints/44772" % sid)
            self.assertEqual(st, 200)
            st, text = run_command(ep["endpoint"], ep.get("headers"), "echo integration-ok")
            self.assertEqual(st, 200)
            self.assertIn("integration-ok", text)
        finally:
            st, _ = call("DELETE", "/v1/sandboxes/%s" % sid)
        self.assertEqual(st, 204)


if __name__ == "__main__":
    unittest.main()
