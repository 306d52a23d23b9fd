"""The kernel side of the notebook gateway: runs as an application's main file in the driver.

It starts an in-process ipykernel (its ZMQ sockets on loopback only), dials OUT to the gateway
over a websocket (no inbound port on the driver) and bridges the two: Jupyter messages travel as
JSON text, buffers as base64 strings. `sc`, `sqlContext` and `spark` are placeholders until the
SparkSession, started in a background thread, is ready; then they are the real objects.

Environment (set by the gateway in the application's driver env):
  SUBMISSION_SERVICE_GATEWAY_URL   ws://host:port/notebooks
  SUBMISSION_SERVICE_KERNEL_ID     the kernel's UUID
  SUBMISSION_SERVICE_KERNEL_TOKEN_FILE  the path of a file holding the one-time token, consumed by the
                                   first connection (local mode: a file deleted at start; Kubernetes: the
                                   kernel's Secret, mounted read-only): the token never appears in the
                                   app's config. The gateway then hands over a reconnect secret that
                                   lives in this process's memory only
  SUBMISSION_SERVICE_KERNEL_TOKEN  the token itself (older gateways), taken out of the environment at once
  SUBMISSION_SERVICE_SPARK_WAIT    seconds a placeholder waits for Spark (default 120)
  SUBMISSION_SERVICE_KERNEL_POOL   set on a warm pool's kernels: Spark runs one tiny job before the
                                   kernel reports ready, so a claimed kernel's first cell finds warm
                                   Python workers; the claim is kept here and said in every hello, so
                                   a restarted gateway neither hands the kernel out again nor loses it
"""
import asyncio
import base64
import collections
import hmac
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
import uuid

GATEWAY_URL = os.environ.get("SUBMISSION_SERVICE_GATEWAY_URL", "").rstrip("/")
KERNEL_ID = os.environ.get("SUBMISSION_SERVICE_KERNEL_ID", "")
# Taken out of the environment at once so that neither the kernel's users nor child processes see it.
_token = os.environ.pop("SUBMISSION_SERVICE_KERNEL_TOKEN", "")


def _read_token_file():
    """The token is a file only this driver is meant to read; read once, then deleted where it can
    be (local mode). On Kubernetes it is a read-only Secret volume, gone with the Application; the
    token is spent by the first connection anyway."""
    path = os.environ.pop("SUBMISSION_SERVICE_KERNEL_TOKEN_FILE", "")
    if not path:
        return ""
    try:
        with open(path) as f:
            token = f.read().strip()
    except OSError as error:
        print("[launcher] could not read the token file:", error, file=sys.__stderr__, flush=True)
        return ""
    try:
        os.unlink(path)
    except OSError:
        pass  # a read-only mount (Kubernetes Secret)
    return token


_token = _read_token_file() or _token
SPARK_WAIT = float(os.environ.get("SUBMISSION_SERVICE_SPARK_WAIT", "120"))
RESTART_PREFIX = "ss-restart-"
POOLED = bool(os.environ.get("SUBMISSION_SERVICE_KERNEL_POOL"))


STARTED = time.monotonic()

# The driver's stderr as it is now, before ipykernel captures file descriptor 2 (from then on,
# whatever is written there goes to the notebook, inside whichever cell runs): the launcher's
# own lines belong to the application's log, never to a user's output.
try:
    _LOG_FD = os.dup(2)
except OSError:
    _LOG_FD = None


def log(*parts):
    line = " ".join(str(part) for part in ("[launcher]",) + parts) + "\n"
    if _LOG_FD is None:
        return
    try:
        os.write(_LOG_FD, line.encode("utf-8", "replace"))
    except OSError:
        pass  # nowhere left to log to


class SparkState:
    """The SparkSession started in the background, or why it could not start."""

    def __init__(self):
        self.ready = threading.Event()
        self.objects = {}
        self.error = None

    def get(self, name):
        if not self.ready.wait(SPARK_WAIT):
            raise RuntimeError(f"`{name}` is not usable yet: Spark did not start within {SPARK_WAIT:.0f} s "
                               "(the driver may be waiting for cores or memory); try again later")
        if self.error is not None:
            raise RuntimeError(f"`{name}` is not available: Spark failed to start: {self.error}")
        return self.objects[name]


SPARK = SparkState()


def _is_probe(name):
    # IPython and tools look for these on every object they display: answering must never block.
    return name.startswith("_repr_") or name.startswith("_ipython_") or (name.startswith("__") and name.endswith("__"))


class Placeholder:
    """Stands for `sc`, `sqlContext` or `spark` until the SparkSession is ready."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def __getattr__(self, attr):
        if _is_probe(attr):
            raise AttributeError(attr)
        return getattr(SPARK.get(self._name), attr)

    def __repr__(self):
        if SPARK.ready.is_set() and SPARK.error is None:
            return repr(SPARK.objects[self._name])
        state = "failed to start" if SPARK.error is not None else "is starting"
        return f"<{self._name}: Spark {state}; using it waits up to {SPARK_WAIT:.0f} s for the SparkSession>"


def bind_spark(namespace):
    """Puts the real objects (or placeholders while Spark starts) into the user's namespace."""
    for name in ("spark", "sc", "sqlContext"):
        if SPARK.ready.is_set() and SPARK.error is None:
            namespace[name] = SPARK.objects[name]
        else:
            namespace[name] = Placeholder(name)


class KernelUp:
    """Set by main once the kernel exists: its namespace, and what to call when Spark is done."""

    def __init__(self):
        self.event = threading.Event()
        self.namespace = None
        self.on_done = None

    def set(self, namespace, on_done):
        self.namespace, self.on_done = namespace, on_done
        self.event.set()


def start_spark(kernel_up):
    """Runs before the kernel is built: the JVM starts while ipykernel loads (Python first)."""
    try:
        log(f"starting Spark {time.monotonic() - STARTED:.1f} s after the launcher started")
        from pyspark.sql import SparkSession, SQLContext
        spark = SparkSession.builder.appName(os.environ.get("SUBMISSION_SERVICE_KERNEL_SPEC", "kernel")).getOrCreate()
        sc = spark.sparkContext
        # As pyspark's own shell does; `spark._wrapped` no longer exists since Spark 3.3.
        sql_context = SQLContext._get_or_create(sc)
        if POOLED:
            # Starts the Python worker daemon and one worker per task slot, and runs the job path
            # once, before anyone waits for it (idle workers live a minute; the daemon stays).
            slots = max(1, sc.defaultParallelism)
            sc.parallelize(range(slots), slots).count()
        SPARK.objects.update(spark=spark, sc=sc, sqlContext=sql_context)
        log(f"Spark ready {time.monotonic() - STARTED:.1f} s after the launcher started")
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook
        SPARK.error = f"{type(error).__name__}: {error}"
        log("Spark failed to start:", SPARK.error)
    SPARK.ready.set()
    kernel_up.event.wait()
    namespace = kernel_up.namespace
    for name in ("spark", "sc", "sqlContext"):
        if isinstance(namespace.get(name), Placeholder):
            namespace[name] = SPARK.objects.get(name, namespace[name])
    kernel_up.on_done()


def cancel_spark_jobs():
    if SPARK.ready.is_set() and SPARK.error is None:
        try:
            SPARK.objects["sc"].cancelAllJobs()
        except Exception as error:  # noqa: BLE001 - an interrupt must still reach Python
            log("cancelAllJobs failed:", error)


class Bridge:
    """Websocket to the gateway <-> the kernel's ZMQ sockets, in a thread with its own event loop.

    Every use of the ZMQ sockets happens on that thread: they are not thread-safe.
    """

    def __init__(self, connection_file):
        with open(connection_file) as f:
            self.info = json.load(f)
        self.loop = asyncio.new_event_loop()
        self.ws = None
        self.secret = None
        self.outbox = collections.deque(maxlen=5000)  # kernel output while the gateway is away
        self.kernel_busy = False
        self.spark_reported = None
        self.stopping = False
        # A warm pool's kernel handed out to a user: only the gateway's claim sets it, never undone.
        self.claimed = False
        # The id of the key that claimed it, said in every hello: a restarted gateway's owner of the kernel.
        self.owner = None
        # msg_id -> channel of the requests passed to the kernel lately: ipykernel says busy and idle
        # for control requests too, on a thread beside the shell, so only the others say whether a cell runs.
        self.request_channels = collections.OrderedDict()

    def start(self):
        threading.Thread(target=self._run, name="gateway-bridge", daemon=True).start()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    def call_soon(self, fn, *args):
        self.loop.call_soon_threadsafe(fn, *args)

    async def _main(self):
        import zmq
        from jupyter_client.session import Session
        info = self.info
        self.session = Session(key=info["key"].encode(), signature_scheme=info["signature_scheme"], username="gateway")
        # Plain (synchronous) sockets, read on this loop by _drain: see there why not zmq.asyncio.
        ctx = zmq.Context()
        self.sockets = {}
        for channel in ("shell", "control", "stdin"):
            sock = ctx.socket(zmq.DEALER)
            sock.connect(f"tcp://127.0.0.1:{info[channel + '_port']}")
            self.sockets[channel] = sock
        iopub = ctx.socket(zmq.SUB)
        iopub.setsockopt(zmq.SUBSCRIBE, b"")
        iopub.connect(f"tcp://127.0.0.1:{info['iopub_port']}")
        self.sockets["iopub"] = iopub
        for channel, sock in self.sockets.items():
            self.loop.add_reader(sock.getsockopt(zmq.FD), self._drain, channel)
            self._drain(channel)
        await self._connect_forever()

    def _drain(self, channel):
        """Relays what the kernel has sent on one socket, until the socket says it has nothing more.

        A ZMQ socket's file descriptor signals by edge, and any operation on the socket, a send too,
        may take the signal of a message that has just arrived. So after every wake-up and after
        every send, the socket is asked (ZMQ_EVENTS) and read until it has nothing left, as libzmq
        asks of anyone polling its descriptor. zmq.asyncio did this for its own sends, but
        jupyter_client's Session.send writes through a synchronous shadow of the socket, behind the
        wrapper's back: a reply that arrived during such a send never woke the reader, and the
        kernel's shell replies stopped for good (Notebook 7 cells left at `[*]`).
        """
        import zmq
        sock = self.sockets[channel]
        for _ in range(500):
            if not sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return
            self._relay(channel, sock.recv_multipart(zmq.NOBLOCK))
        # A flood: let the websocket and the other sockets have a turn, then go on (no edge will come).
        self.loop.call_soon(self._drain, channel)

    def _relay(self, channel, frames):
        try:
            text, msg_type, parent_id, state = self._relay_text(channel, frames)
        except Exception as error:  # noqa: BLE001 - a bad frame must not stop the relay
            log("undecodable kernel message on", channel, error)
            return
        if state is not None and not parent_id.startswith(RESTART_PREFIX) and self.request_channels.get(parent_id) != "control":
            self.kernel_busy = state == "busy"
        if channel == "shell" and parent_id.startswith(RESTART_PREFIX):
            # The kernel's state after the reset, and whether the reset itself worked.
            content = json.loads(text.split("\n", 1)[1]).get("content") or {}
            ok = content.get("status") == "ok"
            error = None if ok else f"{content.get('ename', 'error')}: {content.get('evalue', '')}"
            self._send({"op": "restarted", "busy": self.kernel_busy, "ok": ok, "error": error})
            return
        self._send_text(text)

    def _send_to_kernel(self, channel, msg, buffers=()):
        import zmq
        frames = self.session.serialize(msg) + list(buffers)
        try:
            self.sockets[channel].send_multipart(frames, zmq.NOBLOCK)
        except zmq.Again:
            # Thousands of requests queued and the kernel not reading them: this one is not delivered.
            log("the kernel is not reading its", channel, "socket: a message was dropped")
        self._drain(channel)

    def _relay_text(self, channel, frames):
        """One kernel message as the gateway relays it, built from the wire frames as they are.

        The kernel's frames are JSON already: they are checked (HMAC), and only the small header
        and parent header are parsed, for routing; content is parsed only for `status`. The text
        is a routing line the gateway reads, a newline, then the Jupyter message it passes on
        without parsing it (the legacy JSON protocol's fields, buffers as base64).
        """
        _, msg_frames = self.session.feed_identities(frames)
        signature, header_b, parent_b, metadata_b, content_b = msg_frames[:5]
        if self.session.auth is not None:
            mac = self.session.auth.copy()
            for part in (header_b, parent_b, metadata_b, content_b):
                mac.update(part)
            if not hmac.compare_digest(signature, mac.hexdigest().encode("ascii")):
                raise ValueError("invalid signature")
        header = json.loads(header_b)
        msg_type = header.get("msg_type", "")
        parent_id = json.loads(parent_b).get("msg_id", "") if len(parent_b) > 2 else ""
        state = json.loads(content_b).get("execution_state") if channel == "iopub" and msg_type == "status" else None
        buffers = msg_frames[5:]
        routing = json.dumps({"channel": channel, "msg_type": msg_type, "parent": parent_id, "state": state, "buffers": len(buffers)})
        encoded = ",".join('"' + base64.b64encode(bytes(b)).decode("ascii") + '"' for b in buffers)
        text = "".join((
            ">", routing, "\n",
            '{"header":', header_b.decode("utf-8"),
            ',"msg_id":', json.dumps(header.get("msg_id", "")), ',"msg_type":', json.dumps(msg_type),
            ',"parent_header":', parent_b.decode("utf-8"), ',"metadata":', metadata_b.decode("utf-8"),
            ',"content":', content_b.decode("utf-8"), ',"buffers":[', encoded, '],"channel":"', channel, '"}',
        ))
        return text, msg_type, parent_id, state

    def _send(self, message):
        self._send_text(json.dumps(message))

    def _send_text(self, text):
        # No task per message: tornado queues the write; a failed one is kept for the next connection.
        ws = self.ws
        if ws is None:
            self.outbox.append(text)
            return
        try:
            written = ws.write_message(text)
        except Exception:  # noqa: BLE001 - closed already
            self.outbox.append(text)
            return
        written.add_done_callback(lambda done: (done.cancelled() or done.exception() is not None) and self.outbox.append(text))

    async def _connect_forever(self):
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect
        delay, failing_since = 0.25, None
        while not self.stopping:
            credential = self.secret or _token
            request = HTTPRequest(f"{GATEWAY_URL}/launcher/{KERNEL_ID}",
                                  headers={"Authorization": f"token {credential}"}, connect_timeout=10)
            try:
                ws = await websocket_connect(request, max_message_size=64 * 1024 * 1024)
            except Exception as error:  # noqa: BLE001 - the gateway may be restarting: try again
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since > 1800:
                    log("gave up reaching the gateway after 30 minutes:", error)
                    os._exit(3)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5)
                continue
            delay, failing_since = 0.25, None
            try:
                # tornado leaves Nagle on for client connections: small replies would wait for ACKs.
                ws.protocol.set_nodelay(True)
            except Exception as error:  # noqa: BLE001 - only slower without it
                log("could not set TCP_NODELAY:", error)
            # `confirms`: this launcher answers interrupts and restarts with what happened.
            hello = {"op": "hello", "busy": self.kernel_busy, "claimed": self.claimed, "owner": self.owner, "confirms": True}
            if self.spark_reported is not None:
                hello["spark"] = self.spark_reported
            await ws.write_message(json.dumps(hello))
            # What the kernel said meanwhile goes first, in order; new output queues behind it
            # until the socket is handed to the pumps.
            while self.outbox:
                await ws.write_message(self.outbox.popleft())
            self.ws = ws
            while True:
                text = await ws.read_message()
                if text is None:
                    break
                self._on_message(text)
            self.ws = None
            log("gateway connection closed; reconnecting")

    def _on_message(self, text):
        try:
            message = json.loads(text)
        except ValueError:
            return
        op = message.get("op")
        if op == "secret":
            self.secret = message["value"]
        elif op == "claim":
            self.claimed = True
            self.owner = message.get("owner")
            self._send({"op": "claimed"})
        elif op == "interrupt":
            signalled = self._interrupt()
            self._send({"op": "interrupted", "signalled": signalled})
        elif op == "restart":
            self._restart()
        elif op == "shutdown":
            self.stopping = True
            log("shutdown requested by the gateway")
            os._exit(0)
        elif op is None:
            channel = message.get("channel")
            sock = self.sockets.get(channel)
            if sock is None or channel == "iopub":
                return
            buffers = [base64.b64decode(b) for b in message.get("buffers") or [] if isinstance(b, str)]
            msg = {k: message.get(k) or {} for k in ("header", "parent_header", "metadata", "content")}
            self._note_request(msg["header"], channel)
            try:
                self._send_to_kernel(channel, msg, buffers)
            except Exception as error:  # noqa: BLE001 - a malformed message from a client
                log("could not pass a message to the kernel:", error)

    def _note_request(self, header, channel):
        msg_id = header.get("msg_id") if isinstance(header, dict) else None
        if not isinstance(msg_id, str):
            return
        self.request_channels[msg_id] = channel
        if len(self.request_channels) > 5000:
            self.request_channels.popitem(last=False)

    def _interrupt(self):
        """Cancels the Spark jobs, then SIGINTs the Python code if a cell runs; True when signalled."""
        # SIGINT alone would leave the JVM's jobs running: cancel them first, then stop the Python code.
        cancel_spark_jobs()
        if not self.kernel_busy:
            return False
        os.kill(os.getpid(), signal.SIGINT)
        return True

    def _restart(self):
        self._interrupt()
        # The reset runs on the kernel's own thread, after whatever was queued before it.
        code = "get_ipython().reset(new_session=True, aggressive=False)\n__import__('submission_service_kernel').bind(get_ipython().user_ns)"
        header = self.session.msg_header("execute_request")
        header["msg_id"] = RESTART_PREFIX + uuid.uuid4().hex
        msg = {"header": header, "parent_header": {}, "metadata": {},
               "content": {"code": code, "silent": True, "store_history": False, "user_expressions": {},
                           "allow_stdin": False, "stop_on_error": False}}
        self._send_to_kernel("shell", msg)


def main():
    if not GATEWAY_URL or not KERNEL_ID:
        log("SUBMISSION_SERVICE_GATEWAY_URL and SUBMISSION_SERVICE_KERNEL_ID are required")
        return 2
    spark_off = os.environ.get("SUBMISSION_SERVICE_KERNEL_SPARK", "on") == "off"
    kernel_up = KernelUp()
    if not spark_off:
        threading.Thread(target=start_spark, args=(kernel_up,), name="spark-start", daemon=True).start()
    from ipykernel.kernelapp import IPKernelApp
    connection_file = os.path.join(tempfile.mkdtemp(prefix=f"ss-kernel-{KERNEL_ID}-"), "kernel.json")
    app = IPKernelApp.instance(connection_file=connection_file, ip="127.0.0.1", transport="tcp")
    app.initialize([])
    namespace = app.kernel.shell.user_ns
    bind_spark(namespace)
    # IPython replaces __main__; a module of our own lets the restart code find bind_spark.
    module = types.ModuleType("submission_service_kernel")
    module.bind = bind_spark
    sys.modules[module.__name__] = module
    bridge = Bridge(connection_file)
    # Read by the bridge, needed by no one else: it holds the kernel's signing key, and a launcher
    # ended by a signal or os._exit would otherwise leave it behind in the temp directory.
    shutil.rmtree(os.path.dirname(connection_file), ignore_errors=True)
    bridge.start()

    def spark_done():
        report = {"ok": SPARK.error is None, "error": SPARK.error, "disabled": spark_off}
        bridge.spark_reported = report
        bridge.call_soon(bridge._send, {"op": "spark", **report})

    if spark_off:
        # A kernel without a SparkSession (the driver's env says so): for plain Python work and benchmarks.
        SPARK.error = "this kernel was started without Spark (SUBMISSION_SERVICE_KERNEL_SPARK=off)"
        SPARK.ready.set()
        spark_done()
    else:
        kernel_up.set(namespace, spark_done)
    app.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
