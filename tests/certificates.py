"""TLS certificates for the tests, made with the cryptography package: a CA, a server
certificate it signs (for 127.0.0.1 and localhost), a client certificate it signs (for users
created REQUIRE X509), and a self-signed server certificate no CA vouches for.

    certs = make_certificates(tmp_dir)
    certs.server_context()            # an ssl.SSLContext for a test server (the ProxySQL double)
    certs.ca, certs.client_cert, certs.client_key, certs.server_cert, certs.server_key
"""
from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Certificates:
    folder: str

    def path(self, name: str) -> str:
        return os.path.join(self.folder, name)

    @property
    def ca(self) -> str:
        return self.path("ca.pem")

    @property
    def server_cert(self) -> str:
        return self.path("server-cert.pem")

    @property
    def server_key(self) -> str:
        return self.path("server-key.pem")

    @property
    def client_cert(self) -> str:
        return self.path("client-cert.pem")

    @property
    def client_key(self) -> str:
        return self.path("client-key.pem")

    @property
    def self_signed_cert(self) -> str:
        return self.path("self-signed-cert.pem")

    @property
    def self_signed_key(self) -> str:
        return self.path("self-signed-key.pem")

    def server_context(self, self_signed: bool = False, client_ca: bool = False) -> ssl.SSLContext:
        """A server-side context; ``client_ca``: ask clients for a certificate the CA signed."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        if self_signed:
            context.load_cert_chain(self.self_signed_cert, self.self_signed_key)
        else:
            context.load_cert_chain(self.server_cert, self.server_key)
        if client_ca:
            context.load_verify_locations(self.ca)
            context.verify_mode = ssl.CERT_REQUIRED
        return context


def _key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "proxytop tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _write(path: str, key, cert) -> None:
    with open(path, "wb") as handle:
        handle.write(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        key_path = path.replace("-cert.pem", "-key.pem")
        with open(key_path, "wb") as handle:
            handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                           serialization.NoEncryption()))
        os.chmod(key_path, 0o600)


def _certificate(subject: x509.Name, key, issuer: x509.Name, issuer_key, ca: bool = False, server: bool = False,
                 client: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                      content_commitment=False, key_encipherment=False,
                                                      data_encipherment=False, key_agreement=False,
                                                      encipher_only=False, decipher_only=False), critical=True)
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                                        critical=False)
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    if client:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_certificates(folder: str) -> Certificates:
    os.makedirs(folder, exist_ok=True)
    certs = Certificates(folder)
    ca_key, ca_name = _key(), _name("proxytop test CA")
    ca = _certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    with open(certs.ca, "wb") as handle:
        handle.write(ca.public_bytes(serialization.Encoding.PEM))
    server_key = _key()
    _write(certs.server_cert, server_key,
           _certificate(_name("proxytop test server"), server_key, ca_name, ca_key, server=True))
    client_key = _key()
    _write(certs.client_cert, client_key,
           _certificate(_name("proxytop test client"), client_key, ca_name, ca_key, client=True))
    rogue_key, rogue_name = _key(), _name("self-signed server")
    _write(certs.self_signed_cert, rogue_key, _certificate(rogue_name, rogue_key, rogue_name, rogue_key, server=True))
    return certs
