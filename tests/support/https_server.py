"""A small HTTPS server on a free loopback port, for what the app fetches from a client's own site (a
client ID metadata document): each path answers as the test says, under a certificate for 127.0.0.1
signed by the server's own authority, whose PEM file the app is told to trust."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

# path -> (status, headers, body); a body given as a list of pieces is sent one piece at a time, each
# after TRICKLE_S (a site that keeps a fetch going without ever finishing it soon).
Answer = tuple[int, dict[str, str], bytes | list[bytes]]
TRICKLE_S = 0.2


def make_authority(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (its own authority) and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "playground test authority")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                       critical=False)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = folder / "authority.pem", folder / "authority-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))  # fmt: skip
    return cert_path, key_path


@contextmanager
def https_server(cert: Path, key: Path, answer: Callable[[str], Answer]) -> Iterator[str]:
    """Serve `answer(path)` for every GET; yields the base URL (https://127.0.0.1:PORT)."""
    seen: list[str] = []
    closing = threading.Event()  # ends a trickle when the server stops

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            seen.append(self.path)
            status, headers, body = answer(self.path)
            pieces = body if isinstance(body, list) else [body]
            self.send_response(status)
            for name, value in {"Content-Length": str(sum(map(len, pieces))), **headers}.items():
                self.send_header(name, value)
            self.end_headers()
            for n, piece in enumerate(pieces):
                if n and closing.wait(TRICKLE_S):
                    return
                try:
                    self.wfile.write(piece)
                    self.wfile.flush()
                except OSError:  # the fetcher gave up
                    return

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}"
    finally:
        closing.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
