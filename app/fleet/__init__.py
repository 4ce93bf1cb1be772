"""Replicas sharing one PostgreSQL act as one playground (docs/hosting.md): `Fleet` is the sessions'
`shared` hook of one replica, `FleetStore` the register of live sessions, heartbeats and commands
that every replica reads. With SQLite there is no fleet."""

from app.fleet.fleet import Fleet
from app.fleet.store import FleetStore, LiveSession

__all__ = ["Fleet", "FleetStore", "LiveSession"]
