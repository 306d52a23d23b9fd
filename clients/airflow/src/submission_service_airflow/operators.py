"""SparkApplicationOperator: submits a Spark application to the Submission Service, safe to retry,
and waits for its end in the triggerer (deferrable) or, with deferrable=False, in the worker."""
import time
from typing import Any, Dict, Mapping, Optional, Sequence

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException
from submission_service import (END_STATES, Client, IdempotencyKeyReusedError, NotFoundError, RateLimitedError,
                                SubmissionServiceError, WaitTimeout)

from . import keys
from .hooks import SubmissionServiceHook, service_url
from .links import SPARK_UI_XCOM_KEY, SparkUiLink
from .triggers import DEFAULT_MIN_DEFERRAL_S, SparkApplicationTrigger

APP_NAME_XCOM_KEY = "app_name"
# deferrable=False past the key's cap of event streams: how often the state is read instead.
FALLBACK_POLL_S = 30.0


def wait_in_worker(client: Client, app_name: str, timeout: Optional[float], log: Any) -> Dict[str, Any]:
    """The end of the application, waited for in the worker (deferrable=False): on the events stream,
    or, when the key already holds all the streams the service allows (429), by reading the state
    every FALLBACK_POLL_S seconds (each waiting worker would hold a stream of its own)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        return dict(client.wait(app_name, timeout=timeout))
    except RateLimitedError as error:
        log.warning("Waiting for %s by reading its state every %g s: %s", app_name, FALLBACK_POLL_S, error.message)
    while True:
        app = dict(client.get(app_name))
        if app.get("state") in END_STATES:
            return app
        if deadline is not None and time.monotonic() >= deadline:
            raise WaitTimeout("%s did not end within %s s" % (app_name, timeout))
        time.sleep(FALLBACK_POLL_S)


class SparkApplicationOperator(BaseOperator):
    """Runs one Spark application and succeeds when it COMPLETED.

    - The submission carries an Idempotency-Key made of the DAG, task, run, map index and try number.
      Which try number: the one that made the running application. A try records its number in
      Airflow's task state store before it submits, with its DAG run's clear_number and its
      max_tries. A retry after a crash (the worker died) finds both unchanged: it sends the
      recorded try's key with the same body, which answers that try's application, and adopts it
      while it is PENDING or RUNNING: one application, not two. After a clear one of them changed
      (keys.cleared_since): the user asked for a new run, so the earlier application is not
      adopted; its own try's kill stops it (on_kill, or the trigger's), and this try waits up to
      `cleared_grace_s` for that end, then stops it itself (a try that crashed before the clear has
      nobody else to), and submits under its own number. An ended one (FAILED, KILLED, even
      COMPLETED) is left alone and this try submits under its own number. Without a task state
      store (Airflow < 3.3) each try uses its own number.
    - deferrable (default): the wait is a trigger following the service's events stream, so no
      worker slot is held while Spark runs. The trigger fires no sooner than `min_deferral_s` after
      it started (default 15 s): an application that ends sooner is reported that late, because
      Airflow 3's scheduler fails a task resumed before it processed the exit of the worker that
      deferred (apache/airflow#66374, #72716; triggers.py). Longer runs pay nothing.
    - The driver log is written into the task log at the end (it stays there after the driver's pod
      or process is gone); the task fails with the application's state and stateDetail.
    - XCom: `app_name` (also the return value) and `spark_ui_url` (the one Spark UI link: live
      while the driver runs, then the History Server's), which is also the task's "Spark UI" link.
    - on_kill (and the trigger's on_kill while deferred) stops the application.
    """

    template_fields: Sequence[str] = ("job_name", "config_template_name", "config_overrides", "labels")
    template_fields_renderers = {"config_overrides": "json", "labels": "json"}
    operator_extra_links = (SparkUiLink(),)
    ui_color = "#fdebd0"
    # Seconds a cleared try's application gets to end by that try's own kill (the triggerer sees a
    # clear within its loop and runs the trigger's on_kill) before a new try stops it itself.
    cleared_grace_s = 30.0

    def __init__(self, *, job_name: str, submission_service_conn_id: str = SubmissionServiceHook.default_conn_name,
                 config_template_name: Optional[str] = None, config_overrides: Optional[Mapping[str, Any]] = None,
                 labels: Optional[Mapping[str, str]] = None, deferrable: bool = True, driver_log: bool = True,
                 wait_timeout: Optional[float] = None, min_deferral_s: float = DEFAULT_MIN_DEFERRAL_S,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name = job_name
        self.submission_service_conn_id = submission_service_conn_id
        self.config_template_name = config_template_name
        self.config_overrides = config_overrides
        self.labels = labels
        self.deferrable = deferrable
        self.driver_log = driver_log
        self.wait_timeout = wait_timeout
        self.min_deferral_s = min_deferral_s
        self.app_name: Optional[str] = None

    def _hook(self) -> SubmissionServiceHook:
        return SubmissionServiceHook(self.submission_service_conn_id)

    # -- submission -----------------------------------------------------------------------------

    def execute(self, context: Any) -> Any:
        with self._hook().get_conn() as client:
            app = self.submit_or_adopt(client, context)
            self.app_name = app["appName"]
            self._push_link(context, app)
            if app.get("state") not in keys.ACTIVE_STATES:
                return self._finish(client, context, app)
            if self.deferrable:
                self.defer(trigger=SparkApplicationTrigger(self.app_name, self.submission_service_conn_id,
                                                           self.wait_timeout, self.min_deferral_s),
                           method_name="execute_complete")
            done = wait_in_worker(client, self.app_name, self.wait_timeout, self.log)
            return self._finish(client, context, done)

    def submit_or_adopt(self, client: Client, context: Any) -> Dict[str, Any]:
        """This try's application: the earlier try's while it runs and that try crashed, else a new
        one (see the class)."""
        ti = context["ti"]
        store = context.get("task_state_store")
        stored = store.get(keys.KEY_TRY) if store is not None else None
        record = keys.submission_record(ti.try_number, getattr(context.get("dag_run"), "clear_number", 0),
                                        getattr(ti, "max_tries", 0))
        earlier = keys.key_try_to_reuse(stored, ti.try_number)
        if earlier is not None:
            if keys.cleared_since(stored, record):
                self.log.info("The task was cleared since try %d submitted: its application is not adopted", earlier)
                self._stop_cleared(client, ti)
            else:
                app = self._adoptable(client, ti, earlier)
                if app is not None:
                    return app
        if store is not None:
            # Recorded before the POST: a crash right after it still leaves the key findable.
            store.set(keys.KEY_TRY, record)
        app = self._submit(client, ti, self._key(ti, ti.try_number))
        self.log.info("Submitted %s (try %d)", app["appName"], ti.try_number)
        return app

    def _key(self, ti: Any, key_try: int) -> str:
        return keys.idempotency_key(ti.dag_id, ti.task_id, ti.run_id, ti.map_index, key_try)

    def _adoptable(self, client: Client, ti: Any, earlier: int) -> Optional[Dict[str, Any]]:
        """The crashed try's application while it runs (the same key and body answer it), else None."""
        try:
            app = self._submit(client, ti, self._key(ti, earlier))
        except IdempotencyKeyReusedError:
            return None  # the task's submission changed since that try: not the same run
        if keys.earlier_application(app.get("state"), cleared=False) != keys.ADOPT:
            return None
        self.log.info("Adopted %s, submitted by try %d and still %s", app["appName"], earlier, app["state"])
        return app

    def _stop_cleared(self, client: Client, ti: Any) -> None:
        """The task was cleared since the recorded try submitted: the task instance's applications that
        still run (found by its label, so none is made by asking) end before this try submits. The
        cleared try's kill stops them in the common case: waited for, so the stop stays its own and
        its trigger is not fired by an end it did not cause; after cleared_grace_s, this try stops
        what still runs (a try whose worker died before the clear had no kill)."""
        instance = keys.task_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index)["airflow-task-instance"]
        for app in list(client.list(label_selector={"airflow-task-instance": instance})):
            if keys.earlier_application(app.get("state"), cleared=True) != keys.STOP:
                continue
            name = app["appName"]
            self.log.info("Waiting up to %g s for %s (%s) to be stopped by the cleared try", self.cleared_grace_s,
                          name, app.get("state"))
            try:
                state = client.wait(name, timeout=self.cleared_grace_s).get("state")
            except NotFoundError:
                continue  # deleted meanwhile: nothing runs
            except SubmissionServiceError as error:  # not ended in time, or the wait could not follow it
                self.log.info("%s did not end by itself (%s): stopping it", name, error)
                state = client.stop(name).get("state")
            self.log.info("The cleared try's application %s is %s", name, state)

    def _submit(self, client: Client, ti: Any, key: str) -> Dict[str, Any]:
        labels = {**keys.task_labels(ti.dag_id, ti.task_id, ti.run_id, ti.map_index), **dict(self.labels or {})}
        return dict(client.submit(job_name=self.job_name, config_template_name=self.config_template_name,
                                  config_overrides=self.config_overrides, labels=labels, idempotency_key=key))

    # -- the end --------------------------------------------------------------------------------

    def execute_complete(self, context: Any, event: Dict[str, Any]) -> Any:
        """Back from the trigger (in a worker again, briefly): the log, the links, the verdict."""
        self.app_name = event["appName"]
        if event.get("status") != "ended":
            raise AirflowException("Spark application %s: %s" % (self.app_name, event.get("message")))
        with self._hook().get_conn() as client:
            return self._finish(client, context, dict(client.get(self.app_name)))

    def _finish(self, client: Client, context: Any, app: Dict[str, Any]) -> Any:
        self._push_link(context, app)
        if self.driver_log:
            self._write_driver_log(client, app["appName"])
        state, detail = app.get("state"), app.get("stateDetail", "")
        if state != "COMPLETED":
            raise AirflowException("Spark application %s ended %s: %s" % (app["appName"], state, detail or "(no detail)"))
        self.log.info("Spark application %s COMPLETED", app["appName"])
        return app["appName"]

    def _write_driver_log(self, client: Client, app_name: str) -> None:
        self.log.info("Driver log of %s:", app_name)
        pending = ""
        for chunk in client.logs(app_name):
            lines = (pending + chunk).split("\n")
            pending = lines.pop()
            for line in lines:
                self.log.info("[driver] %s", line)
        if pending:
            self.log.info("[driver] %s", pending)

    def _push_link(self, context: Any, app: Mapping[str, Any]) -> None:
        ti = context["ti"]
        ti.xcom_push(key=APP_NAME_XCOM_KEY, value=app["appName"])
        ti.xcom_push(key=SPARK_UI_XCOM_KEY, value=self._spark_ui_url(app))

    def _spark_ui_url(self, app: Mapping[str, Any]) -> str:
        """The application's one Spark UI link, absolute: the live UI while the driver runs, then the
        History Server's rendering of the run. The service documents it as a path of the dashboard
        for the whole life of the run, so it is known (and pushed) at submission already."""
        path = (app.get("sparkUi") or {}).get("url") or "/dashboard/apps/%s/spark-ui/" % app["appName"]
        if "://" in path:
            return path
        return service_url(self._hook().get_connection(self.submission_service_conn_id)) + path

    def on_kill(self) -> None:
        if not self.app_name:
            return
        with self._hook().get_conn() as client:
            client.stop(self.app_name)
        self.log.info("Stopped Spark application %s", self.app_name)
