"""Kernel Gateway's own clients against the notebook gateway at URL (…/notebooks), key TOKEN.

Prints one JSON object: what tornado's HTTP client got for a kernel started with a JSON body
and no JSON Content-Type, what `requests` got for /api and a non-UUID id, and the outputs of a
notebook executed to completion by nbclient through jupyter_server's GatewayKernelManager
(whose websocket frames carry no `channel`). Run with the test tools' Python.
"""
import json
import sys

import nbformat
import requests
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayKernelManager
from nbclient import NotebookClient
from tornado.httpclient import HTTPClient, HTTPClientError

url, token = sys.argv[1], sys.argv[2]
auth = {"Authorization": f"token {token}"}
report = {}

# tornado adds `application/x-www-form-urlencoded` to a POST without a Content-Type.
http = HTTPClient()
for label, headers in (("no_type", {}), ("text_plain", {"Content-Type": "text/plain"})):
    try:
        response = http.fetch(f"{url}/api/kernels", method="POST", headers=auth | headers, body=json.dumps({"name": "default"}))
        report[label] = {"status": response.code, "body": json.loads(response.body)}
    except HTTPClientError as error:
        report[label] = {"status": error.code, "body": error.response.body.decode() if error.response else ""}
http.close()
for label in ("no_type", "text_plain"):
    kernel = report[label]["body"]
    if isinstance(kernel, dict) and "id" in kernel:
        report[label]["deleted"] = requests.delete(f"{url}/api/kernels/{kernel['id']}", headers=auth, timeout=60).status_code

version = requests.get(f"{url}/api", headers=auth, timeout=30)
report["version"] = {"status": version.status_code, "body": version.json()}
report["non_uuid"] = {
    method: requests.request(method, f"{url}/api/kernels/not-a-uuid{suffix}", headers=auth, timeout=30).status_code
    for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/interrupt"))
}

gateway = GatewayClient.instance()
gateway.url = url
gateway.auth_token = token
notebook = nbformat.v4.new_notebook(cells=[
    nbformat.v4.new_code_cell("print(sum(range(10)))"),
    nbformat.v4.new_code_cell("sc.parallelize(range(100)).count()"),
])
manager = GatewayKernelManager(kernel_name="default")
NotebookClient(notebook, km=manager, kernel_name="default", timeout=300, startup_timeout=300).execute()
report["notebook"] = [cell.outputs for cell in notebook.cells]
print(json.dumps(report))
