"""The MCP Apps sandbox proxy, served on its own origin (docs/apps.md).

A host that is a web page renders an app through a proxy on another origin than its own (MCP Apps
2026-01-26, "Sandbox proxy"), and that proxy runs with `allow-same-origin`: whatever the app's HTML
does, it does as the proxy's origin. So the proxy's host serves nothing of the site. A request that
names it (its Host header) never reaches the site's routes: the proxy page and its script are all it
gets; any other GET is sent to the same path on the site, anything else refused. The site, in turn,
has no route for the proxy.

The proxy page's Content-Security-Policy is built here from the domains the app's resource declares
(`_meta.ui.csp`, in the `csp` query parameter): the app's document, loaded into the page as `srcdoc`,
inherits it. A declared value that is not an origin, or that names the site or the proxy, is left out.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.config import PROJECT_ROOT, Settings

PROXY_PATH = "/apps/proxy"
SCRIPT_PATH = "/apps/proxy.js"
SCRIPT_FILE = PROJECT_ROOT / "static" / "apps" / "proxy.js"
# The declared domains travel in the page's URL: a resource that declares more is refused.
MAX_CSP_PARAM = 4096
MAX_DOMAINS = 32
# An origin as the extension declares one: a scheme, a host (a leading `*.` for any subdomain), a port.
DOMAIN = re.compile(
    r"^(https?|wss?)://(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$"
)
LISTS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")


def host_of(origin: str) -> str:
    """An origin's host and port as a Host header carries them (`localhost:8000`)."""
    return urlsplit(origin).netloc.lower()


def origin_problem(settings: Settings) -> str | None:
    """Why the start must refuse, as to MCP Apps: enabled without a second origin, or an origin that
    is not one, or one on the site's own host or domain."""
    origin, reason = settings.apps_proxy
    if origin is None:
        return reason if settings.apps == "on" else None
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        return f"PLAYGROUND_APPS_ORIGIN must be an origin such as https://apps.example-usercontent.net, not {origin!r}."
    if settings.hosting and not settings.allowed_hosts:
        return (
            "PLAYGROUND_APPS_ORIGIN needs PLAYGROUND_ALLOWED_HOSTS: the site's names are the only pages that "
            "may frame the proxy."
        )
    # The names the site itself is reached by (on loopback, the other loopback name is the proxy's).
    names = frozenset(n.lower().strip("[]") for n in settings.allowed_hosts) or frozenset({settings.host})
    if parts.hostname in names or _same_domain(parts.hostname, names):
        return (
            f"PLAYGROUND_APPS_ORIGIN's host {parts.hostname!r} shares the site's domain: an app could then "
            "set cookies the site receives. Give the proxy a host name under another registrable domain."
        )
    return None


def _same_domain(name: str, site_names: frozenset[str]) -> bool:
    """Whether `name` and a site name share a registrable domain (the Public Suffix List's: a browser
    lets a page set cookies for it), so `apps.school.ac.uk` shares one with `playground.school.ac.uk`
    and `school-apps.ac.uk` does not."""
    sites = [site for site in site_names if not _is_address(site)]
    if _is_address(name) or not sites:
        return False  # on loopback the site is an address: the list is not even read
    suffixes = PublicSuffixList()  # the list bundled with the package: no network, 60 ms once a start

    def registrable(host: str) -> str:
        try:  # as a browser compares names: an internationalized one in its ASCII form
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            pass
        return suffixes.privatesuffix(host) or host

    mine = registrable(name)
    return any(registrable(site) == mine for site in sites)


def _is_address(name: str) -> bool:
    return name.replace(".", "").isdigit() or ":" in name


def declared(value: object) -> tuple[dict[str, list[str]], bool, list[str]]:
    """The declared domains that may go into the policy, whether WebAssembly may compile, and what was
    left out (as `list: value` lines)."""
    kept: dict[str, list[str]] = {name: [] for name in LISTS}
    left_out: list[str] = []
    wasm = False
    if not isinstance(value, dict):
        return kept, wasm, left_out
    wasm = value.get("wasmUnsafeEval") is True
    for name in LISTS:
        items = value.get(name)
        if not isinstance(items, list):
            continue
        for item in items[:MAX_DOMAINS]:
            if isinstance(item, str) and DOMAIN.fullmatch(item.lower()):  # `$` alone lets a newline by
                kept[name].append(item.lower())
            else:
                left_out.append(f"{name}: {str(item)[:100]}")
    return kept, wasm, left_out


def policy(csp: dict[str, list[str]], wasm: bool, site_origins: list[str], forbidden_hosts: set[str]) -> str:
    """The proxy page's Content-Security-Policy: the extension's restrictive default, widened only by
    declared origins that are not the site's or the proxy's own, and closed further where the
    extension lets a host (no forms, no plugins, framed only by the site)."""

    def reaches_forbidden(domain: str) -> bool:
        host = urlsplit(domain).hostname or ""
        if host.startswith("*."):  # any subdomain: the site's own name may be one of them
            return any(f == host[2:] or f.endswith(host[1:]) for f in forbidden_hosts)
        return host in forbidden_hosts

    def allowed(name: str) -> list[str]:
        return [d for d in csp[name] if not reaches_forbidden(d)]

    resources, connect = allowed("resourceDomains"), allowed("connectDomains")
    frames, bases = allowed("frameDomains"), allowed("baseUriDomains")
    script = ["'self'", "'unsafe-inline'", *resources, *(["'wasm-unsafe-eval'"] if wasm else [])]
    directives = [
        "default-src 'none'",
        "script-src " + " ".join(script),
        "style-src " + " ".join(["'self'", "'unsafe-inline'", *resources]),
        "img-src " + " ".join(["'self'", "data:", *resources]),
        "media-src " + " ".join(["'self'", "data:", *resources]),
        "font-src " + " ".join(["'self'", *resources]),
        "connect-src " + (" ".join(connect) or "'none'"),
        "frame-src " + (" ".join(frames) or "'none'"),
        "base-uri " + (" ".join(bases) or "'self'"),
        "object-src 'none'",
        "form-action 'none'",
        "frame-ancestors " + " ".join(["'self'", *site_origins]),
    ]
    return "; ".join(directives)


class AppsProxyMiddleware:
    """Answers every request that names the proxy's host; passes the rest to the site."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.origin, _ = settings.apps_proxy
        self.host = host_of(self.origin) if self.origin else None
        self.site_origins = _site_origins(settings, self.origin)
        self.forbidden = {urlsplit(o).hostname or "" for o in self.site_origins}
        if self.origin:
            self.forbidden.add(urlsplit(self.origin).hostname or "")
        self.script = SCRIPT_FILE.read_bytes() if self.host else b""
        # The console's origins, so that the proxy posts only to them: read by proxy.js.
        self.page = PROXY_HTML.replace("SITE_ORIGINS", " ".join(self.site_origins))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.host is None or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if Headers(scope=scope).get("host", "").lower() != self.host:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = self._answer(Request(scope))
        await response(scope, receive, send)

    def _answer(self, request: Request) -> Response:
        path, method = request.url.path, request.method
        if method in ("GET", "HEAD") and path == PROXY_PATH:
            return self._proxy_page(request)
        if method in ("GET", "HEAD") and path == SCRIPT_PATH:
            return Response(self.script, media_type="text/javascript", headers=_common_headers())
        if method in ("GET", "HEAD") and self.site_origins and not path.startswith("/apps/"):
            target = (
                self.site_origins[0]
                + request.url.path
                + (f"?{request.url.query}" if request.url.query else "")
            )
            return RedirectResponse(target, status_code=307)
        return PlainTextResponse(
            "This host serves only the MCP Apps sandbox proxy.", status_code=404, headers=_common_headers()
        )

    def _proxy_page(self, request: Request) -> Response:
        raw = request.query_params.get("csp", "")
        if len(raw) > MAX_CSP_PARAM:
            return PlainTextResponse(
                "The declared domains are too long.", status_code=414, headers=_common_headers()
            )
        try:
            value = json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # RecursionError: a few thousand `[` nest past Python's limit
            return PlainTextResponse("csp must be JSON.", status_code=400, headers=_common_headers())
        kept, wasm, _ = declared(value)
        headers = _common_headers()
        headers["content-security-policy"] = policy(kept, wasm, self.site_origins, self.forbidden)
        return Response(self.page, media_type="text/html", headers=headers)


def _site_origins(settings: Settings, proxy: str | None) -> list[str]:
    """The origins the console runs on, which alone may frame the proxy (the first is where a stray
    GET goes): on loopback the site's own name; in hosting mode each allowed host over HTTPS."""
    if proxy is None:
        return []
    if not settings.hosting:
        name = settings.host if ":" not in settings.host else f"[{settings.host}]"
        return [f"http://{name}:{settings.port}"]
    scheme = urlsplit(proxy).scheme
    return [f"{scheme}://{name}" for name in settings.allowed_hosts]


def _common_headers() -> dict[str, str]:
    return {
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
    }


# The proxy: an empty page and its script (static/apps/proxy.js), which makes the app's frame.
PROXY_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MCP Apps sandbox proxy</title>
<meta name="playground-site" content="SITE_ORIGINS">
<style>html,body{margin:0;padding:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style>
<script src="/apps/proxy.js"></script></head><body></body></html>
"""
