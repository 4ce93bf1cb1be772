"""Settings, read from the environment (prefix PLAYGROUND_) or passed to create_app()."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# In hosting mode the instructor token is a real secret: at least this long.
MIN_HOSTING_TOKEN_LENGTH = 24


# On loopback the apps' sandbox proxy takes the other name of this machine: another host, so another
# origin and another cookie jar than the site's.
LOOPBACK_PAIR = {"127.0.0.1": "localhost", "localhost": "127.0.0.1", "::1": "localhost"}


class Settings(BaseSettings):
    """Every field has a description, which docs/settings.md shows (`python -m app.settings_doc`
    writes it; tests fail when a description is missing or the doc is out of date)."""

    model_config = SettingsConfigDict(env_prefix="PLAYGROUND_", extra="forbid")

    host: str = Field("127.0.0.1", description="Address to bind. Anything but loopback is hosting mode.")
    port: int = Field(8000, description="TCP port to serve on.")
    data_dir: Path = Field(
        PROJECT_ROOT / "data",
        description="Folder for the progress database and other state kept across restarts.",
    )
    lessons_dir: Path = Field(
        PROJECT_ROOT / "lessons", description="Folder of lesson files, parsed at start-up."
    )
    hosting_mode: bool = Field(
        False,
        description=(
            "Serve as a hosted site even on a loopback address (behind a reverse proxy on this machine). "
            "Binding anything but loopback turns it on by itself."
        ),
    )
    instructor_token: str | None = Field(
        None,
        description=(
            "Token for the instructor pages. Unset: one is generated and printed at start-up. "
            f"In hosting mode it must be at least {MIN_HOSTING_TOKEN_LENGTH} characters."
        ),
    )
    database_url: str | None = Field(
        None,
        description=(
            "PostgreSQL URL for progress (postgresql://user@host/db), for several replicas sharing one "
            "database. Unset: SQLite in the data folder."
        ),
    )
    access_code: str | None = Field(
        None,
        description="A site-wide code every visitor must enter once, for a public deployment. Unset: open.",
    )
    max_sessions_per_class: int = Field(
        120,
        description="Default cap on live sessions of one class (an instructor can set another per class).",
    )
    log_format: str = Field("text", description='Log lines as "text" or as "json" (one object per line).')
    cookie_secret: str | None = Field(
        None,
        description=(
            "Secret that signs learner cookies. Unset: one is made once and kept in the progress store, "
            "so every replica sharing that store accepts the same cookies."
        ),
    )
    trusted_proxies: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "::1"],
        description=(
            'Addresses (or networks, or "*") of reverse proxies whose X-Forwarded-For names the real client. '
            "From anyone else the header is ignored."
        ),
    )
    failed_attempts_per_address: int = Field(
        20,
        description=(
            "Wrong instructor tokens, access codes, join codes or resume codes one client address may send "
            "in 10 minutes (each kind counted apart); past it, each further wrong one is answered 429 at "
            "once. A right one always passes."
        ),
    )
    new_learners_per_address: int = Field(
        200,
        description=(
            "Most new learner identities one client address may be given in 10 minutes "
            "(a class behind one NAT address arrives together: keep it above the class size)."
        ),
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Extra Origin values allowed to open a WebSocket (the site's own origin is always allowed).",
    )
    apps: Literal["auto", "on", "off"] = Field(
        "auto",
        description=(
            "Render MCP Apps in the console. auto: on when there is a second origin for the apps' sandbox "
            "proxy (PLAYGROUND_APPS_ORIGIN, or on loopback the other loopback name), else off with the "
            "reason shown; on: the start refuses without one; off: never."
        ),
    )
    apps_origin: str = Field(
        "",
        description=(
            "Origin of the MCP Apps sandbox proxy (https://apps.example-usercontent.net), on a host outside "
            "the site's registrable domain, reaching this app (nginx serves both names). Empty: on loopback "
            "http://localhost:PORT when the site is 127.0.0.1 (the reverse when the site is localhost)."
        ),
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description=(
            "Host names the site answers to; any other Host header is refused (DNS rebinding). Empty: on "
            "loopback only localhost, 127.0.0.1 and ::1; in hosting mode any name (set it there)."
        ),
    )

    # Sandbox and sessions.
    sandbox: bool = Field(True, description="Run every demo server in the sandbox. Off only for development.")
    rootless_sandbox: bool = Field(
        False,
        description=(
            "Build the sandbox inside a user namespace, as the app does by itself when not run as root "
            "(instances then share the app's uid). Set it to try that mode as root."
        ),
    )
    run_as_user: str = Field(
        "nobody",
        description=(
            "User the web process becomes once the fork server (the only part that needs root) is up; "
            "the data folder is given to it. Empty: stay root. Ignored when the app is not started as root."
        ),
    )
    accept_weak_sandbox: bool | None = Field(
        None,
        description=(
            "Start even when a sandbox layer is missing. Default: yes on loopback (with a loud warning), "
            "no in hosting mode."
        ),
    )
    max_sessions: int = Field(
        250, description="Most live demo-server sessions at once, all learners together."
    )
    max_sessions_per_learner: int = Field(
        4,
        description=(
            "Most live sessions one learner may hold; clients without a learner cookie count together, "
            "by client address."
        ),
    )
    new_sessions_per_min: int = Field(
        60,
        ge=1,
        description=(
            "Most new sessions one learner (or one client address without a learner cookie) may open "
            "in a minute: each starts a sandboxed server, so opening and closing in a loop would take "
            "the machine's CPU from everyone else. Reconnecting to a session is not a new one."
        ),
    )
    outside_class_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=(
            "Share of PLAYGROUND_MAX_SESSIONS that learners outside any class may hold together (their "
            "exercise runs too); the rest is kept for classes."
        ),
    )
    max_sessions_per_address: int = Field(
        40,
        ge=1,
        description=(
            "Most live sessions and exercise runs that learners outside any class may hold together from "
            "one client address (IPv6: one /64), whatever identities they use, since identities cost "
            "nothing to make. Sized for a school's NAT: 40 people trying the playground before their "
            "class starts, one console each. Class members are not counted: their class has its own cap."
        ),
    )
    warm_pool_size: int = Field(
        4,
        description="Sandboxed demo-orders instances kept started ahead of demand (other servers keep one).",
    )
    warm_pool_growth: int = Field(
        48,
        ge=0,
        description=(
            "Most instances the warm pools may keep beyond their sizes, all servers together: each "
            "learner who finds a pool empty (a class opening its consoles at once) grows it by one "
            "while the servers use less than half of PLAYGROUND_MEMORY_BUDGET_MB; a grown pool goes back "
            "to its size after 10 minutes in which nobody takes from it. About 4 MiB each while idle; 0 "
            "keeps every pool at its size."
        ),
    )
    idle_timeout_s: float = Field(600.0, description="A session silent this long (both ways) is ended.")
    max_session_s: float = Field(4 * 3600.0, description="Longest a session may live, busy or not.")
    run_time_limit_s: float = Field(
        10.0, gt=0, le=60, description="Longest a lesson's runnable block may run before it is stopped."
    )
    reconnect_grace_s: float = Field(
        30.0, description="How long a dropped connection's instance and transcript wait for a reconnect."
    )
    uid_base: int = Field(
        200_000, description="First uid of the reserved range: each live instance runs under its own uid."
    )
    memory_limit_mb: int = Field(
        512,
        description=(
            "Memory one demo server may use: its cgroup's limit (all its processes together) and its "
            "Python process's address space (RLIMIT_AS)."
        ),
    )
    memory_budget_mb: int | None = Field(
        None,
        ge=64,
        description=(
            "Memory every demo server together may use (their parent cgroup's limit): past it the "
            "largest is ended, and no new session starts while they use nearly all of it. Default: "
            "half the host's memory (or of the app's own cgroup limit, if lower)."
        ),
    )
    cpu_limit_s: int = Field(120, description="CPU seconds one demo server process may use (RLIMIT_CPU).")
    max_open_files: int = Field(64, description="Open descriptors one demo server process may hold.")
    max_file_size_mb: int = Field(1, description="Largest file a demo server may write into its tmpfs.")
    max_processes: int = Field(
        32, description="Processes and threads one instance's uid may run (RLIMIT_NPROC)."
    )
    tmpfs_size_mb: int = Field(4, description="Size of the private, writable tmpfs (/tmp) of each instance.")
    server_max_line_bytes: int = Field(
        1024 * 1024, description="Longest line a demo server may write; a longer one ends the session."
    )
    server_max_output_bytes: int = Field(
        256 * 1024 * 1024,
        description="Most bytes a demo server may write in one session, all lines together.",
    )
    server_read_bytes_per_s: int = Field(
        4 * 1024 * 1024,
        gt=0,
        description=(
            "Bytes a second the relay reads from one learner's servers (all their sessions, stdout and "
            "stderr together), on average after a first second's worth. Each line or stderr piece counts "
            "as 4096 bytes more and each JSON value as 128 more, since handling one costs about that. A "
            "server that writes faster waits; one that keeps writing faster for 10 s is stopped, so no "
            "learner takes the web process's time from the others."
        ),
    )
    client_read_bytes_per_s: int = Field(
        1024 * 1024,
        gt=0,
        description=(
            "Bytes a second the relay reads from one session's client, on average after a first "
            "second's worth, each JSON value counting as 128 bytes more; the sessions of one learner in "
            "a class together, and of one address outside classes together, at twice that. A client that "
            "sends faster waits: its next WebSocket frame stays unread, its next HTTP request unanswered."
        ),
    )
    extra_demo_modules: list[str] = Field(
        default_factory=list,
        description=(
            "Extra demo-server modules (module paths exposing `server` and `INFO`) to register. "
            "For instructors' own servers and the test suite; learners can never name one."
        ),
    )

    # The relay.
    max_message_bytes: int = Field(1024 * 1024, description="Largest client message the relay forwards.")
    max_message_values: int = Field(
        10_000,
        gt=0,
        description=(
            "Most JSON values (objects, arrays and the items in them) one message may hold, either way: "
            "a client's message with more is refused, a server line with more ends its session "
            "(reading a 1 MiB line of them takes about 100 ms)."
        ),
    )
    max_frame_bytes: int = Field(
        4 * 1024 * 1024,
        description="Largest WebSocket frame; a bigger one closes the connection with code 1009.",
    )
    max_connections: int | None = Field(
        None,
        ge=1,
        description=(
            "Most TCP connections open at once, everybody together (pages, API, consoles, MCP clients); "
            "more are closed at once. Default: 4 per PLAYGROUND_MAX_SESSIONS, at least 1024; lowered "
            "(with a warning) to what the open-file limit leaves beside the sandboxed servers."
        ),
    )
    max_connections_per_address: int = Field(
        256,
        ge=1,
        description=(
            "Most TCP connections one client address may hold at once (IPv6: one /64); more are closed "
            "at once. A trusted proxy's own address is not capped (the proxy caps its clients). A class "
            "behind one NAT address needs about 3 per learner, 7 while pages load."
        ),
    )
    requests_per_s_per_address: float = Field(
        200.0,
        gt=0,
        description=(
            "HTTP requests (pages, API, endpoint calls, WebSocket handshakes) one client address "
            "(IPv6: one /64) may start a second, on average past a first 10 seconds' worth: past it, its "
            "next request waits its turn, nothing is refused. A class behind one NAT address shares it."
        ),
    )
    request_head_timeout_s: float = Field(
        15.0,
        gt=0,
        description=(
            "A connection must send a whole request head (request line and headers) within this long "
            "of opening, or of its first byte after a response; else it is closed (408 when it had "
            "begun)."
        ),
    )
    request_body_idle_s: float = Field(
        30.0,
        gt=0,
        description=(
            "Longest a request's body may stall while the app reads it; then the connection is closed. "
            "A body waiting its turn at the session's pace is not stalled."
        ),
    )
    max_request_head_bytes: int = Field(
        64 * 1024,
        ge=4096,
        description="Largest request head (request line and headers); a bigger one gets 431 and the connection closes.",
    )
    max_messages_per_10s: int = Field(
        100,
        description=(
            "Frames one connection may send in any 10 seconds (every kind counts); as many again past "
            "the limit closes it with 1008."
        ),
    )
    max_restarts_per_min: int = Field(
        5,
        description="Server restarts one console may ask for in any 60 seconds (on top of the frame limit).",
    )
    transcript_max_bytes: int = Field(
        2 * 1024 * 1024,
        description="Bytes of messages a session's transcript keeps; the oldest are let go past it.",
    )
    endpoint_lifetime_s: float = Field(
        8 * 3600.0, description="How long a learner's Streamable HTTP endpoint URL works after it is made."
    )
    max_endpoints_per_learner: int = Field(
        3, description="Streamable HTTP endpoints one learner may hold at once."
    )
    new_endpoints_per_hour_per_address: int = Field(
        300,
        ge=1,
        description=(
            "Streamable HTTP endpoints the learners at one client address (IPv6: one /64) may make in an "
            "hour, whatever identities they use; past it, 429. A class behind one NAT address shares it."
        ),
    )
    saved_kib_per_hour_per_address: int = Field(
        64 * 1024,
        ge=64,
        description=(
            "KiB of files (every version) the learners at one client address (IPv6: one /64) may save in "
            "an hour; past it, a save is refused (429) until older ones age out. Identities cost nothing "
            "to make, so this bounds what one visitor adds to the database. A class behind one NAT address "
            "shares it: 40 learners saving a 10 KiB file every minute use 24 MiB."
        ),
    )
    unused_clients_per_address: int = Field(
        300,
        ge=1,
        description=(
            "OAuth clients never used (no authorization asked for) that the clients at one address "
            "(IPv6: one /64) may have registered, for protected endpoints, kept at once; a new one past "
            "it lets the address's oldest unused one go, and is never refused for it (a class behind one "
            "NAT address shares the address, and a real client asks for an authorization at once). A "
            "client unused for a day, or for two days after its last token, is let go."
        ),
    )
    client_documents_per_hour: int = Field(
        300,
        ge=1,
        description=(
            "New OAuth clients named by a client ID metadata document that one client address (IPv6: "
            "one /64) may add in an hour, each a fetch of its document; past it, /authorize refuses "
            "the next new one until older ones age out (clients kept already go on working)."
        ),
    )
    replica_silence_s: float = Field(
        15.0,
        gt=0,
        le=30.0,
        description=(
            "With PostgreSQL (several replicas): a replica silent this long drops out of every live-session "
            "count; each replica says it is alive three times as often. At most 30."
        ),
    )
    reply_timeout_s: float = Field(
        10.0, description="After this long without a reply, the console says the request is still waiting."
    )
    client_documents_private: bool | None = Field(
        None,
        description=(
            "Whether the authorization server fetches a client ID metadata document from a loopback, "
            "private or link-local address. Default: yes when serving on loopback (a client on this "
            "machine), never in hosting mode."
        ),
    )
    client_documents_ca_file: Path | None = Field(
        None,
        description=(
            "A PEM file of certificate authorities trusted, besides the system's, for client ID metadata "
            "documents (a classroom's own HTTPS server)."
        ),
    )

    @property
    def client_documents_from_private(self) -> bool:
        if self.client_documents_private is not None:
            return self.client_documents_private
        return not self.hosting

    @property
    def host_names(self) -> frozenset[str] | None:
        """The Host names requests may carry (lower case, no port), or None for any."""
        if self.allowed_hosts:
            return frozenset(name.lower().strip("[]") for name in self.allowed_hosts)
        if self.hosting:
            return None
        return frozenset({"localhost", "127.0.0.1", "::1", self.host.lower().strip("[]")})

    @property
    def apps_proxy(self) -> tuple[str | None, str]:
        """(the sandbox proxy's origin, or None when Apps are off; why they are off)."""
        if self.apps == "off":
            return None, "MCP Apps are turned off on this playground (PLAYGROUND_APPS=off)."
        if self.apps_origin:
            return self.apps_origin.rstrip("/").lower(), ""
        if not self.hosting and self.host in LOOPBACK_PAIR:
            return f"http://{LOOPBACK_PAIR[self.host]}:{self.port}", ""
        return None, (
            "MCP Apps need the sandbox proxy on a second origin, a host name outside this site's domain, and "
            "none is set (the operator sets PLAYGROUND_APPS_ORIGIN)."
        )

    @property
    def hosting(self) -> bool:
        """Serving other people: set explicitly (a proxy on this machine forwards to loopback), or
        binding anything but loopback ("", 0.0.0.0 and :: are every interface)."""
        if self.hosting_mode or self.host == "":
            return True
        if self.host == "localhost":
            return False
        try:
            return not ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return True

    @property
    def weak_sandbox_allowed(self) -> bool:
        if self.accept_weak_sandbox is not None:
            return self.accept_weak_sandbox
        return not self.hosting


def token_problem(settings: Settings) -> str | None:
    """Why the instructor token may not be used, or None: in hosting mode it has a length to keep."""
    token = settings.instructor_token
    if token and settings.hosting and len(token) < MIN_HOSTING_TOKEN_LENGTH:
        return (
            f"in hosting mode PLAYGROUND_INSTRUCTOR_TOKEN must be at least {MIN_HOSTING_TOKEN_LENGTH} "
            "characters (or leave it unset and one is made)."
        )
    return None


def unknown_settings(environ: Mapping[str, str]) -> list[str]:
    """`PLAYGROUND_*` variables that name no setting (one renamed, or mistyped): pydantic-settings
    passes them over without a word, and the operator would think them in force."""
    known = {f"PLAYGROUND_{name.upper()}" for name in Settings.model_fields}
    return sorted(name for name in environ if name.startswith("PLAYGROUND_") and name not in known)
