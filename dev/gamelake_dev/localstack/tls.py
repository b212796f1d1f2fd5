"""A private CA and a broker certificate for the local stack's SASL_SSL listener.

Generated once per stack folder with the ``cryptography`` package: ``ca.pem`` (the CA
certificate clients trust) and ``broker.pem`` (the broker's unencrypted PKCS#8 key and its
certificate chain, readable by the owner only). The certificate names ``localhost`` and the
bind address, so clients verify the broker's name as they would in production.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

VALID_FOR = dt.timedelta(days=825)


@dataclass(frozen=True)
class BrokerTls:
    ca_certificate: Path  # what clients put in ssl.ca.location
    broker_pem: Path  # private key + certificate chain, for the broker only


def ensure_broker_tls(folder: Path, host: str) -> BrokerTls:
    """The CA and broker certificate in ``folder``, made on first use."""
    tls = BrokerTls(folder / "ca.pem", folder / "broker.pem")
    if tls.ca_certificate.is_file() and tls.broker_pem.is_file():
        return tls
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _certificate("gamelake local CA", None, None, host)
    broker_key, broker_cert = _certificate("localhost", ca_key, ca_cert, host)
    key_pem = broker_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (broker_cert, ca_cert))
    _write_private(tls.broker_pem, key_pem + chain)
    tls.ca_certificate.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    return tls


def _certificate(
    name: str, issuer_key: rsa.RSAPrivateKey | None, issuer: x509.Certificate | None, host: str
) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    """A CA certificate when ``issuer`` is None, else a server certificate it signs."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if issuer is not None:
        names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(host))]
        if host != "127.0.0.1":
            names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
