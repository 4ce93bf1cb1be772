"""The benchmark's lean client speaks WebSocket as a strict implementation (`websockets`' server)
reads it, and measures the relay through the real app."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.server import ServerConnection

from bench.leanclient import LeanClient
from bench.roundtrip import CALL
from tests.support.wsserver import server


async def echo(ws: ServerConnection) -> None:
    async for message in ws:
        await ws.send(message)


@pytest.mark.parametrize("size", [10, 125, 126, 65_535, 65_536, 300_000])
async def test_every_length_class_is_masked_and_framed_as_the_library_reads_it(size: int) -> None:
    async with server(echo) as url:
        client = await LeanClient.connect(url)
        try:
            message = {"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"pad": "é" * size}}
            await client.send(message)
            assert await client.recv() == message  # the server unmasked it; a bad mask is garbage
        finally:
            await client.close()


async def test_a_ping_is_answered_and_a_fragmented_message_put_back_together() -> None:
    pongs: list[float] = []

    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        waiter = await ws.ping(b"are you there")
        await ws.send(['{"jsonrpc": "2.0", ', '"id": 7, ', '"result": {}}'])  # three frames
        pongs.append(await asyncio.wait_for(waiter, 30))
        await ws.wait_closed()

    async with server(handler) as url:
        client = await LeanClient.connect(url)
        try:
            assert await client.call(7, "ping") == {"jsonrpc": "2.0", "id": 7, "result": {}}
        finally:
            await client.close()
    assert len(pongs) == 1


async def test_a_close_from_the_server_is_an_error_that_names_its_code() -> None:
    async def handler(ws: ServerConnection) -> None:
        await ws.recv()
        await ws.close(4008, "too often")

    async with server(handler) as url:
        client = await LeanClient.connect(url)
        try:
            with pytest.raises(ConnectionError, match="4008 'too often'"):
                await client.call(1, "ping")
        finally:
            await client.close()


async def test_closing_sends_a_normal_close_and_waits_for_the_servers() -> None:
    codes: list[int | None] = []

    async def handler(ws: ServerConnection) -> None:
        await ws.wait_closed()
        codes.append(ws.close_code)

    async with server(handler) as url:
        client = await LeanClient.connect(url)
        await client.close()
        async with asyncio.timeout(30):
            while not codes:
                await asyncio.sleep(0.01)
    assert codes == [1000]


async def test_a_tools_call_through_the_real_relay(live_app) -> None:  # noqa: ANN001
    client = await LeanClient.connect(live_app.ws_base + "/ws/demo-orders")
    try:
        assert "result" in await client.initialize()
        reply = await client.call(2, "tools/call", CALL)
        assert reply["id"] == 2 and "result" in reply, reply
        assert json.dumps(reply).count("481516") >= 1
    finally:
        await client.close()
