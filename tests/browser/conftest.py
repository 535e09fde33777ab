"""The browser tests drive the same real server as the API tests."""

from tests.api.conftest import start_server  # noqa: F401 (a fixture, used by name)
