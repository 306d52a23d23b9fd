"""The Spark UI as the task's extra link: the application's one link (live while the driver runs,
then the History Server's rendering of the run), as the operator pushed it to XCom."""
from typing import Any

from airflow.sdk import BaseOperatorLink
from airflow.sdk.execution_time.xcom import XCom

SPARK_UI_XCOM_KEY = "spark_ui_url"


class SparkUiLink(BaseOperatorLink):
    name = "Spark UI"

    @property
    def xcom_key(self) -> str:
        # The link Airflow keeps for the UI is the value the operator pushed under this key.
        return SPARK_UI_XCOM_KEY

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        return XCom.get_value(ti_key=ti_key, key=SPARK_UI_XCOM_KEY) or ""
