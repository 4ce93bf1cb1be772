"""The hop in C forwards whole messages of every length class both ways, and ends with its client."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import cfloor
from bench import floor as bare
from bench.roundtrip import CALL
from tests.support.wsclient import McpClient

UID_BASE = 3_480_000


async def test_messages_of_every_length_class_go_through_and_back() -> None:
    """Through the real sandboxed server: ids long enough that the frames both ways use 7-bit, 16-bit
    and 64-bit lengths, the longest reaching the forwarder in several reads."""
    async with bare.serving(UID_BASE, module="bench.cfloor") as url:
        client = await McpClient.connect(url, max_size=None)
        try:
            assert "result" in await client.initialize()
            assert await client.call(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
            for size in (200, 70_000, 300_000):
                long_id = "x" * size
                reply = await client.call(long_id, "tools/call", CALL)
                assert reply["id"] == long_id and "result" in reply, str(reply)[:300]
        finally:
            await client.close()
        # The close went through the C program: a new session still gets a server of its own.
        again = await McpClient.connect(url)
        try:
            assert "result" in await again.initialize()
        finally:
            await again.close()


def test_without_a_compiler_the_build_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cfloor.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="needs a C compiler"):
        cfloor.build(tmp_path / "cfloor")


def test_a_build_is_reused_until_its_source_changes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    source = tmp_path / "cfloor.c"
    source.write_bytes(cfloor.SOURCE.read_bytes())
    monkeypatch.setattr(cfloor, "SOURCE", source)
    out = tmp_path / "out"
    binary = cfloor.build(out / "cfloor")
    built = binary.stat().st_mtime_ns
    assert cfloor.build(binary).stat().st_mtime_ns == built
    later = binary.stat().st_mtime + 10
    os.utime(source, (later, later))  # the source edited after the build
    assert cfloor.build(binary).stat().st_mtime_ns != built
    assert list(out.iterdir()) == [binary]  # no partial file left behind
