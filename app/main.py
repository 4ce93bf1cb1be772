"""The app factory: create_app(settings) builds a fresh FastAPI app; in-process tests hand it their own
process source (plain subprocesses, no sandbox)."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.config import PROJECT_ROOT, Settings
from app.course.catalog import Catalog
from app.demos import load_registry
from app.sandbox.process import ProcessSource
from app.web import (
    access,
    api,
    class_joins,
    consent,
    course_pages,
    endpoints,
    errors,
    gradebook,
    instructor,
    join,
    learner,
    mcp_http,
    oauth,
    oauth_owner,
    pages,
    protected,
    resume,
    roster,
    runs,
    spec_refs,
    workspace,
    ws,
)
from app.web.apps_proxy import AppsProxyMiddleware
from app.web.client import ClientMiddleware, TrustedProxies
from app.web.connections import RequestPacing
from app.web.guard import GuardMiddleware
from app.web.state import AppState

log = logging.getLogger("app")


def create_app(
    settings: Settings | None = None,
    process_source: ProcessSource | None = None,
    catalog: Catalog | None = None,
) -> FastAPI:
    """The app for `settings`. With a `process_source`, sessions run its processes instead of the
    sandbox's (tests only: /healthz then reports every sandbox layer off); with a `catalog`, the
    lessons are these, already parsed, not those of `settings.lessons_dir` (tests only)."""
    settings = settings or Settings()
    demos = load_registry(settings.extra_demo_modules)
    state = AppState(
        settings=settings, demos=demos, process_source=process_source, catalog=catalog or Catalog()
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        await state.start()
        try:
            yield
        finally:
            await state.stop()

    # No API docs page: FastAPI's loads its script from a CDN, and pages here make no outside requests.
    app = FastAPI(title="MCP Playground", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.playground = state
    app.mount("/static", StaticFiles(directory=PROJECT_ROOT / "static"), name="static")
    app.include_router(api.router)
    app.include_router(ws.router)
    app.include_router(endpoints.router)
    app.include_router(mcp_http.router)
    app.include_router(oauth.router)
    app.include_router(oauth_owner.router)
    app.include_router(consent.router)
    app.include_router(protected.router)
    refused = state.metrics.writes_capped.labels("oauth_clients").inc
    app.router.routes.extend(
        oauth.client_routes(state.flows, settings, refused)
    )  # the SDK's, for OAuth clients
    app.include_router(workspace.router)
    app.include_router(runs.router)
    app.include_router(pages.router)
    app.include_router(course_pages.router)
    app.include_router(spec_refs.router)
    app.include_router(join.router)
    app.include_router(resume.router)
    app.include_router(access.router)
    app.include_router(instructor.router)
    app.include_router(class_joins.router)
    app.include_router(gradebook.router)
    app.include_router(roster.router)
    errors.install(app)
    learner.install(app)
    access.install(app, settings.access_code)
    app.add_middleware(GuardMiddleware)  # before any cookie is read or minted
    # The apps' sandbox proxy host gets the proxy and nothing of the site (app/web/apps_proxy.py).
    app.add_middleware(AppsProxyMiddleware, settings=settings)
    app.add_middleware(RequestPacing, connections=state.connections)  # each address at its pace
    # Outermost: who the client is and how it reached us, for everything above.
    app.add_middleware(ClientMiddleware, trusted=TrustedProxies(settings.trusted_proxies))
    return app
