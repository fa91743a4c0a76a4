"""TLS of the job's HTTP clients (the schema registry, Kafka Connect): which CA to trust, which
client certificate to show. Kafka's TLS is set in `kafka.properties` with the Java client's
names (`kafka.tls` turns them into librdkafka's for the driver's own clients)."""

from __future__ import annotations

import ssl

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TlsFiles(BaseModel):
    """PEM files for an HTTPS client: the CA it trusts and, for mutual TLS, its certificate and key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ca_file: str | None = None
    """PEM file of the CA certificate(s) that signed the server's certificate (a private CA);
    None: the system's trusted CAs."""
    cert_file: str | None = None
    """PEM file of the client certificate (and its chain), for servers that ask for one (mutual TLS)."""
    key_file: str | None = None
    """PEM file of the client certificate's private key; None: it is in `cert_file`."""
    key_password: str | None = Field(default=None, repr=False)
    """Passphrase of an encrypted private key; put a `${VAR}` reference here."""

    @model_validator(mode="after")
    def _pairs(self) -> TlsFiles:
        if self.cert_file is None and (self.key_file is not None or self.key_password is not None):
            raise ValueError("`key_file`/`key_password` need `cert_file`, the certificate they belong to")
        return self

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that verifies the server's certificate and host name; OSError (ssl.SSLError
        included) when a file is missing or not PEM."""
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file is not None:
            context.load_cert_chain(self.cert_file, self.key_file, self.key_password)
        return context

    def problem(self) -> str | None:
        """Why `ssl_context` fails (a file missing, not PEM, a wrong passphrase), or None."""
        try:
            self.ssl_context()
        except (OSError, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None
