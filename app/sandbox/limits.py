"""What one sandboxed instance may use; handed from the app to the fork server as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    memory_bytes: int = 512 * MIB
    cpu_seconds: int = 120
    open_files: int = 64
    file_size_bytes: int = 1 * MIB
    processes: int = 32
    tmpfs_bytes: int = 4 * MIB
    # What every instance together may use (the parent cgroup's memory limit); 0: no shared limit.
    total_memory_bytes: int = 0

    @classmethod
    def from_settings(cls, settings) -> Limits:  # noqa: ANN001 - app.config.Settings, kept import-free
        from app.sandbox.cgroups import memory_budget_bytes

        return cls(
            memory_bytes=settings.memory_limit_mb * MIB,
            cpu_seconds=settings.cpu_limit_s,
            open_files=settings.max_open_files,
            file_size_bytes=settings.max_file_size_mb * MIB,
            processes=settings.max_processes,
            tmpfs_bytes=settings.tmpfs_size_mb * MIB,
            total_memory_bytes=memory_budget_bytes(settings.memory_budget_mb),
        )

    def to_json(self) -> dict[str, int]:
        return asdict(self)
