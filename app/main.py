"""The app factory: create_app(settings) builds a fresh FastAPI app (tests build one per test)."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.config import PROJECT_ROOT, Settings
from app.demos import load_registry
from app.web import api, classes, course_pages, errors, instructor, learner, pages, ws
from app.web.state import AppState

log = logging.getLogger("app")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    state = AppState(settings=settings, demos=load_registry(settings.extra_demo_modules))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await state.start()
        try:
            yield
        finally:
            await state.stop()

    app = FastAPI(title="MCP Playground", lifespan=lifespan, docs_url="/api/docs", redoc_url=None)
    app.state.playground = state
    app.mount("/static", StaticFiles(directory=PROJECT_ROOT / "static"), name="static")
    app.include_router(api.router)
    app.include_router(ws.router)
    app.include_router(pages.router)
    app.include_router(course_pages.router)
    app.include_router(classes.router)
    app.include_router(instructor.router)
    errors.install(app)
    learner.install(app)
    classes.install(app, settings.access_code)
    return app
