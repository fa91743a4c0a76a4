"""SchemaFetcher against a small local HTTP server speaking the ccompat API and Apicurio's v2 ids
API (a fake, not a mock)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from hudi_cdc.avro.registry import SchemaFetcher, SchemaRef
from hudi_cdc.config.models import SchemaRegistry
from hudi_cdc.errors import RegistryUnavailableError
from tests.support.registry_fakes import API, NATIVE, SCHEMA, FakeRegistry


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
