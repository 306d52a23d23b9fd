"""Kernel Gateway's own clients against the notebook gateway at URL (…/notebooks), key TOKEN.

Prints one JSON object: what tornado's HTTP client got for a kernel started with a JSON body
and no JSON Content-Type, what `requests` got for /api and a non-UUID id, and the outputs of two
cells run to completion by jupyter_server's own GatewayKernelManager and GatewayKernelClient
(whose websocket frames carry no `channel`). Run with the test tools' Python.

(nbclient on a GatewayKernelManager fails on its own: when a kernel_info_request is not answered
within 1 s, as while Spark starts, jupyter_client asks the manager's provisioner, which a gateway
manager has none of.)
"""
import asyncio
import json
import sys

import requests
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayKernelManager
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
# Its websocket's read timeout (40 s by default): nothing comes while Spark starts, which under load takes longer.
gateway.KERNEL_LAUNCH_TIMEOUT = 300


async def run_cells(cells):
    """jupyter_server's own gateway kernel client: its frames carry no `channel`."""
    manager = GatewayKernelManager()
    await manager.start_kernel(kernel_name="default")
    client = manager.client()
    await client.start_channels()
    outputs = []
    try:
        for code in cells:
            msg_id = client.execute(code)
            cell = []
            while True:
                msg = await client.iopub_channel.get_msg(timeout=300)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                if kind in ("stream", "execute_result", "error"):
                    cell.append({"output_type": kind, **msg["content"]})
                if kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
            reply = await client.shell_channel.get_msg(timeout=300)
            cell.append({"output_type": "reply", "status": reply["content"]["status"], "parent": reply["parent_header"].get("msg_id") == msg_id})
            outputs.append(cell)
    finally:
        client.stop_channels()
        await manager.shutdown_kernel()
    return outputs


report["notebook"] = asyncio.run(run_cells(["print(sum(range(10)))", "sc.parallelize(range(100)).count()"]))
print(json.dumps(report, default=str))
