"""A learner's server.ts is arbitrary code too: tried here from the attacker's side, saved through the
workspace API and run as my-server on Node, exactly as a learner's file runs.

Node runs inside the same layers as a Python server (namespaces, its own uid, a read-only view, rlimits,
a cgroup, a seccomp filter that adds only what Node needs). Every escape below is refused; a file that
starts workers until refused, allocates until refused or spins is stopped by its limit, and the
playground keeps answering everyone else. The filter's own rows (io_uring, namespaces, ptrace, the
one execve) are tried against Node's filter alone in test_syscall_filter.py.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest

from app.web.learner import COOKIE
from tests.sandbox.consoles import console_until_exit, orders_answers_quickly
from tests.support.appserver import AppProcess
from tests.support.wsclient import EnvelopeClient, McpClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MAX_PROCESSES = 16
MEMORY_MB = 256
# Node's start, every attack and a heap snapshot of its own, all without a JIT, can take more than 2 s
# of CPU on a slow machine; a spinning loop still meets this limit within a test.
CPU_LIMIT_S = 10
SECRET = f"another-learners-secret-{secrets.token_hex(12)}"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    with AppProcess(tmp_path_factory.mktemp("ts-attacks"), max_processes=MAX_PROCESSES, memory_limit_mb=MEMORY_MB,
                    cpu_limit_s=CPU_LIMIT_S, max_sessions_per_learner=4) as app:  # fmt: skip
        yield app


def save_ts(app: AppProcess, learner: str, source: str) -> None:
    with app.client(cookies={COOKIE: app.learner_cookie(learner)}) as page:
        assert page.put("/api/workspace/settings", json={"language": "typescript"}).status_code == 200
        reply = page.put("/api/workspace/server.ts", content=source)
    assert reply.status_code == 200 and reply.json()["diagnostics"] == [], reply.text


def attacks(app: AppProcess) -> dict[str, str]:
    """Each escape, as the body of an async function with Node's modules in scope; each must throw."""
    port = app.base.rsplit(":", 1)[1].rstrip("/")
    promise = "await new Promise((resolve, reject) => {{ {} }})"
    return {
        # network
        "TCP to the internet": promise.format(
            "const s = net.connect({host: '1.1.1.1', port: 80}); s.on('connect', () => resolve('connected')); "
            "s.on('error', reject);"
        ),
        "TCP to the playground": promise.format(
            f"const s = net.connect({{host: '127.0.0.1', port: {port}}}); s.on('connect', () => resolve('connected')); "
            "s.on('error', reject);"
        ),
        "UDP": promise.format(
            "const s = dgram.createSocket('udp4'); s.on('error', reject); "
            "s.send('x', 53, '8.8.8.8', (e) => e ? reject(e) : resolve('sent'));"
        ),
        "fetch": f"return (await fetch('http://127.0.0.1:{port}/healthz')).status",
        # exec
        "execSync": "return child_process.execSync('id').toString()",
        "spawnSync /bin/sh": "const r = child_process.spawnSync('/bin/sh', ['-c', 'id']); if (r.error) throw r.error; "
        "return `${r.status} ${r.stdout}`",
        "fork a second Node": promise.format(
            "const c = child_process.fork('server.mjs'); c.on('error', reject); c.on('spawn', () => resolve('spawned'));"
        ),
        "process.binding('spawn_sync')": "const r = process.binding('spawn_sync').spawn({file: '/bin/sh', "
        "args: ['sh', '-c', 'id'], envPairs: [], stdio: [{type: 'pipe', readable: true}, {type: 'pipe', "
        "writable: true}, {type: 'pipe', writable: true}]}); if (r.error) throw new Error(`errno ${r.error}`); "
        "return JSON.stringify(r)",
        # native code
        "a native addon from the system": "const m = {exports: {}}; "
        "process.dlopen(m, '/usr/lib/x86_64-linux-gnu/libz.so.1'); return 'loaded'",
        "a native addon written to the tmpfs": "const copy = path.join(os.tmpdir(), 'evil.node'); "
        "fs.copyFileSync('/usr/lib/x86_64-linux-gnu/libz.so.1', copy); const m = {exports: {}}; "
        "process.dlopen(m, copy); return 'loaded'",
        # files outside its view
        "read /etc/passwd": "return fs.readFileSync('/etc/passwd', 'utf8')",
        "read the playground's data": f"return fs.readdirSync({str(app.data_dir)!r}).join()",
        "read /proc": "return fs.readFileSync('/proc/self/environ', 'utf8')",
        "write into the SDK": "fs.writeFileSync(path.join(process.cwd(), 'node_modules', 'zod', 'evil.js'), 'x'); "
        "return 'written'",
        "write beside Node": "fs.writeFileSync(path.join(path.dirname(process.execPath), 'evil'), 'x'); "
        "return 'written'",
        # other processes: outside its PID namespace, no pid names them
        "signal the playground's web process": f"process.kill({app.proc.pid}, 'SIGKILL'); return 'sent'",
        "signal init": f"process.kill({os.getppid()}, 'SIGKILL'); return 'sent'",
    }


async def test_every_escape_is_denied_from_a_learners_server_ts(app: AppProcess) -> None:
    app.save_server("victim", f"SECRET = {SECRET!r}\n")  # another learner's file, saved first
    save_ts(app, "ts-attacker", (FIXTURES / "hostile_server.ts").read_text())
    tried = attacks(app)
    client = await McpClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                     additional_headers=app.learner_headers("ts-attacker"))  # fmt: skip
    try:
        assert (await client.initialize())["result"]["serverInfo"]["name"] == "learner-attacker-ts"
        reply = await client.call(2, "tools/call", {"name": "attempts", "arguments": {"codes": tried}})
        assert "result" in reply, reply
        outcomes = json.loads(reply["result"]["content"][0]["text"])
        # Its own heap holds nothing of the other learner: Node is a fresh program, not a copy of one.
        # The snapshot is taken first, and the secret joined after, from two halves that the code's own
        # text holds apart: only another learner's copy could be found.
        half = len(SECRET) // 2
        snapshot = (  # streamed and searched a piece at a time: the whole would not fit its memory
            f"const stream = v8.getHeapSnapshot(); const secret = [{SECRET[:half]!r}, {SECRET[half:]!r}].join(''); "
            "let tail = ''; for await (const chunk of stream) { const text = tail + chunk.toString(); "
            "if (text.includes(secret)) return 'found'; tail = text.slice(-secret.length); } return 'absent'"
        )
        # The control: a copy it holds itself is found, so "absent" means absent.
        control = snapshot.replace("const stream", "globalThis.kept = [" + repr(SECRET[:half]) + ", "
                                   + repr(SECRET[half:]) + "].join(''); const stream")  # fmt: skip
        heap = await client.call(3, "tools/call", {"name": "attempts",
                                                   "arguments": {"codes": {"heap": snapshot, "control": control}}})  # fmt: skip
        # And the server still serves after every attempt.
        assert "ok" in json.loads((await client.call(4, "tools/call", {
            "name": "attempts", "arguments": {"codes": {"alive": "return 1 + 1"}}}))["result"]["content"][0]["text"])["alive"]  # fmt: skip
    finally:
        await client.close()
    assert set(outcomes) == set(tried)
    assert {name: outcome for name, outcome in outcomes.items() if "error" not in outcome} == {}
    assert json.loads(heap["result"]["content"][0]["text"]) == {
        "heap": {"ok": "absent"},
        "control": {"ok": "found"},
    }
    # Refused by the kernel's layers, not only by Node: the network and exec by the filter (EPERM),
    # files by the view (ENOENT: not there; EROFS: read-only).
    for name in ("TCP to the internet", "TCP to the playground", "UDP", "execSync", "spawnSync /bin/sh"):
        assert "EPERM" in outcomes[name]["error"], (name, outcomes[name])
    for name in ("read /etc/passwd", "read the playground's data", "read /proc"):
        assert outcomes[name]["error"].startswith("ENOENT"), (name, outcomes[name])
    for name in ("write into the SDK", "write beside Node"):
        assert outcomes[name]["error"].startswith("EROFS"), (name, outcomes[name])
    for name in ("signal the playground's web process", "signal init"):
        assert outcomes[name]["error"].startswith("ESRCH"), (name, outcomes[name])


async def test_process_execve_is_refused_and_ends_only_the_learners_own_server(app: AppProcess) -> None:
    # Node aborts when its execve fails: the attempt costs the attacker their own server, nothing more.
    save_ts(app, "ts-execve", "process.execve('/bin/sh', ['sh', '-c', 'echo escaped; id']);\n")
    state, stderr = await console_until_exit(app, "ts-execve")
    assert "escaped" not in stderr and "uid=" not in stderr
    assert state["exit_status"]["signal"] in (6, 11), (state, stderr[-2000:])
    assert await orders_answers_quickly(app) < 10


WORKER_BOMB = """
import { Worker } from "node:worker_threads";
let started = 0;
try {
  for (;;) {
    new Worker("setInterval(() => {}, 1000)", { eval: true }).on("error", (e) => {
      console.error(`refused after ${started} workers: ${e.message}`);
      process.exit(7);
    });
    started += 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
} catch (e) {
  console.error(`refused after ${started} workers: ${(e as Error).message}`);
  process.exit(7);
}
"""
ALLOCATOR = """
const chunks: Buffer[] = [];
for (;;) chunks.push(Buffer.alloc(16 * 1024 * 1024, 1));
"""
HEAP_GROWER = """
const objects: number[][] = [];
for (;;) objects.push(new Array(100000).fill(1.5));
"""
SPINNER = "for (;;) {}\n"


async def test_a_server_ts_starting_workers_until_refused_is_stopped_by_the_process_limit(
    app: AppProcess,
) -> None:
    save_ts(app, "ts-workers", WORKER_BOMB)
    state, stderr = await console_until_exit(app, "ts-workers")
    status = state["exit_status"]
    # Refused a thread (the worker's error, exit 7), or Node dies of V8's fatal error when it cannot
    # have a thread: SIGTRAP, SIGABRT or SIGSEGV, seen also on its way out after the refusal.
    assert (status["code"] == 7 and "refused after" in stderr) or status["signal"] in (5, 6, 11), (
        state,
        stderr,
    )
    if "refused after " in stderr:
        assert int(stderr.split("refused after ")[1].split()[0]) < MAX_PROCESSES
    assert await orders_answers_quickly(app) < 10


@pytest.mark.parametrize("source", [ALLOCATOR, HEAP_GROWER], ids=["buffers", "heap"])
async def test_a_server_ts_that_allocates_until_refused_is_stopped_by_the_memory_limit(
    app: AppProcess, source: str
) -> None:
    name = f"ts-alloc-{len(source)}"
    save_ts(app, name, source)
    state, stderr = await console_until_exit(app, name)
    status = state["exit_status"]
    # Node's own refusal (an uncaught ERR_MEMORY_ALLOCATION_FAILED; "heap out of memory", SIGABRT),
    # or the OOM killer at the instance's cgroup limit (SIGKILL).
    refused = any(words in stderr for words in ("ERR_MEMORY_ALLOCATION_FAILED", "heap out of memory"))
    assert refused or status["signal"] == 9, (state, stderr[-2000:])
    assert await orders_answers_quickly(app) < 10


async def test_a_server_ts_that_spins_is_stopped_by_the_cpu_limit(app: AppProcess) -> None:
    save_ts(app, "ts-spinner", SPINNER)
    state, _ = await console_until_exit(app, "ts-spinner")
    assert state["exit_status"]["signal"] in (9, 24), state  # SIGXCPU at the soft limit, SIGKILL at the hard
    assert await orders_answers_quickly(app) < 10


async def test_a_server_ts_that_never_serves_is_told_how_to_serve(app: AppProcess) -> None:
    from tests.support.wsclient import init_request

    save_ts(app, "ts-sleeper", "setInterval(() => {}, 1000);\n")
    client = await EnvelopeClient.connect(app.ws_base + "/ws/my-server", origin=app.base,
                                          additional_headers=app.learner_headers("ts-sleeper"))  # fmt: skip
    try:
        assert (await client.recv_type("state"))["status"] == "ready"
        await client.send(init_request(version="2025-11-25"))
        while not (frame := await client.recv_type("state", timeout=60)).get("reason"):
            pass
    finally:
        await client.close()
    assert "has not started serving" in frame["reason"] and "server.connect(" in frame["reason"]
