"""The ceiling for messages/s: plain ipykernels driven straight over ZMQ, no Jupyter server, no gateway.

Started by bench/gateway/compare.ts with the same workload as its messages/s row (K kernels, each
running `1` N times in sequence, all kernels at once) and the same kernels as the peer's (the
`python3` kernelspec of the product's virtualenv). One asyncio jupyter_client in this process
plays every client. Whatever relays messages between a Jupyter server and a kernel can only add
to this path, so no gateway's messages/s can exceed this figure. Prints one JSON line.

The kernels' sockets are Unix sockets (ZMQ's ipc transport), not TCP ports: a port the client picks
free is bound by the kernel only later, and on a busy machine another process took one in between
once ("Address already in use", the kernel died before replying). Loopback TCP would only be
slower, so the figure stays a ceiling.
"""
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time

from jupyter_client.manager import AsyncKernelManager


async def run_cells(client, count):
    """Each cell: its reply on shell, then iopub up to its `idle` (both queue in their sockets meanwhile)."""
    received = 0
    for _ in range(count):
        msg_id = client.execute("1")
        for read, last in ((client.get_shell_msg, "execute_reply"), (client.get_iopub_msg, "idle")):
            while True:
                msg = await read(timeout=60)
                received += 1
                mine = msg["parent_header"].get("msg_id") == msg_id
                kind = msg["content"].get("execution_state") if msg["msg_type"] == "status" else msg["msg_type"]
                if mine and kind == last:
                    break
    return received


async def main(kernels, cells, sockets):
    managers = [AsyncKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "k%d" % i)) for i in range(kernels)]
    await asyncio.gather(*(m.start_kernel() for m in managers))
    clients = [m.client() for m in managers]
    for c in clients:
        c.start_channels()
    await asyncio.gather(*(c.wait_for_ready(timeout=120) for c in clients))
    await asyncio.gather(*(run_cells(c, 5) for c in clients))  # warm-up
    started = time.perf_counter()
    counts = await asyncio.gather(*(run_cells(c, cells) for c in clients))
    seconds = time.perf_counter() - started
    for c in clients:
        c.stop_channels()
    await asyncio.gather(*(m.shutdown_kernel(now=True) for m in managers))
    print(json.dumps({"messages": sum(counts), "seconds": seconds, "per_second": sum(counts) / seconds}))


if __name__ == "__main__":
    sockets = tempfile.mkdtemp(prefix="kernel-ceiling-")
    try:
        asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sockets))
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
