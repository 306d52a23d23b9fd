"""The `submission_service` connection type and its hook: host = the service's URL, password = the API key."""
from typing import Any, Dict, Optional, Tuple

from airflow.sdk import BaseHook, Connection
from submission_service import AsyncClient, Client

from .get_provider_info import UI_FIELD_BEHAVIOUR


def service_url(conn: Connection) -> str:
    """The service's URL from a connection: its host as given when it has a scheme, else built from
    host and port (a connection URI or the form's fields)."""
    host = (conn.host or "").strip()
    if not host:
        raise ValueError("connection %s: the host (the service's URL) is empty" % conn.conn_id)
    if "://" in host:
        return host.rstrip("/")
    scheme = conn.schema or "http"
    return "%s://%s%s" % (scheme, host, ":%d" % conn.port if conn.port else "")


class SubmissionServiceHook(BaseHook):
    """Clients of the Submission Service named by an Airflow connection."""

    conn_name_attr = "submission_service_conn_id"
    default_conn_name = "submission_service_default"
    conn_type = "submission_service"
    hook_name = "Submission Service"

    def __init__(self, submission_service_conn_id: str = default_conn_name, timeout: float = 30.0) -> None:
        super().__init__()
        self.submission_service_conn_id = submission_service_conn_id
        self.timeout = timeout

    def get_conn(self) -> Client:
        conn = self.get_connection(self.submission_service_conn_id)
        return Client(service_url(conn), api_key=conn.password or None, timeout=self.timeout)

    async def aget_service(self) -> Tuple[str, Optional[str]]:
        """The service's URL and key, for triggers (read without blocking the event loop)."""
        conn = await self.aget_connection(self.submission_service_conn_id)
        return service_url(conn), conn.password or None

    async def aget_conn(self) -> AsyncClient:
        url, api_key = await self.aget_service()
        return AsyncClient(url, api_key=api_key, timeout=self.timeout)

    def test_connection(self) -> Tuple[bool, str]:
        try:
            with self.get_conn() as client:
                client.list_page(page_size=1, view="summary")
        except Exception as error:  # the form shows the reason, whatever it is
            return False, str(error)
        return True, "Connected: the key may list applications"

    @classmethod
    def get_ui_field_behaviour(cls) -> Dict[str, Any]:
        return dict(UI_FIELD_BEHAVIOUR)

def hook_for(conn_id: Optional[str]) -> SubmissionServiceHook:
    return SubmissionServiceHook(conn_id or SubmissionServiceHook.default_conn_name)
