"""Run every benchmark, print one table, write bench/results.json.

Each figure is measured with the default settings and every sandbox layer on, next to a baseline
measured in the same run: the machines are noisy, so the ratio is what holds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

from bench import capacity, flood, host, memory, output_flood, own_server, pages, profile, roundtrip, startup
from tests.support.appserver import AppProcess

RESULTS = Path(__file__).parent / "results.json"


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="fewer samples and a smaller capacity search")
    parser.add_argument("--skip-capacity", action="store_true", help="leave out the capacity search")
    args = parser.parse_args()
    # The memory benchmark loads the demo registry, whose servers' SDK then sets the root logger to
    # INFO: httpx's line for every request would bury the table.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rows: list[tuple[str, str, str, str]] = []
    results: dict = {}
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        # Defaults but these: room for the capacity search; no per-connection rate limit, since the
        # round-trip benchmark sends hundreds of messages back to back as no learner does; and every
        # session comes from 127.0.0.1 without a learner cookie, one owner by address and in no class,
        # so that owner's cap, its rate of new sessions, its pace of requests (the HTTP endpoint's
        # round trips, thousands of handshakes), the pace its servers' output is read at (the same
        # owner's thousands of replies a second; output_flood measures that pace at its default), the
        # pace its clients' messages are read at (that address's thousands of consoles share one) and
        # the visitors' share are lifted too.
        settings = {
            "max_sessions": 2100 if not args.skip_capacity else 250,
            "max_messages_per_10s": 1_000_000,
            "max_sessions_per_learner": 2100,
            "max_sessions_per_address": 2100,
            "new_sessions_per_min": 1_000_000,
            "requests_per_s_per_address": 1_000_000,
            "server_read_bytes_per_s": 1 << 40,
            "client_read_bytes_per_s": 1 << 40,
            "outside_class_share": 1.0,
        }
        raised = ", ".join(f"PLAYGROUND_{k.upper()}={v}" for k, v in settings.items())
        print(f"limits raised for the benchmark (every sandbox layer stays on): {raised}", flush=True)
        print("running host (memory touched after a pause) ...", flush=True)
        figures, table = host.run(quick=args.quick)
        results["host"], results["machine"] = figures, figures["machine"]
        rows.extend(table)
        print("running flood (its own app, default limits) ...", flush=True)
        figures, table = asyncio.run(flood.run(Path(tmp) / "flood", quick=args.quick))
        results["flood"] = figures
        rows.extend(table)
        print("running output_flood (its own app, default limits) ...", flush=True)
        figures, table = asyncio.run(output_flood.run(Path(tmp) / "output-flood", quick=args.quick))
        results["output_flood"] = figures
        rows.extend(table)
        with AppProcess(Path(tmp) / "app", **settings) as app:
            health = __import__("httpx").get(app.base + "/healthz", timeout=10).json()
            results["sandbox"] = health["sandbox"]
            results["warm_pool"] = health["warm_pool"]
            print(
                f"sandbox complete: {health['sandbox']['complete']}; warm pool: {health['warm_pool']}",
                flush=True,
            )
            for name, part in (
                ("startup", startup.run),
                ("memory", memory.run),
                ("roundtrip", roundtrip.run),
                ("profile", profile.run),
                ("pages", pages.run),
                ("own_server", own_server.run),
            ):
                print(f"running {name} ...", flush=True)
                figures, table = asyncio.run(part(app, quick=args.quick))
                results[name] = figures
                rows.extend(table)
            if not args.skip_capacity:
                print("running capacity (stepping up sessions, then the floor at the last step; learners as callbacks "
                      "on uvloop, no client pings) ...",
                      flush=True)  # fmt: skip
                figures, table = capacity.run_on_uvloop(app, quick=args.quick)
                results["capacity"] = figures
                rows.extend(table)
    results["seconds"] = round(time.monotonic() - began, 1)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    widths = [max(len(r[i]) for r in rows + [("figure", "measured", "baseline", "target")]) for i in range(4)]
    header = ("figure", "measured", "baseline", "target")
    print()
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    print(f"\nwrote {RESULTS} in {results['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
