"""What waiting costs while Spark runs, for N concurrent tasks: the provider's trigger (N waits on
one asyncio loop, as Airflow's triggerer runs them; no worker slot) against a worker slot per task
polling GET every POLL seconds (what a polling operator does) and a worker slot per task waiting as
the operator does with deferrable=False (on the events stream; past the key's cap of streams, 16,
by reading the state every 30 s). One mode per process, so each one's CPU and RSS are its own.

  python cost.py URL MODE     (MODE: trigger | poll | worker-events; env BENCH_TASKS, BENCH_HOLD_S, BENCH_POLL_S)
Prints one JSON line: mode, tasks, worker slots held while Spark ran, wall and CPU seconds of the
waiting process, requests sent while waiting, peak RSS.
"""
import asyncio
import json
import logging
import os
import resource
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List

from submission_service import END_STATES, Client

from submission_service_airflow.operators import wait_in_worker
from submission_service_airflow.triggers import SparkApplicationTrigger

LOG = logging.getLogger("bench")

TASKS = int(os.environ.get("BENCH_TASKS", "20"))
HOLD_S = float(os.environ.get("BENCH_HOLD_S", "20"))
POLL_S = float(os.environ.get("BENCH_POLL_S", "10"))


def submit_all(client: Client) -> List[str]:
    """N applications of the fake driver (the service's test double), each running HOLD_S seconds."""
    job = "bench-" + uuid.uuid4().hex[:6]
    config = {"type": "Python", "mainApplicationFile": "local:///bench.py", "arguments": ["sleep=%g" % HOLD_S],
              "executor": {"cores": 1, "instances": 1}}
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda _: client.submit(job_name=job, config_overrides=config)["appName"], range(TASKS)))


async def trigger_waits(names: List[str]) -> List[Dict[str, Any]]:
    async def one(name: str) -> Dict[str, Any]:
        events = [event.payload async for event in SparkApplicationTrigger(name).run()]
        return events[-1]
    return list(await asyncio.gather(*(one(name) for name in names)))


def poll_wait(client: Client, name: str, requests: List[int]) -> str:
    while True:
        requests.append(1)
        state = client.get(name)["state"]
        if state in END_STATES:
            return state
        time.sleep(POLL_S)


def main(url: str, mode: str) -> None:
    os.environ.setdefault("AIRFLOW_CONN_SUBMISSION_SERVICE_DEFAULT", json.dumps({"conn_type": "submission_service", "host": url}))
    with Client(url, timeout=60) as client:
        names = submit_all(client)
        requests: List[int] = []
        cpu0, wall0 = time.process_time(), time.monotonic()
        if mode == "trigger":
            ends = [event["state"] for event in asyncio.run(trigger_waits(names))]
            slots, threads = 0, threading.active_count()
        else:
            wait = (lambda name: poll_wait(client, name, requests)) if mode == "poll" else (
                lambda name: wait_in_worker(client, name, None, LOG)["state"])
            with ThreadPoolExecutor(max_workers=TASKS) as pool:
                ends = list(pool.map(wait, names))
                threads = threading.active_count()
            slots = TASKS
        cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    assert ends == ["COMPLETED"] * TASKS, ends
    print(json.dumps({"mode": mode, "tasks": TASKS, "workerSlots": slots, "threads": threads, "waitS": round(wall, 2),
                      "cpuS": round(cpu, 3), "requests": len(requests) if mode == "poll" else None,
                      "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
