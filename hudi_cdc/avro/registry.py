"""Writer schemas by id from a Confluent-compatible schema registry (Apicurio's `/apis/ccompat/v7`),
and by the global or content id Apicurio's serializer writes in Kafka headers (its own v2 API).

Only the driver calls it, once per distinct schema id of a batch (never per record). A schema
id names immutable content, so a fetched schema is cached for the life of the process. An
unknown id is an answer (the record is dead-lettered); a registry that does not answer is
retried with exponential backoff until `retry_budget` is spent, then RegistryUnavailableError
stops the job before anything of the batch is committed.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from threading import Lock
from typing import Literal

from hudi_cdc.config.models import SchemaRegistry
from hudi_cdc.errors import ConfigError, RegistryUnavailableError

log = logging.getLogger(__name__)

_NOT_FOUND = 40403
"""The ccompat error code of "schema not found" (HTTP 404)."""

IdKind = Literal["ccompat", "globalId", "contentId"]


@dataclass(frozen=True, order=True)
class SchemaRef:
    """Which schema a record names: an id of the Confluent-compatible API (the wire format's 4
    bytes), or an Apicurio global or content id (its serializer's headers)."""

    kind: IdKind
    id: int

    def __str__(self) -> str:
        """`kind:id`, the form Spark columns carry (`avro.wire`)."""
        return f"{self.kind}:{self.id}"


class SchemaFetcher:
    """Schema text by id, cached; retries with backoff (see the module docstring)."""

    def __init__(self, config: SchemaRegistry, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._cache: dict[SchemaRef, str | None] = {}
        self._lock = Lock()
        self._context: ssl.SSLContext | None = None

    def _tls(self) -> ssl.SSLContext | None:
        """The HTTPS context of `config.tls` (made once); ConfigError when its files cannot be read."""
        if self.config.tls is None:
            return None
        if self._context is None:
            try:
                self._context = self.config.tls.ssl_context()
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError: a file that is not PEM
                raise ConfigError("schema_registry.tls", [f"{type(exc).__name__}: {exc}"]) from None
        return self._context

    def ping(self) -> int:
        """Ask the registry for its subjects once (no retry), with the configured credentials and TLS:
        the number of subjects; OSError (HTTP errors included) or ValueError when it cannot answer."""
        request = self._request(f"{self.config.url.rstrip('/')}/subjects")
        try:
            with urllib.request.urlopen(request, timeout=self.config.request_timeout.total_seconds(), context=self._tls()) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise OSError(f"HTTP {exc.code}: the registry refused the credentials") from exc
            raise
        if not isinstance(body, list):
            raise ValueError(f"{self.config.url}/subjects answered {type(body).__name__}, not a list of subjects")
        return len(body)

    def schemas(self, refs: Iterable[SchemaRef]) -> dict[SchemaRef, str | None]:
        """ref -> the Avro schema JSON text, None for one the registry does not know."""
        return {r: self.schema(r) for r in sorted(set(refs))}

    def schema(self, ref: SchemaRef) -> str | None:
        """The Avro schema JSON text `ref` names, None when the registry does not know it."""
        with self._lock:
            if ref in self._cache:
                return self._cache[ref]
        text = self._fetch(ref)
        # an unknown id is not cached: it may be registered by the time its record is replayed
        if text is not None:
            with self._lock:
                self._cache[ref] = text
        return text

    def _fetch(self, ref: SchemaRef) -> str | None:
        budget = self.config.retry_budget.total_seconds()
        deadline = time.monotonic() + budget
        delay = 0.2
        while True:
            try:
                return self._get(ref.id) if ref.kind == "ccompat" else self._get_native(ref)
            except (OSError, ValueError) as exc:  # URLError, HTTP 5xx, timeouts, a garbled answer
                reason = f"{type(exc).__name__}: {exc}"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RegistryUnavailableError(self.config.url, schema_id=ref.id, budget=budget, reason=reason)
            log.warning("schema registry %s: schema %s: %s; retrying in %.1fs", self.config.url, ref, reason, delay)
            self._sleep(min(delay, remaining))
            delay = min(delay * 2, 10.0)

    def _request(self, url: str) -> urllib.request.Request:
        request = urllib.request.Request(url)
        request.add_header("Accept", "application/vnd.schemaregistry.v1+json, application/json")
        if self.config.username is not None:
            token = base64.b64encode(f"{self.config.username}:{self.config.password or ''}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        return request

    def _get_native(self, ref: SchemaRef) -> str | None:
        """Apicurio's v2 API: `/ids/globalIds/{id}` or `/ids/contentIds/{id}` answer the schema itself."""
        base = self.config.native_url
        if base is None:
            log.warning(
                "schema %s: Apicurio ids in Kafka headers need its v2 API; set schema_registry.apicurio_url "
                "(its records are dead-lettered)", ref,
            )
            return None
        request = self._request(f"{base}/ids/{ref.kind}s/{ref.id}")
        try:
            with urllib.request.urlopen(request, timeout=self.config.request_timeout.total_seconds(), context=self._tls()) as response:
                artifact_type = str(response.headers.get("X-Registry-ArtifactType", "AVRO"))
                text: str = response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            # Apicurio answers an unknown id with 404 and a JSON error naming that code
            if exc.code == 404 and _error_code(exc) == 404:
                return None
            if exc.code in (401, 403):
                raise OSError(f"HTTP {exc.code}: the registry refused the credentials") from exc
            raise
        if artifact_type != "AVRO":
            log.warning("schema %s is %s, not AVRO: its records are dead-lettered", ref, artifact_type)
            return None
        json.loads(text)  # a garbled answer is retried like an unreachable registry (ValueError)
        return text

    def _get(self, schema_id: int) -> str | None:
        request = self._request(f"{self.config.url.rstrip('/')}/schemas/ids/{schema_id}")
        try:
            with urllib.request.urlopen(request, timeout=self.config.request_timeout.total_seconds(), context=self._tls()) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            # a 404 without the ccompat code is a wrong URL, not an unknown id: retry, then stop
            if exc.code == 404 and _error_code(exc) == _NOT_FOUND:
                return None
            if exc.code in (401, 403):
                raise OSError(f"HTTP {exc.code}: the registry refused the credentials") from exc
            raise
        schema = body.get("schema") if isinstance(body, dict) else None
        if not isinstance(schema, str):
            raise ValueError(f"no `schema` in the registry's answer for id {schema_id}")
        schema_type = body.get("schemaType", "AVRO")
        if schema_type != "AVRO":
            log.warning("schema id %d is %s, not AVRO: its records are dead-lettered", schema_id, schema_type)
            return None
        return schema


def _error_code(exc: urllib.error.HTTPError) -> int | None:
    try:
        code = json.loads(exc.read() or b"{}").get("error_code")
    except (OSError, ValueError, AttributeError):
        return None
    return int(code) if isinstance(code, int) else None


_FETCHERS: dict[SchemaRegistry, SchemaFetcher] = {}


def fetcher_for(config: SchemaRegistry) -> SchemaFetcher:
    """The process's fetcher for this registry, so its cache lives across batches."""
    if config not in _FETCHERS:
        _FETCHERS[config] = SchemaFetcher(config)
    return _FETCHERS[config]
