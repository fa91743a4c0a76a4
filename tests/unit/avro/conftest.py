"""The fake schema registry the Avro unit tests read from."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.support.registry_fakes import FakeRegistry, RegistryHandler


@pytest.fixture
def fake() -> Iterator[FakeRegistry]:
    server = FakeRegistry(("127.0.0.1", 0), RegistryHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
