"""`tls:` of the schema registry and Kafka Connect: PEM files, checked as a pair."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from hudi_cdc.config.tls import TlsFiles


def test_a_key_without_its_certificate_is_refused() -> None:
    with pytest.raises(ValidationError, match="need `cert_file`"):
        TlsFiles(key_file="/k.pem")


def test_the_key_password_is_not_shown() -> None:
    assert "hush" not in repr(TlsFiles(cert_file="/c.pem", key_password="hush"))


def test_a_file_that_is_not_pem_is_a_problem_naming_the_error(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate")

    assert TlsFiles(ca_file=str(ca)).problem() is not None
    assert TlsFiles().problem() is None  # the system's CAs
