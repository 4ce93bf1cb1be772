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

    @classmethod
    def from_settings(cls, settings) -> Limits:  # noqa: ANN001 - app.config.Settings, kept import-free
        return cls(
            memory_bytes=settings.memory_limit_mb * MIB,
            cpu_seconds=settings.cpu_limit_s,
            open_files=settings.max_open_files,
            file_size_bytes=settings.max_file_size_mb * MIB,
            processes=settings.max_processes,
            tmpfs_bytes=settings.tmpfs_size_mb * MIB,
        )

    def to_json(self) -> dict[str, int]:
        return asdict(self)
