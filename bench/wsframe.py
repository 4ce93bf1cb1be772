"""WebSocket framing by hand (RFC 6455, section 5.2), shared by the benchmark's measuring sticks:
the thin floor's server side (bench/thinfloor.py) and the lean client (bench/leanclient.py)."""

from __future__ import annotations

import base64
import hashlib
import struct

from websockets.speedups import apply_mask

ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # section 1.3
CONTINUATION, TEXT, CLOSE, PING, PONG = 0x0, 0x1, 0x8, 0x9, 0xA


def accept_for(key: bytes) -> bytes:
    """The Sec-WebSocket-Accept value that answers a client's Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1(key + ACCEPT_GUID).digest())


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
