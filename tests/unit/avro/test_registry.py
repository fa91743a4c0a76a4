"""SchemaFetcher against a small local HTTP server speaking the ccompat API and Apicurio's v2 ids
API (a fake, not a mock)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.config.models import SchemaRegistry
from hudi_cdc.errors import RegistryUnavailableError

SCHEMA = '{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}]}'
API = "/apis/ccompat/v7"
NATIVE = "/apis/registry/v2"


class FakeRegistry(ThreadingHTTPServer):
    """Knows schema id 1 (content id 1, global id 11; global id 12 is JSON Schema); fails the first `failures` requests with HTTP 503; counts requests."""

    failures = 0
    requests = 0
    auth: str | None = None


class _Handler(BaseHTTPRequestHandler):
    server: FakeRegistry

    def do_GET(self) -> None:
        self.server.requests += 1
        self.server.auth = self.headers.get("Authorization")
        if self.server.failures > 0:
            self.server.failures -= 1
            self._answer(503, {"message": "starting"})
        elif self.path == f"{API}/schemas/ids/1":
            self._answer(200, {"schema": SCHEMA})
        elif self.path.startswith(f"{API}/schemas/ids/"):
            self._answer(404, {"error_code": 40403, "message": "Schema not found"})
        elif self.path in (f"{NATIVE}/ids/globalIds/11", f"{NATIVE}/ids/contentIds/1"):
            self._answer(200, json.loads(SCHEMA), artifact_type="AVRO")
        elif self.path == f"{NATIVE}/ids/globalIds/12":
            self._answer(200, {"type": "object"}, artifact_type="JSON")
        elif self.path.startswith(f"{NATIVE}/ids/"):
            self._answer(404, {"error_code": 404, "message": "No content with id"})
        else:
            self._answer(404, {"message": "no such path"})

    def _answer(self, status: int, body: dict[str, object], artifact_type: str | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        if artifact_type is not None:
            self.send_header("X-Registry-ArtifactType", artifact_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[FakeRegistry]:
    server = FakeRegistry(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _config(fake: FakeRegistry, path: str = API, **kw: object) -> SchemaRegistry:
    return SchemaRegistry.model_validate({"url": f"http://127.0.0.1:{fake.server_address[1]}{path}", **kw})


def test_known_id_is_fetched_once_and_cached(fake: FakeRegistry) -> None:
    fetcher = SchemaFetcher(_config(fake, username="u", password="p"), sleep=lambda _s: None)
    assert fetcher.schemas([SchemaRef("ccompat", 1), SchemaRef("ccompat", 1)]) == {SchemaRef("ccompat", 1): SCHEMA}
    assert fetcher.schema(SchemaRef("ccompat", 1)) == SCHEMA
    assert fake.requests == 1 and fake.auth == "Basic dTpw"


def test_unknown_id_is_none_and_asked_again_later(fake: FakeRegistry) -> None:
    fetcher = SchemaFetcher(_config(fake), sleep=lambda _s: None)
    assert fetcher.schema(SchemaRef("ccompat", 7)) is None and fetcher.schema(SchemaRef("ccompat", 7)) is None
    assert fake.requests == 2


def test_outage_within_the_budget_is_retried(fake: FakeRegistry) -> None:
    fake.failures = 3
    slept: list[float] = []
    fetcher = SchemaFetcher(_config(fake), sleep=slept.append)
    assert fetcher.schema(SchemaRef("ccompat", 1)) == SCHEMA
    assert slept == [0.2, 0.4, 0.8]


def test_outage_beyond_the_budget_stops_with_a_transient_error(fake: FakeRegistry) -> None:
    fake.failures = 10**6
    fetcher = SchemaFetcher(_config(fake, retry_budget=timedelta(seconds=0.3)))
    with pytest.raises(RegistryUnavailableError, match="did not return schema id 1 within 0s"):
        fetcher.schema(SchemaRef("ccompat", 1))


def test_a_wrong_path_is_not_taken_for_an_unknown_id(fake: FakeRegistry) -> None:
    # a 404 without the ccompat error code: retried, then the job stops (never dead-letters the batch)
    fetcher = SchemaFetcher(_config(fake, path="/wrong", retry_budget=timedelta(seconds=0.2)))
    with pytest.raises(RegistryUnavailableError):
        fetcher.schema(SchemaRef("ccompat", 1))


def test_apicurio_header_ids_are_fetched_from_its_v2_api_beside_the_ccompat_one(fake: FakeRegistry) -> None:
    """Global and content ids (Apicurio's serializer puts them in headers) go to `/apis/registry/v2/ids/`,
    derived from the ccompat URL; unknown ids and other artifact types are None (dead letters)."""
    fetcher = SchemaFetcher(_config(fake), sleep=lambda _s: None)
    assert json.loads(fetcher.schema(SchemaRef("globalId", 11)) or "") == json.loads(SCHEMA)
    assert json.loads(fetcher.schema(SchemaRef("contentId", 1)) or "") == json.loads(SCHEMA)
    assert fetcher.schema(SchemaRef("globalId", 99)) is None and fetcher.schema(SchemaRef("globalId", 12)) is None


def test_apicurio_ids_need_its_api_when_the_url_is_not_apicurios(fake: FakeRegistry) -> None:
    other = _config(fake, path="/registry")
    assert other.native_url is None and SchemaFetcher(other).schema(SchemaRef("globalId", 11)) is None
    given = _config(fake, path="/registry", apicurio_url=f"http://127.0.0.1:{fake.server_address[1]}{NATIVE}/")
    assert SchemaFetcher(given).schema(SchemaRef("globalId", 11)) is not None
