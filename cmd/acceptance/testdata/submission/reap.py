"""D5: find the sandboxes of run $CAPSTONE_RUN_ID (metadata capstone-run-id) and delete them."""
import os
import urllib.parse

from osbhttp import call

run = os.environ["CAPSTONE_RUN_ID"]
q = urllib.parse.urlencode({"metadata": "capstone-run-id=" + run, "pageSize": 100})
st, page = call("GET", "/v1/sandboxes?" + q)
removed = 0
for it in page.get("items", []):
    st, _ = call("DELETE", "/v1/sandboxes/%s" % it["id"])
    if st == 204:
        removed += 1
    print("DELETE", it["id"], st)
print("removed", removed)
