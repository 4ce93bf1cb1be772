"""The progress schema, one migration per version. Append new ones; never edit a released one.

Statements are written once for every database: `{time}` is a timestamp column type and `{serial}`
an auto-numbered primary key, filled in by each store's dialect.
"""

from __future__ import annotations

# MIGRATIONS[n] takes the database from version n to n + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE learners (
            id TEXT PRIMARY KEY,
            display_name TEXT,
            created_at {time} NOT NULL,
            last_seen_at {time} NOT NULL
        )""",
        """CREATE TABLE steps_seen (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            first_seen_at {time} NOT NULL,
            last_seen_at {time} NOT NULL,
            PRIMARY KEY (learner_id, step_slug)
        )""",
        # Every attempt is kept: an instructor's view of a class wants to see the wrong ones too.
        """CREATE TABLE quiz_answers (
            id {serial},
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            quiz_id TEXT NOT NULL,
            choices TEXT NOT NULL,
            correct INTEGER NOT NULL,
            answered_at {time} NOT NULL
        )""",
        "CREATE INDEX quiz_answers_learner ON quiz_answers (learner_id, step_slug, quiz_id)",
        """CREATE TABLE checks_passed (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            check_name TEXT NOT NULL,
            passed_at {time} NOT NULL,
            PRIMARY KEY (learner_id, step_slug, check_name)
        )""",
    ),
    # 2: classes for hosting, and resume codes for moving to another device.
    (
        """CREATE TABLE classes (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            join_code TEXT NOT NULL UNIQUE,
            max_sessions INTEGER,
            created_at {time} NOT NULL,
            closed_at {time}
        )""",
        "ALTER TABLE learners ADD COLUMN class_id TEXT REFERENCES classes(id) ON DELETE SET NULL",
        "CREATE INDEX learners_class ON learners (class_id)",
        """CREATE TABLE resume_codes (
            code TEXT PRIMARY KEY,
            learner_id TEXT NOT NULL UNIQUE REFERENCES learners(id) ON DELETE CASCADE,
            created_at {time} NOT NULL
        )""",
    ),
    # 3: secrets every replica shares (the key that signs learner cookies), made once by whoever is first.
    (
        """CREATE TABLE app_secrets (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL,
            created_at {time} NOT NULL
        )""",
    ),
    # 4: instructor sign-in sessions (every replica knows them; the cookie holds an id, never the token).
    (
        """CREATE TABLE instructor_sessions (
            id_hash TEXT PRIMARY KEY,
            created_at {time} NOT NULL,
            expires_at {time} NOT NULL
        )""",
    ),
    # 5: Streamable HTTP endpoints: a learner's own URL for outside MCP clients (the token's hash only).
    (
        """CREATE TABLE endpoints (
            id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            server TEXT NOT NULL,
            created_at {time} NOT NULL,
            expires_at {time} NOT NULL,
            ended_at {time}
        )""",
        "CREATE INDEX endpoints_learner ON endpoints (learner_id)",
    ),
    # 6: the learner's own server.py, the last few saved versions (every replica runs the same file).
    (
        """CREATE TABLE server_files (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            version INTEGER NOT NULL,
            source TEXT NOT NULL,
            saved_at {time} NOT NULL,
            PRIMARY KEY (learner_id, version)
        )""",
    ),
    # 7: replicas sharing one PostgreSQL: who is alive, their live sessions, and requests to end one
    # (an instructor on one replica ending a console held by another). Unused with SQLite.
    (
        """CREATE TABLE replicas (
            id TEXT PRIMARY KEY,
            started_at {time} NOT NULL,
            heartbeat_at {time} NOT NULL
        )""",
        """CREATE TABLE live_sessions (
            id TEXT PRIMARY KEY,
            replica_id TEXT NOT NULL,
            learner_id TEXT,
            class_id TEXT,
            server TEXT NOT NULL,
            started_at {time} NOT NULL,
            last_active_at {time} NOT NULL
        )""",
        "CREATE INDEX live_sessions_class ON live_sessions (class_id)",
        "CREATE INDEX live_sessions_replica ON live_sessions (replica_id)",
        """CREATE TABLE session_commands (
            session_id TEXT PRIMARY KEY,
            replica_id TEXT NOT NULL,
            command TEXT NOT NULL,
            created_at {time} NOT NULL
        )""",
    ),
    # 8: a class's expected size (its members; 40 is store.DEFAULT_CLASS_SIZE) and the joins past it,
    # waiting for the instructor or denied by them (one per learner: their latest).
    (
        "ALTER TABLE classes ADD COLUMN expected_size INTEGER NOT NULL DEFAULT 40",
        """CREATE TABLE join_requests (
            learner_id TEXT PRIMARY KEY REFERENCES learners(id) ON DELETE CASCADE,
            class_id TEXT NOT NULL REFERENCES classes(id) ON DELETE CASCADE,
            display_name TEXT,
            requested_at {time} NOT NULL,
            denied_at {time}
        )""",
        "CREATE INDEX join_requests_class ON join_requests (class_id, requested_at)",
    ),
    # 9: protected endpoints (MCP authorization): an endpoint's kind of access, the clients that
    # registered with the playground's authorization server, what it grants, each by the hash of its
    # secret (a consent waiting for the owner, a code, an access or a refresh token; `data`: JSON),
    # and the flow's steps as its owner watches them.
    (
        "ALTER TABLE endpoints ADD COLUMN auth TEXT NOT NULL DEFAULT 'none'",
        # A protected endpoint's tools that need a scope of the owner's choosing: JSON {tool: scope}.
        "ALTER TABLE endpoints ADD COLUMN tool_scopes TEXT NOT NULL DEFAULT '{}'",
        """CREATE TABLE oauth_clients (
            client_id TEXT PRIMARY KEY,
            info TEXT NOT NULL,
            created_at {time} NOT NULL
        )""",
        """CREATE TABLE oauth_grants (
            key_hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            client_id TEXT NOT NULL,
            endpoint_id TEXT REFERENCES endpoints(id) ON DELETE CASCADE,
            data TEXT NOT NULL,
            expires_at {time} NOT NULL,
            used_at {time}
        )""",
        "CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_at)",
        # Each step of an endpoint's authorization flows, for its owner to watch (no secret in `data`).
        """CREATE TABLE oauth_events (
            id {serial},
            endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
            at {time} NOT NULL,
            data TEXT NOT NULL
        )""",
        "CREATE INDEX oauth_events_endpoint ON oauth_events (endpoint_id, id)",
    ),
    # 10: the workspace holds more files than server.py (test_server.py of the Build track): each
    # file's last few versions, by name. The saved server.py files move over, versions kept.
    (
        """CREATE TABLE workspace_files (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            version INTEGER NOT NULL,
            source TEXT NOT NULL,
            saved_at {time} NOT NULL,
            PRIMARY KEY (learner_id, name, version)
        )""",
        """INSERT INTO workspace_files (learner_id, name, version, source, saved_at)
            SELECT learner_id, 'server.py', version, source, saved_at FROM server_files""",
        "DROP TABLE server_files",
    ),
    # 11: the roster: a message the instructor shows the class, and a student identifier the
    # instructor gives a learner (for the grade book).
    (
        "ALTER TABLE classes ADD COLUMN message TEXT",
        "ALTER TABLE learners ADD COLUMN student_id TEXT",
    ),
    # 12: seats the instructor makes from a pasted roster (a name and a student identifier each); a
    # learner who joins under that name takes the seat, and its identifier. `name_key`: the name
    # compared without case or extra spaces.
    (
        """CREATE TABLE roster_seats (
            class_id TEXT NOT NULL REFERENCES classes(id) ON DELETE CASCADE,
            name_key TEXT NOT NULL,
            name TEXT NOT NULL,
            student_id TEXT,
            learner_id TEXT REFERENCES learners(id) ON DELETE SET NULL,
            PRIMARY KEY (class_id, name_key)
        )""",
    ),
    # 13: each learner's latest exercise run of each step (its report as JSON: the lines, their
    # reasons, what the server or pytest wrote), for the instructor's view of who is stuck and why.
    (
        """CREATE TABLE exercise_runs (
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            step_slug TEXT NOT NULL,
            at {time} NOT NULL,
            passed INTEGER NOT NULL,
            report TEXT NOT NULL,
            PRIMARY KEY (learner_id, step_slug)
        )""",
    ),
    # 14: how a learner's own server last ended by itself (JSON: when, how, why, its stderr's end).
    ("ALTER TABLE learners ADD COLUMN last_server_exit TEXT",),
    # 15: the language a learner writes their own server in ("python" or "typescript"; none yet means
    # python): which of server.py and server.ts my-server runs.
    ("ALTER TABLE learners ADD COLUMN server_language TEXT",),
    # 16: registered clients are kept while they are used (anyone may register one): when a grant was
    # last made for each, and the endpoint a client registered by hand belongs to. A client kept
    # before has the end of its latest grant as its use, so that its live tokens keep it.
    (
        "ALTER TABLE oauth_clients ADD COLUMN used_at {time}",
        "ALTER TABLE oauth_clients ADD COLUMN endpoint_id TEXT",
        "CREATE INDEX oauth_clients_endpoint ON oauth_clients (endpoint_id)",
        "UPDATE oauth_clients SET used_at = (SELECT MAX(expires_at) FROM oauth_grants "
        "WHERE oauth_grants.client_id = oauth_clients.client_id)",
    ),
    # 17: who the instructor turned away from a class (a join denied, a member removed): the code
    # no longer lets them in, until the instructor does. The denials kept so far count.
    (
        """CREATE TABLE turned_away (
            class_id TEXT NOT NULL REFERENCES classes(id) ON DELETE CASCADE,
            learner_id TEXT NOT NULL REFERENCES learners(id) ON DELETE CASCADE,
            display_name TEXT,
            turned_away_at {time} NOT NULL,
            PRIMARY KEY (class_id, learner_id)
        )""",
        "INSERT INTO turned_away (class_id, learner_id, display_name, turned_away_at) "
        "SELECT class_id, learner_id, display_name, denied_at FROM join_requests WHERE denied_at IS NOT NULL",
    ),
    # 18: which of a learner's sign-ins still hold: a new resume code ends those made before it.
    ("ALTER TABLE learners ADD COLUMN sign_in_generation INTEGER NOT NULL DEFAULT 0",),
    # 19: an endpoint's grants by kind, counted as each new one comes (OAUTH_GRANTS_KEPT).
    ("CREATE INDEX oauth_grants_endpoint ON oauth_grants (endpoint_id, kind, expires_at)",),
    # 20: a learner's live sessions, counted across replicas as each new one comes.
    ("CREATE INDEX live_sessions_learner ON live_sessions (learner_id)",),
    # 21: which client address registered a client (or named its metadata document), so that an
    # address's clients never used are bounded by letting its oldest go, not by refusing its next.
    (
        "ALTER TABLE oauth_clients ADD COLUMN registered_by TEXT",
        "CREATE INDEX oauth_clients_unused ON oauth_clients (registered_by, used_at, created_at)",
    ),
    # 22: when an endpoint's owner was shown a waiting consent: such consents are the last to make room
    # for new ones (anyone with the endpoint's URL may ask for consents).
    ("ALTER TABLE oauth_grants ADD COLUMN shown_at {time}",),
)

SCHEMA_VERSION = len(MIGRATIONS)
