"""The progress store's part of the authorization server of protected endpoints: registered clients,
and grants (consents waiting, codes, access and refresh tokens) by the hash of their secret, on the
SQL database (database.py). Every replica reads the same rows, so a flow may cross replicas."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from app.progress.database import SQLDatabase
from app.progress.store import (
    OAUTH_CLIENT_IDLE_S,
    OAUTH_CLIENT_UNUSED_S,
    OAUTH_EVENTS_KEPT,
    OAUTH_GRANTS_KEPT,
    OAUTH_KINDS,
    OAuthGrant,
    ProgressError,
)


class SQLOAuth(SQLDatabase):
    _GRANT_COLUMNS = "key_hash, kind, client_id, endpoint_id, data, expires_at"

    @staticmethod
    def _grant(row: Sequence[Any]) -> OAuthGrant:
        return OAuthGrant(row[0], row[1], row[2], row[3], row[4], row[5])

    def save_oauth_client(self, client_id: str, info: str, endpoint_id: str | None = None,
                          registered_by: str | None = None, unused_kept: int = 0) -> int:  # fmt: skip
        now = time.time()
        with self._write() as db:
            # Clients go as new ones come, once unused for long: what anyone may register stays bounded.
            self._exec(
                db,
                "DELETE FROM oauth_clients WHERE (used_at IS NULL AND created_at < ?) OR used_at < ?",
                (now - OAUTH_CLIENT_UNUSED_S, now - OAUTH_CLIENT_IDLE_S),
            )
            let_go = 0
            if registered_by is not None and unused_kept > 0:
                let_go = self._exec(
                    db,
                    "DELETE FROM oauth_clients WHERE registered_by = ? AND used_at IS NULL AND client_id NOT IN "
                    "(SELECT client_id FROM oauth_clients WHERE registered_by = ? AND used_at IS NULL "
                    "ORDER BY created_at DESC, client_id LIMIT ?)",
                    (registered_by, registered_by, unused_kept - 1),
                ).rowcount
            self._exec(
                db,
                "INSERT INTO oauth_clients (client_id, info, created_at, endpoint_id, registered_by) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (client_id) DO UPDATE SET info = excluded.info",
                (client_id, info, now, endpoint_id, registered_by),
            )
        return max(let_go, 0)

    def oauth_clients_of(self, endpoint_id: str) -> int:
        with self._read() as db:
            row = self._exec(
                db, "SELECT COUNT(*) FROM oauth_clients WHERE endpoint_id = ?", (endpoint_id,)
            ).fetchone()
        return int(row[0])

    def oauth_client(self, client_id: str) -> str | None:
        with self._read() as db:
            row = self._exec(
                db, "SELECT info FROM oauth_clients WHERE client_id = ?", (client_id,)
            ).fetchone()
        return row[0] if row else None

    def add_oauth_grant(self, grant: OAuthGrant) -> None:
        if grant.kind not in OAUTH_KINDS:
            raise ProgressError(f"unknown grant kind {grant.kind!r}")
        now = time.time()
        with self._write() as db:
            # Expired grants go as new ones come: the table holds only what may still be used.
            self._exec(db, "DELETE FROM oauth_grants WHERE expires_at < ?", (now,))
            self._exec(db, "UPDATE oauth_clients SET used_at = ? WHERE client_id = ?", (now, grant.client_id))
            if grant.endpoint_id is not None:
                self._keep_room(db, grant.endpoint_id, grant.kind)
            self._exec(
                db,
                f"INSERT INTO oauth_grants ({self._GRANT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    grant.key_hash,
                    grant.kind,
                    grant.client_id,
                    grant.endpoint_id,
                    grant.data,
                    grant.expires_at,
                ),
            )

    def _keep_room(self, db: Any, endpoint_id: str, kind: str) -> None:
        """Make room for one more of the endpoint's grants of this kind: used ones go first (they are
        kept only to tell whose a refused secret was), then those the owner was never shown, then the
        soonest to expire."""
        (count,) = self._exec(
            db, "SELECT COUNT(*) FROM oauth_grants WHERE endpoint_id = ? AND kind = ?", (endpoint_id, kind)
        ).fetchone()
        if count < OAUTH_GRANTS_KEPT:
            return
        self._exec(
            db,
            "DELETE FROM oauth_grants WHERE key_hash IN (SELECT key_hash FROM oauth_grants "
            "WHERE endpoint_id = ? AND kind = ? ORDER BY used_at IS NULL, shown_at IS NOT NULL, expires_at, "
            "key_hash LIMIT ?)",
            (endpoint_id, kind, count - OAUTH_GRANTS_KEPT + 1),
        )

    def oauth_grant(self, key_hash: str, kind: str) -> OAuthGrant | None:
        with self._read() as db:
            row = self._exec(
                db,
                f"SELECT {self._GRANT_COLUMNS} FROM oauth_grants WHERE key_hash = ? AND kind = ? "
                "AND used_at IS NULL AND expires_at > ?",
                (key_hash, kind, time.time()),
            ).fetchone()
        return self._grant(row) if row else None

    def use_oauth_grant(self, key_hash: str, kind: str) -> OAuthGrant | None:
        now = time.time()
        with self._write() as db:
            row = self._exec(
                db,
                f"SELECT {self._GRANT_COLUMNS} FROM oauth_grants WHERE key_hash = ? AND kind = ? "
                "AND used_at IS NULL AND expires_at > ?",
                (key_hash, kind, now),
            ).fetchone()
            if row is None:
                return None
            used = self._exec(
                db,
                "UPDATE oauth_grants SET used_at = ? WHERE key_hash = ? AND used_at IS NULL",
                (now, key_hash),
            )
            if used.rowcount != 1:  # another replica used it first
                return None
        return self._grant(row)

    def show_oauth_grant(self, key_hash: str) -> None:
        with self._write() as db:
            self._exec(
                db,
                "UPDATE oauth_grants SET shown_at = ? WHERE key_hash = ? AND shown_at IS NULL",
                (time.time(), key_hash),
            )

    def revoke_oauth_grants(self, key_hashes: Sequence[str]) -> None:
        with self._write() as db:
            for key_hash in key_hashes:
                self._exec(db, "DELETE FROM oauth_grants WHERE key_hash = ?", (key_hash,))

    def revoke_oauth_family(self, endpoint_id: str, family: str) -> int:
        if not family.isalnum():  # a hash: nothing in it can widen the pattern
            raise ProgressError("a grant family is a hash")
        with self._write() as db:
            gone = self._exec(
                db,
                "DELETE FROM oauth_grants WHERE endpoint_id = ? AND kind IN ('access', 'refresh') "
                "AND used_at IS NULL AND data LIKE ?",
                (endpoint_id, f'%"family": "{family}"%'),
            )
            return max(gone.rowcount, 0)

    def any_oauth_grant(self, key_hash: str) -> OAuthGrant | None:
        with self._read() as db:
            row = self._exec(
                db, f"SELECT {self._GRANT_COLUMNS} FROM oauth_grants WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        return self._grant(row) if row else None

    def add_oauth_event(self, endpoint_id: str, data: str) -> None:
        with self._write() as db:
            self._exec(
                db,
                "INSERT INTO oauth_events (endpoint_id, at, data) VALUES (?, ?, ?)",
                (endpoint_id, time.time(), data),
            )
            self._exec(
                db,
                "DELETE FROM oauth_events WHERE endpoint_id = ? AND id NOT IN "
                "(SELECT id FROM oauth_events WHERE endpoint_id = ? ORDER BY id DESC LIMIT ?)",
                (endpoint_id, endpoint_id, OAUTH_EVENTS_KEPT),
            )

    def oauth_events(self, endpoint_id: str, after: int = 0) -> list[tuple[int, float, str]]:
        with self._read() as db:
            rows = self._exec(
                db,
                "SELECT id, at, data FROM oauth_events WHERE endpoint_id = ? AND id > ? ORDER BY id",
                (endpoint_id, after),
            ).fetchall()
        return [(row[0], row[1], row[2]) for row in rows]
