"""JSON routes: health and the demo-server registry."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.web.state import get_state

router = APIRouter()


@router.get("/healthz")
async def healthz(request: Request) -> JSONResponse:
    state = get_state(request)
    body = state.health()
    return JSONResponse(body, status_code=200 if body["status"] in ("ok", "degraded") else 503)


@router.get("/api/servers")
async def servers(request: Request) -> list[dict[str, str]]:
    return [demo.public() for demo in get_state(request).demos.values()]
