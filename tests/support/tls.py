"""A private CA made with the JDK's keytool, and certificates it signs, in every format the tests need.

Nothing here is trusted by the system: a client reaches a server that shows one of these
certificates only when it is given the CA.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

PASSWORD = "changeit-test"


def keytool(*args: str) -> str:
    """Run the JDK's keytool (JAVA_HOME's, else PATH's); fail with its output."""
    java_home = os.environ.get("JAVA_HOME")
    tool = str(Path(java_home) / "bin" / "keytool") if java_home else "keytool"
    result = subprocess.run([tool, *args], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"keytool {' '.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


@dataclass(frozen=True)
class Identity:
    """A key and its certificate signed by the CA, as PKCS12, JKS and PEM."""

    p12: Path
    jks: Path
    pem: Path
    """The private key (unencrypted PKCS#8) and the certificate chain in one file."""
    cert_pem: Path
    key_pem: Path


@dataclass(frozen=True)
class PrivateCA:
    """A CA (`ca_pem`), its certificate in a JKS and a PKCS12 truststore, and identities it signs."""

    folder: Path
    store: Path
    ca_pem: Path
    truststore_jks: Path
    truststore_p12: Path

    @classmethod
    def create(cls, folder: Path) -> PrivateCA:
        folder.mkdir(parents=True, exist_ok=True)
        store, ca_pem = folder / "ca.p12", folder / "ca.pem"
        keytool("-genkeypair", "-alias", "ca", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=hudi-cdc test CA",
                "-ext", "bc:c", "-validity", "2", "-keystore", str(store), "-storetype", "PKCS12", "-storepass", PASSWORD)  # fmt: skip
        keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", str(store), "-storepass", PASSWORD, "-file", str(ca_pem))
        truststores = {"JKS": folder / "trust.jks", "PKCS12": folder / "trust.p12"}
        for kind, path in truststores.items():
            keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(path),
                    "-storetype", kind, "-storepass", PASSWORD)  # fmt: skip
        return cls(folder, store, ca_pem, truststores["JKS"], truststores["PKCS12"])

    def issue(self, name: str) -> Identity:
        """A key and a certificate for 127.0.0.1 and localhost (server and client use), signed by the CA."""
        p12, csr, crt = self.folder / f"{name}.p12", self.folder / f"{name}.csr", self.folder / f"{name}.crt"
        store = ("-keystore", str(p12), "-storetype", "PKCS12", "-storepass", PASSWORD)
        keytool("-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048", "-dname", f"CN={name}",
                "-validity", "2", *store)  # fmt: skip
        keytool("-certreq", "-alias", name, "-file", str(csr), *store)
        keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", str(self.store), "-storepass", PASSWORD,
                "-infile", str(csr), "-outfile", str(crt), "-validity", "2",
                "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-ext", "EKU=serverAuth,clientAuth")  # fmt: skip
        keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(self.ca_pem), *store)
        keytool("-importcert", "-noprompt", "-alias", name, "-file", str(crt), *store)
        jks = self.folder / f"{name}.jks"
        keytool("-importkeystore", "-noprompt", "-srckeystore", str(p12), "-srcstoretype", "PKCS12",
                "-srcstorepass", PASSWORD, "-destkeystore", str(jks), "-deststoretype", "JKS",
                "-deststorepass", PASSWORD, "-srcalias", name, "-destalias", name)  # fmt: skip
        key_pem, cert_pem, pem = self.folder / f"{name}.key.pem", self.folder / f"{name}.crt.pem", self.folder / f"{name}.pem"
        key = subprocess.run(["openssl", "pkcs12", "-in", str(p12), "-nocerts", "-nodes", "-passin", f"pass:{PASSWORD}"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        key_pem.write_text(key[key.index("-----BEGIN") :])
        cert_pem.write_text(crt.read_text() + self.ca_pem.read_text())
        pem.write_text(key_pem.read_text() + cert_pem.read_text())
        return Identity(p12=p12, jks=jks, pem=pem, cert_pem=cert_pem, key_pem=key_pem)
