"""The registry of MCP servers a learner can talk to. A browser names a server only by its registry name.

Every entry is one of our demo servers (a module with INFO and serve()), except `my-server`: the
learner's own file, run as `python server.py` would run it (app/sandbox/forkserver/child.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# Modules of the product's own demo servers; each defines INFO and serve().
BUILTIN_MODULES = (
    "app.demos.orders",
    "app.demos.assistant",
    "app.demos.inventory",
    "app.demos.monitor",
    "app.demos.legacy",
    "app.demos.stateless",
    "app.demos.flaky",
    "app.demos.catalog",
    "app.demos.prints",
    "app.demos.modern",
    "app.demos.tasks",
    "app.demos.poisoned",
)
# The registry name of the learner's own server (DESIGN.md, "The learner's own server").
MY_SERVER = "my-server"
# What the console offers for a server whose tools nobody knows in advance: the lists.
GENERIC_SAMPLES = (
    {"method": "tools/list"},
    {"method": "resources/list"},
    {"method": "prompts/list"},
)


@dataclass(frozen=True)
class DemoServer:
    """One demo MCP server: what the learner sees of it, and the module that serves it on stdio."""

    name: str
    title: str
    description: str
    module: str | None  # None for my-server: no module of ours, the learner's file
    # Messages the console's templates offer (method and params; the console adds id and envelope).
    samples: tuple[dict[str, Any], ...] = GENERIC_SAMPLES

    @property
    def learners_own(self) -> bool:
        return self.module is None

    def load(self) -> ModuleType:
        if self.module is None:
            raise ValueError(f"{self.name} is the learner's own file, not a module")
        return importlib.import_module(self.module)

    def public(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "samples": list(self.samples),
        }


def load_registry(extra_modules: list[str] | tuple[str, ...] = ()) -> dict[str, DemoServer]:
    """Import every demo module and return the registry, keyed by name (a duplicate name is an error)."""
    registry: dict[str, DemoServer] = {
        MY_SERVER: DemoServer(
            name=MY_SERVER,
            title="Your server",
            description="Your own server.py, written in the page and run in your sandbox with the official SDK.",
            module=None,
        )
    }
    for path in (*BUILTIN_MODULES, *extra_modules):
        module = importlib.import_module(path)
        info = module.INFO
        demo = DemoServer(
            name=info["name"],
            title=info["title"],
            description=info["description"],
            module=path,
            samples=_samples(path, info.get("samples", GENERIC_SAMPLES)),
        )
        if demo.name in registry:
            raise ValueError(
                f"two demo servers are named {demo.name!r}: {registry[demo.name].module} and {path}"
            )
        if not callable(getattr(module, "serve", None)):
            raise ValueError(f"demo module {path} has no serve() function")
        registry[demo.name] = demo
    return registry


def _samples(path: str, samples: Any) -> tuple[dict[str, Any], ...]:
    """A demo's INFO["samples"], checked: each a method name with optional params."""
    if not isinstance(samples, list | tuple) or not all(
        isinstance(s, dict) and isinstance(s.get("method"), str) and isinstance(s.get("params", {}), dict)
        for s in samples
    ):
        raise ValueError(f'demo module {path}: INFO["samples"] must be a list of {{"method", "params"}}')
    return tuple(samples)
