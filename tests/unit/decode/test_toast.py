"""The unchanged-TOAST placeholder's shapes, derived from the connector's setting."""

from __future__ import annotations

import json

import pytest

from hudi_cdc.decode.toast import toast_values
from hudi_cdc.events import placeholder_bytes


def test_the_default_placeholder_gives_the_shapes_read_off_the_live_connector() -> None:
    # as Debezium 3.5's PostgreSQL connector sent them (tests/integration/test_postgres_to_hudi.py)
    text, as_base64, texts, base64s, numbers, uuids, hstore = toast_values()
    assert text == "__debezium_unavailable_value"
    assert as_base64 == "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
    assert texts == '["__debezium_unavailable_value"]'
    assert base64s == '["X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="]'
    assert json.loads(numbers) == [95, 95, 100, 101, 98, 101, 122, 105, 117, 109, 95, 117, 110, 97, 118, 97,
                                   105, 108, 97, 98, 108, 101, 95, 118, 97, 108, 117, 101]  # fmt: skip
    assert uuids == '["b68a35a7-17ad-35b3-af2a-ae46edb4545a"]'
    assert hstore == '{"__debezium_unavailable_value":"__debezium_unavailable_value"}'


def test_a_hex_placeholder_is_its_octets_and_numbers_are_java_signed_bytes() -> None:
    assert placeholder_bytes("hex:c2a47e") == b"\xc2\xa4~"
    text, as_base64, texts, _, numbers, _, hstore = toast_values("hex:c2a47e")
    # non-ASCII text stays unescaped, as Spark hands a nested JSON value over
    assert (text, as_base64, texts, hstore) == ("¤~", "wqR+", '["¤~"]', '{"¤~":"¤~"}')
    assert numbers == "[-62,-92,126]"


def test_a_text_placeholder_is_its_utf8_bytes() -> None:
    assert placeholder_bytes("¤gone") == "¤gone".encode()
    # the same bytes given as text or as hex give the same shapes
    assert toast_values("¤~") == toast_values("hex:c2a47e")


@pytest.mark.parametrize("setting", ["hex:5f5", "hex:zz", "hex:", ""])
def test_a_bad_or_empty_placeholder_is_refused(setting: str) -> None:
    with pytest.raises(ValueError, match=r"hex octets|is empty"):
        placeholder_bytes(setting)
