"""The schema registry and Kafka Connect clients over TLS, against a real HTTPS server (Python's
http.server behind ssl) with a certificate of a private CA, asking for a client certificate."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.config.connector import ConnectorSection
from hudi_cdc.config.models import SchemaRegistry, load_config
from hudi_cdc.config.tls import TlsFiles
from hudi_cdc.errors import ConfigError, ConnectError, RegistryUnavailableError
from hudi_cdc.relay.connect import ConnectRest
from tests.support.tls import Identity, PrivateCA

pytestmark = pytest.mark.integration

SCHEMA = '{"type": "string"}'
USER, SECRET = "svc", "p@ss:word"


class _Handler(BaseHTTPRequestHandler):
    """A registry's `/subjects` and `/schemas/ids/1`, Connect's `/connectors`; basic auth required on `/connectors`."""

    def do_GET(self) -> None:
        expected = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
        if self.path.endswith("/connectors") and self.headers.get("Authorization") != expected:
            return self._answer(401, {"error_code": 401, "message": "Unauthorized"})
        answers: dict[str, Any] = {"/subjects": ["s-value"], "/schemas/ids/1": {"schema": SCHEMA}, "/connectors": ["c1"]}
        path = next((p for p in answers if self.path.endswith(p)), None)
        self._answer(200, answers[path]) if path else self._answer(404, {"error_code": 40403})

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> PrivateCA:
    return PrivateCA.create(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def client(ca: PrivateCA) -> Identity:
    return ca.issue("client")


@pytest.fixture(scope="module")
def https(ca: PrivateCA) -> Iterator[str]:
    """`https://127.0.0.1:<port>` of a server that requires a client certificate of the CA."""
    server_identity = ca.issue("server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_identity.cert_pem, server_identity.key_pem)
    context.load_verify_locations(ca.ca_pem)
    context.verify_mode = ssl.CERT_REQUIRED
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def _mtls(ca: PrivateCA, client: Identity) -> TlsFiles:
    return TlsFiles(ca_file=str(ca.ca_pem), cert_file=str(client.cert_pem), key_file=str(client.key_pem))


def test_the_registry_client_trusts_the_private_ca_and_shows_its_certificate(
    https: str, ca: PrivateCA, client: Identity
) -> None:
    fetcher = SchemaFetcher(SchemaRegistry(url=f"{https}/apis/ccompat/v7", tls=_mtls(ca, client)))

    assert fetcher.ping() == 1
    assert fetcher.schema(SchemaRef("ccompat", 1)) == SCHEMA


@pytest.mark.parametrize(
    "tls",
    [pytest.param("none", id="system-cas-only"), pytest.param("no-client-cert", id="no-client-certificate")],
)
def test_the_registry_client_fails_without_the_ca_or_its_certificate(
    https: str, ca: PrivateCA, tls: str
) -> None:
    files = None if tls == "none" else TlsFiles(ca_file=str(ca.ca_pem))
    config = SchemaRegistry.model_validate({"url": f"{https}/apis/ccompat/v7", "tls": files, "retry_budget": "0.3 seconds"})

    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED" if tls == "none" else "certificate|alert|EOF|reset"):
        SchemaFetcher(config).ping()
    with pytest.raises(RegistryUnavailableError):
        SchemaFetcher(config).schema(SchemaRef("ccompat", 1))


def test_a_tls_file_that_cannot_be_read_is_a_configuration_error(https: str, tmp_path: Path) -> None:
    config = SchemaRegistry(url=https, tls=TlsFiles(ca_file=str(tmp_path / "missing.pem")))

    with pytest.raises(ConfigError, match=r"schema_registry\.tls"):
        SchemaFetcher(config).ping()


def test_the_connect_client_sends_basic_auth_from_the_environment_over_tls(
    https: str, ca: PrivateCA, client: Identity, tmp_path: Path
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        f"""
kafka: {{bootstrap_servers: "127.0.0.1:9092"}}
job: {{checkpoint_dir: {tmp_path}/cp, dead_letter_path: {tmp_path}/dl}}
routes: [{{topic: srv.db.t, table: t}}]
tables: [{{name: t, key: [id], base_path: {tmp_path}/t}}]
connector:
  connect_url: {https}
  username: ${{CONNECT_USER}}
  password: ${{CONNECT_PASSWORD}}
  tls: {{ca_file: {ca.ca_pem}, cert_file: {client.cert_pem}, key_file: {client.key_pem}}}
  name: c1
  tables: [db.t]
  config:
    connector.class: io.debezium.connector.mysql.MySqlConnector
    database.hostname: db
    database.port: "3306"
    database.user: u
    database.password: p
    topic.prefix: srv
    schema.history.internal.kafka.topic: h
"""
    )
    config = load_config(job, environ={"CONNECT_USER": USER, "CONNECT_PASSWORD": SECRET})
    assert config.connector is not None

    assert ConnectRest.for_section(config.connector).connectors() == ["c1"]

    wrong = ConnectorSection.model_validate({**config.connector.model_dump(), "password": "wrong"})
    with pytest.raises(ConnectError, match=r"401.*refused the credentials") as raised:
        ConnectRest.for_section(wrong).connectors()
    assert SECRET not in str(raised.value) and "wrong" not in str(raised.value)
