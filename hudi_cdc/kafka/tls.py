"""Kafka TLS given once, in `kafka.properties` with the Java client's names, for both clients.

Spark's Kafka source (the Java client) takes the `ssl.*` settings as written. The driver's own
clients (confluent-kafka: the start check, lag, markers, `validate --kafka`, `check`) speak
librdkafka, which knows neither Java key stores nor their names. `librdkafka_tls` translates:

| Java client (`kafka.properties`)                          | librdkafka                                  |
|-----------------------------------------------------------|---------------------------------------------|
| `ssl.truststore.type: PEM` + `ssl.truststore.location`    | `ssl.ca.location` (the same file)            |
| `ssl.truststore.certificates` (PEM text)                  | `ssl.ca.pem`                                 |
| JKS/PKCS12 `ssl.truststore.location` (+ `.password`)      | `ssl.ca.location`: its certificates as PEM   |
| `ssl.keystore.type: PEM` + `ssl.keystore.location`        | `ssl.certificate.location`, `ssl.key.location` |
| `ssl.keystore.certificate.chain` + `ssl.keystore.key`     | `ssl.certificate.pem`, `ssl.key.pem`         |
| PKCS12 `ssl.keystore.location` + `ssl.keystore.password`  | the same names (librdkafka reads PKCS#12)    |
| JKS `ssl.keystore.location`                               | a PKCS#12 copy                               |
| `ssl.endpoint.identification.algorithm: ""` (off)         | `none`                                       |

Why convert Java key stores instead of refusing them: a cluster's clients usually get a JKS
truststore, and refusing it would make the user keep a second copy of the CA in step. The
conversion is the JDK's own `keytool` (a JDK is where Spark runs), into files of this process
only (mode 0600, deleted at exit), made once per store file and its modification time. Without
`keytool`, or when it cannot read the store, a ConfigError says what to set instead.
A librdkafka name set explicitly (`ssl.ca.location`...) wins over the translation.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from hudi_cdc.errors import ConfigError

SOURCE = "kafka.properties"
"""How errors name the place to fix."""
_PEM_CERTIFICATE = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
_converted: dict[tuple[str, str, float, str], str] = {}
"""(store, type, modification time, password) -> the converted file: keytool runs once per store."""
_folder: Path | None = None


def librdkafka_tls(properties: Mapping[str, str]) -> dict[str, str]:
    """librdkafka's TLS settings equivalent to the Java client's `ssl.*` in `properties` (table above)."""
    settings: dict[str, str] = {}
    trust_type = properties.get("ssl.truststore.type", "JKS").upper()
    trust_location = properties.get("ssl.truststore.location")
    if "ssl.truststore.certificates" in properties:
        settings["ssl.ca.pem"] = properties["ssl.truststore.certificates"]
    elif trust_location and trust_type == "PEM":
        settings["ssl.ca.location"] = trust_location
    elif trust_location and not ({"ssl.ca.location", "ssl.ca.pem"} & set(properties)):
        settings["ssl.ca.location"] = _truststore_as_pem(trust_location, trust_type, properties.get("ssl.truststore.password"))

    key_type = properties.get("ssl.keystore.type", "JKS").upper()
    key_location = properties.get("ssl.keystore.location")
    if "ssl.keystore.key" in properties:
        settings["ssl.key.pem"] = properties["ssl.keystore.key"]
        if "ssl.keystore.certificate.chain" in properties:
            settings["ssl.certificate.pem"] = properties["ssl.keystore.certificate.chain"]
    elif key_location and key_type == "PEM":
        # Java's PEM key store is one file holding the key and the chain; librdkafka reads each from it
        settings["ssl.certificate.location"] = key_location
        settings["ssl.key.location"] = key_location
    elif key_location and key_type == "PKCS12":
        settings["ssl.keystore.location"] = key_location
    elif key_location and "ssl.certificate.location" not in properties:
        settings["ssl.keystore.location"] = _keystore_as_pkcs12(key_location, key_type, properties)
    if "ssl.keystore.location" in settings and "ssl.keystore.password" in properties:
        settings["ssl.keystore.password"] = properties["ssl.keystore.password"]
    if "ssl.key.password" in properties and "ssl.keystore.location" not in settings:
        settings["ssl.key.password"] = properties["ssl.key.password"]
    if properties.get("ssl.endpoint.identification.algorithm") == "":
        settings["ssl.endpoint.identification.algorithm"] = "none"
    return settings


def is_java_tls_setting(key: str) -> bool:
    """Whether `key` is a Java-client TLS setting `librdkafka_tls` translates (never passed on as is)."""
    return key.startswith(("ssl.truststore.", "ssl.keystore.")) or key in ("ssl.key.password", "ssl.endpoint.identification.algorithm")


def _truststore_as_pem(location: str, store_type: str, password: str | None) -> str:
    """A PEM file of the certificates in a JKS/PKCS12 truststore (`keytool -list -rfc`)."""
    key = (location, store_type, _mtime(location, "ssl.truststore.location"), password or "")
    if key not in _converted:
        out = _keytool(
            ["-list", "-rfc", "-keystore", location, "-storetype", store_type, *_storepass(password)],
            what=f"the truststore {location}",
            stdin="" if password else "\n",  # keytool lists a JKS store's certificates without its password
            env={"HUDI_CDC_STOREPASS": password or ""},
        )
        certificates = _PEM_CERTIFICATE.findall(out)
        if not certificates:
            raise ConfigError(SOURCE, [f"ssl.truststore.location: {location} holds no certificate"])
        _converted[key] = str(_private_file("truststore.pem", ("\n".join(certificates) + "\n").encode()))
    return _converted[key]


def _keystore_as_pkcs12(location: str, store_type: str, properties: Mapping[str, str]) -> str:
    """A PKCS#12 copy of a JKS key store (`keytool -importkeystore`), under the key store's password."""
    password = properties.get("ssl.keystore.password")
    if not password:
        raise ConfigError(SOURCE, [f"ssl.keystore.location: a {store_type} key store needs `ssl.keystore.password`"])
    key = (location, store_type, _mtime(location, "ssl.keystore.location"), password)
    if key not in _converted:
        target = _private_file("keystore.p12", b"")
        target.unlink()  # keytool refuses to import into an existing empty file
        key_password = properties.get("ssl.key.password")
        _keytool(
            ["-importkeystore", "-noprompt", "-srckeystore", location, "-srcstoretype", store_type,
             "-destkeystore", str(target), "-deststoretype", "PKCS12",
             "-srcstorepass:env", "HUDI_CDC_SRCPASS", "-deststorepass:env", "HUDI_CDC_SRCPASS",
             *(["-srckeypass:env", "HUDI_CDC_KEYPASS"] if key_password else [])],
            what=f"the key store {location}",
            env={"HUDI_CDC_SRCPASS": password, "HUDI_CDC_KEYPASS": key_password or ""},
        )  # fmt: skip
        target.chmod(0o600)
        _converted[key] = str(target)
    return _converted[key]


def _storepass(password: str | None) -> list[str]:
    return ["-storepass:env", "HUDI_CDC_STOREPASS"] if password else []


def _keytool(args: list[str], *, what: str, stdin: str = "", env: Mapping[str, str] | None = None) -> str:
    """Run the JDK's keytool; ConfigError naming `what` when there is none or it fails."""
    tool = _keytool_path()
    if tool is None:
        raise ConfigError(SOURCE, [
            f"{what} is a Java key store, which the driver's Kafka clients (librdkafka) read only through the "
            "JDK's `keytool`, and none was found (JAVA_HOME/bin, PATH). Set `ssl.truststore.type: PEM` with a PEM "
            "file of the CA (and `ssl.keystore.type: PEM` for a client certificate), which both clients read",
        ])  # fmt: skip
    result = subprocess.run(
        [tool, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, **(env or {})},  # passwords by environment, never on a command line
    )  # fmt: skip
    if result.returncode != 0:
        reason = " ".join((result.stderr or result.stdout).split())[:300]
        raise ConfigError(SOURCE, [f"keytool cannot read {what}: {reason}; check its path, type and password"])
    return result.stdout


def _keytool_path() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "keytool").is_file():
        return str(Path(java_home) / "bin" / "keytool")
    return shutil.which("keytool")


def _mtime(location: str, setting: str) -> float:
    try:
        return os.stat(location).st_mtime
    except OSError as exc:
        raise ConfigError(SOURCE, [f"{setting}: cannot read {location}: {exc.strerror}"]) from None


def _private_file(name: str, content: bytes) -> Path:
    """A new file of this process only (mode 0600 in a 0700 folder), deleted at exit."""
    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="hudi-cdc-tls-"))
        atexit.register(shutil.rmtree, _folder, True)
    fd, path = tempfile.mkstemp(prefix="kafka-", suffix=f"-{name}", dir=_folder)
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    return Path(path)
