"""The registry of demo MCP servers. A browser names a server only by its registry name."""

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
)
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
    module: str
    # Messages the console's templates offer (method and params; the console adds id and envelope).
    samples: tuple[dict[str, Any], ...] = GENERIC_SAMPLES

    def load(self) -> ModuleType:
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
    registry: dict[str, DemoServer] = {}
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
