# The real Spark Connect client (pyspark[connect]) driven by test/connect/*.test.ts and
# bench/connect.ts: `python client.py MODE URL [ARG]` prints one JSON line with what it saw.
# Run from a file, not `python -c` (the client's import can exit in a SPARK_HOME search).
import json
import sys
import threading


def status_of(error):
    """The gRPC status name a client error carries (pyspark shows it in the message, or keeps the gRPC error it replaced)."""
    cause = error.__context__
    if cause is not None and callable(getattr(cause, "code", None)):
        return cause.code().name
    text = str(error)
    for name in ("UNAUTHENTICATED", "PERMISSION_DENIED", "FAILED_PRECONDITION", "INVALID_ARGUMENT", "UNAVAILABLE", "NOT_FOUND"):
        if name in text:
            return name
    return type(error).__name__


def session(url):
    from pyspark.sql import SparkSession
    return SparkSession.builder.remote(url).getOrCreate()


def work(url):
    """What a user does in a session: a sum, a pandas round trip, a temp view, a Python UDF, an interrupt."""
    import pandas as pd
    from pyspark.sql.functions import udf
    spark = session(url)
    out = {"sum": spark.range(10**6).selectExpr("sum(id)").collect()[0][0]}
    frame = pd.DataFrame({"x": [1, 2, 3], "y": ["a", "b", "c"]})
    out["pandas"] = spark.createDataFrame(frame).toPandas().to_dict(orient="list")
    spark.range(5).createOrReplaceTempView("mine")
    out["view"] = spark.sql("select count(*) from mine").collect()[0][0]
    plus_one = udf(lambda v: v + 1, "long")
    out["udf"] = [r[0] for r in spark.range(3).select(plus_one("id")).collect()]
    out["interrupted"] = interrupt_long_query(spark)
    print(json.dumps(out), flush=True)


# How long the interrupt may take, start to end, before the client gives up with every thread's
# stack on stderr (the test shows it): it was once seen to hang, and a bare join waited for ever.
INTERRUPT_BOUND_S = 300


def interrupt_long_query(spark):
    """Starts a query that runs for hours and interrupts it once the server has it (interruptAll names it)."""
    import faulthandler
    faulthandler.dump_traceback_later(INTERRUPT_BOUND_S, exit=True)
    failure = {}

    def run():
        try:
            spark.range(10**13).selectExpr("sum(id * id)").collect()
        except Exception as error:  # the interrupt surfaces as the query's error
            failure["error"] = type(error).__name__
    thread = threading.Thread(target=run)
    thread.start()
    interrupted = []
    while not interrupted and thread.is_alive():
        interrupted = spark.interruptAll()
        thread.join(0.2)
    thread.join()
    faulthandler.cancel_dump_traceback_later()
    return {"operations": len(interrupted), "error": failure.get("error")}


def views(url, name):
    """The temp views this session sees, then one of its own named `name`."""
    spark = session(url)
    seen = sorted(row.viewName for row in spark.sql("show views").collect())
    spark.range(1).createOrReplaceTempView(name)
    print(json.dumps({"seen": seen, "session": spark.client._session_id}), flush=True)


def bench(url, count):
    """The first query's time (a new session: cold when the server starts with it), then `count` small ones, in ms.

    The client's own import (seconds: pandas, pyarrow, grpc) comes before the clock starts: the
    figure is the session's, from its opening to its first answer."""
    import time
    import importlib
    # Outside the timed part: `builder.remote(...)` imports the Connect client itself (pandas,
    # pyarrow, grpc: 1-3 s on a loaded machine), which `from pyspark.sql import SparkSession`
    # does not; a notebook has paid that long before its session's first query.
    importlib.import_module("pyspark.sql.connect.session")
    start = time.perf_counter()
    spark = session(url)
    spark.sql("select 1").collect()
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(int(count)):
        began = time.perf_counter()
        spark.sql("select 1").collect()
        times.append((time.perf_counter() - began) * 1000)
    print(json.dumps({"first": first, "times": times}), flush=True)


def arrow(url, megabytes, rounds):
    """Arrow batches back: `rounds` fetches of about `megabytes` MB each (rows of an id and 92 bytes), after one small warm-up; bytes and ms of each."""
    import time
    spark = session(url)
    rows = int(float(megabytes) * 1e6 / 104)

    def fetch(n):
        frame = spark.range(n).selectExpr("id", "repeat('x', 92) as s")
        if hasattr(frame, "toArrow"):
            return frame.toArrow()
        return spark.client.to_table(frame._plan.to_proto(spark.client))[0]
    fetch(1000)
    size, times = 0, []
    for _ in range(int(rounds)):
        began = time.perf_counter()
        size = fetch(rows).nbytes
        times.append((time.perf_counter() - began) * 1000)
    print(json.dumps({"bytes": size, "times": times}), flush=True)


def count(url):
    """spark.range(10).count() in a new session: the answer, the server's Spark version and the session id."""
    spark = session(url)
    out = {"count": int(spark.range(10).count()), "version": spark.version, "session": spark.client._session_id}
    print(json.dumps(out), flush=True)


def traces(url):
    """What a new session sees beside its own: tables and temp views of its catalog, global temp views."""
    spark = session(url)
    out = {
        "tables": sorted(table.name for table in spark.catalog.listTables()),
        "views": sorted(row.viewName for row in spark.sql("show views").collect()),
        "globalViews": sorted(row.viewName for row in spark.sql("show views in global_temp").collect()),
    }
    print(json.dumps(out), flush=True)


def sql(url, query):
    """One query in a new session: its first row's first value, as text."""
    print(json.dumps({"value": str(session(url).sql(query).collect()[0][0])}), flush=True)


def status(url):
    """One call: "OK", or the gRPC status it was refused with and the message."""
    try:
        session(url).range(1).collect()
        print(json.dumps({"status": "OK"}), flush=True)
    except Exception as error:
        print(json.dumps({"status": status_of(error), "message": str(error)[:800]}), flush=True)


def statuses(urls):
    """One call per URL, each in a session of its own (created, never the last one reused): what
    status() says of each, in order. One process for several calls: its start (the client's
    import) costs more than the calls."""
    from pyspark.sql import SparkSession
    out = []
    for url in urls:
        try:
            SparkSession.builder.remote(url).create().range(1).collect()
            out.append({"status": "OK"})
        except Exception as error:
            out.append({"status": status_of(error), "message": str(error)[:800]})
    print(json.dumps({"statuses": out}), flush=True)


def hold(url):
    """A client that keeps its SparkSession across a restart of the service: a temp view, then one
    line per step read from stdin, each answered by one JSON line (its next call's outcome)."""
    spark = session(url)
    spark.range(3).createOrReplaceTempView("kept")
    print(json.dumps({"ready": spark.sql("select count(*) from kept").collect()[0][0], "session": spark.client._session_id}), flush=True)
    for _ in sys.stdin:
        try:
            out = {"status": "OK", "count": spark.sql("select count(*) from kept").collect()[0][0]}
        except Exception as error:
            out = {"status": status_of(error), "message": str(error)[:800]}
        print(json.dumps(out), flush=True)


def refused(url):
    """One call that the endpoint refuses: its status, message and error class, and whether the
    client then counts its session stopped (so that getOrCreate() builds a new one)."""
    from pyspark.sql import SparkSession
    spark = session(url)
    out = {"status": "OK"}
    try:
        spark.range(1).collect()
    except Exception as error:
        condition = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
        out = {"status": status_of(error), "message": str(error)[:800], "errorClass": condition() if condition else None}
    out["stopped"] = getattr(spark, "is_stopped", None)
    out["active"] = SparkSession.getActiveSession() is not None
    print(json.dumps(out), flush=True)


def artifact(url, megabytes):
    """Adds a file of `megabytes` MiB to a new session as an artifact (the server stages what it
    receives in its temp dir, then keeps it with the session), then one query: what came of each."""
    import os
    import tempfile
    spark = session(url)
    out = {"version": spark.version}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "big.bin")
        block = os.urandom(1 << 20)
        with open(path, "wb") as file:
            for _ in range(int(megabytes)):
                file.write(block)
        try:
            spark.addArtifacts(path, file=True)
            out["added"] = True
        except Exception as error:
            out.update(added=False, status=status_of(error), message=str(error)[:1500])
    out["count"] = int(spark.range(10).count())
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    mode, url = sys.argv[1], sys.argv[2]
    {"work": lambda: work(url), "views": lambda: views(url, sys.argv[3]), "status": lambda: status(url), "statuses": lambda: statuses(sys.argv[2:]), "hold": lambda: hold(url), "refused": lambda: refused(url), "count": lambda: count(url),
     "traces": lambda: traces(url), "bench": lambda: bench(url, sys.argv[3]), "arrow": lambda: arrow(url, sys.argv[3], sys.argv[4]),
     "artifact": lambda: artifact(url, sys.argv[3]), "sql": lambda: sql(url, sys.argv[3])}[mode]()
