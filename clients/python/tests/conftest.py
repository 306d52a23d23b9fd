"""The live service under test: the fixtures live in live_service.py, which the Airflow provider's
tests share."""
pytest_plugins = ["live_service"]
