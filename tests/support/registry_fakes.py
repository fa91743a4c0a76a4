"""A small local HTTP server speaking the ccompat API and Apicurio's v2 ids API (a fake, not a mock)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCHEMA = '{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":5,"scale":2}}]}'
API = "/apis/ccompat/v7"
NATIVE = "/apis/registry/v2"


class FakeRegistry(ThreadingHTTPServer):
    """Knows schema id 1 (content id 1, global id 11; global id 12 is JSON Schema); fails the first `failures` requests with HTTP 503; counts requests."""

    failures = 0
    requests = 0
    auth: str | None = None


class RegistryHandler(BaseHTTPRequestHandler):
    """Answers as FakeRegistry says: `FakeRegistry(("127.0.0.1", 0), RegistryHandler)`."""

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
