import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from osbhttp import call  # noqa: E402


class IntegrationTest(unittest.TestCase):
    def test_create_delete(self):
        st, sb = call("POST", "/v1/sandboxes", {"image": {"uri": "python:3.12"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 120,
                                                    "resourceLimits": {"cpu": "1", "memory": "1Gi"}})
        self.assertEqual(st, 202)
        st, _ = call("DELETE", "/v1/sandboxes/%s" % sb["id"])
        self.assertEqual(st, 204)


if __name__ == "__main__":
    unittest.main()
