"""WebSocket by hand (RFC 6455) for the capacity benchmark's learners (bench/learners.py), light
enough that thousands fit in one load generator. Framing is section 5.2; the opening handshake,
section 4."""

from __future__ import annotations

import base64
import hashlib
import struct

from websockets.speedups import apply_mask

ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # section 1.3
CONTINUATION, TEXT, CLOSE, PING, PONG = 0x0, 0x1, 0x8, 0x9, 0xA


class HandshakeRefused(Exception):
    """The server answered the upgrade with something other than 101 and the `mcp` subprotocol."""


def accept_for(key: bytes) -> bytes:
    """The Sec-WebSocket-Accept value that answers a client's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1(key + ACCEPT_GUID).digest())


def upgrade_request(host: str, port: int, path: str, key: bytes) -> bytes:
    """A client's opening handshake asking for the `mcp` subprotocol; `key`: 16 random bytes, base64."""
    return (
        f"GET {path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key.decode()}\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: mcp\r\n\r\n"
    ).encode()


def upgrade_refusal(head: bytes, key: bytes) -> str | None:
    """Why the server's answer to our upgrade (`head`: its lines, up to the blank one) is not a 101
    for `key` with the `mcp` subprotocol; None when it is."""
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {
        name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)
    }
    if (
        status.split(" ")[1:2] != ["101"]
        or headers.get("sec-websocket-accept") != accept_for(key).decode()
        or headers.get("sec-websocket-protocol") != "mcp"
    ):
        return f"{status!r}, headers {headers}"
    return None


def frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """A whole frame: unmasked (a server's), or masked with the 4-byte `mask` (a client's)."""
    size, masked = len(payload), 0x80 if mask is not None else 0
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, masked | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, masked | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, masked | 127, size)
    if mask is None:
        return head + payload
    return head + mask + apply_mask(payload, mask)


def parse(buffer: bytes | bytearray, at: int = 0) -> tuple[int, bool, bytes, int] | None:
    """The frame that starts at `at` in `buffer`: its first byte (FIN and opcode), whether it was
    masked, its payload (unmasked), and where the next frame starts; None while the rest of it is
    still on its way."""
    if len(buffer) < at + 2:
        return None
    first, second = buffer[at], buffer[at + 1]
    size, start = second & 0x7F, at + 2
    if size == 126:
        if len(buffer) < start + 2:
            return None
        (size,) = struct.unpack_from("!H", buffer, start)
        start += 2
    elif size == 127:
        if len(buffer) < start + 8:
            return None
        (size,) = struct.unpack_from("!Q", buffer, start)
        start += 8
    if not second & 0x80:
        end = start + size
        return (first, False, bytes(buffer[start:end]), end) if len(buffer) >= end else None
    end = start + 4 + size
    if len(buffer) < end:
        return None
    return first, True, apply_mask(bytes(buffer[start + 4 : end]), bytes(buffer[start : start + 4])), end
