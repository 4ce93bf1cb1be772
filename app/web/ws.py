"""The WebSocket route /ws/{name} (see docs/websocket.md)."""

from fastapi import APIRouter

router = APIRouter()
