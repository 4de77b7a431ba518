"""Named migrations, applied in order and recorded in ``migrations``. Never edit a shipped one."""

from __future__ import annotations

import sqlite3

M001_RUNS = """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            title TEXT NOT NULL,
            repo TEXT NOT NULL,
            source_branch TEXT NOT NULL,
            base TEXT NOT NULL,            -- the commit of the user's branch the run started from
            start_commit TEXT NOT NULL,    -- base, or the snapshot of the user's dirty tree
            branch TEXT NOT NULL,
            worktree TEXT NOT NULL,
            profile TEXT,
            profile_reason TEXT,
            diff_sha256 TEXT,
            files_changed INTEGER NOT NULL DEFAULT 0,
            session_id TEXT,
            merged_commit TEXT,
            plan_id TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            data TEXT NOT NULL DEFAULT '{}'   -- JSON: usage, verification summary, error, waivers
        );
        CREATE INDEX runs_state ON runs(state);
        CREATE INDEX runs_created ON runs(created_at);
        CREATE TABLE transitions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(id),
            from_state TEXT,
            to_state TEXT NOT NULL,
            at REAL NOT NULL,
            pid INTEGER NOT NULL,
            reason TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX transitions_run ON transitions(run_id);
        CREATE TABLE attempts (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(id),
            profile TEXT NOT NULL,
            adapter TEXT NOT NULL,
            started_at REAL NOT NULL,
            ended_at REAL,
            status TEXT,
            error_class TEXT,
            error_message TEXT,
            data TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX attempts_run ON attempts(run_id);
        CREATE INDEX attempts_profile ON attempts(profile, started_at);
        CREATE TABLE cooldowns (
            profile TEXT PRIMARY KEY,
            until REAL NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            set_at REAL NOT NULL
        );
"""

# Full-text search over run titles and prompts (`bosun list --search`).
M002_RUN_SEARCH = """
        CREATE VIRTUAL TABLE run_search USING fts5(run_id UNINDEXED, title, prompt);
"""

# Plans (bosun.plans): the plan, one row per task, and the event stream `bosun plan watch` follows.
M003_PLANS = """
        CREATE TABLE plans (
            id TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            title TEXT NOT NULL,
            repo TEXT NOT NULL,
            source_branch TEXT NOT NULL,
            source_head TEXT NOT NULL,        -- the source branch head at the checkpoint
            checkpoint TEXT NOT NULL,         -- snapshot of the uncommitted work, or source_head
            integration_branch TEXT NOT NULL,
            document TEXT NOT NULL,           -- the plan file as JSON (parsed again on resume)
            current_wave INTEGER NOT NULL DEFAULT 0,
            profile TEXT,
            no_merge INTEGER NOT NULL DEFAULT 0,
            merged_commit TEXT,               -- what landed on the source branch
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            data TEXT NOT NULL DEFAULT '{}'   -- JSON: error, conflict, verified head, pending landing
        );
        CREATE INDEX plans_state ON plans(state);
        CREATE TABLE plan_tasks (
            plan_id TEXT NOT NULL REFERENCES plans(id),
            task_id TEXT NOT NULL,
            position INTEGER NOT NULL,        -- order in the plan file
            wave INTEGER NOT NULL,
            state TEXT NOT NULL,
            run_id TEXT,                      -- the current (latest) run
            attempts INTEGER NOT NULL DEFAULT 0,
            definition TEXT NOT NULL,         -- sha256 of the task as planned
            merged_commit TEXT,               -- the integration branch head after its merge
            updated_at REAL NOT NULL,
            data TEXT NOT NULL DEFAULT '{}',  -- JSON: runs, profiles tried, failures, landing, conflict
            PRIMARY KEY (plan_id, task_id)
        );
        CREATE TABLE plan_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            plan_id TEXT NOT NULL REFERENCES plans(id),
            at REAL NOT NULL,
            pid INTEGER NOT NULL,
            kind TEXT NOT NULL,               -- plan, wave, task, land
            task_id TEXT,
            state TEXT,
            detail TEXT NOT NULL DEFAULT '',
            data TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX plan_events_plan ON plan_events(plan_id, id)
"""


# History and receipts (bosun.engine.history): a full-text index over everything a run produced, and one
# row of figures per run for savings, budgets and the dashboard. Both are derived from the run
# records and refreshed lazily (``indexed_at`` is the run's ``updated_at`` when it was indexed);
# ``run_history``'s rowid is the run's rowid so a search can walk it newest first.
M004_RUN_HISTORY = """
        CREATE VIRTUAL TABLE run_history USING fts5(
            title, prompt, final, paths, gates, errors, tokenize = 'unicode61 remove_diacritics 2'
        );
        CREATE TABLE run_facts (
            run_id TEXT PRIMARY KEY REFERENCES runs(id),
            indexed_at REAL NOT NULL,
            caller TEXT,
            adapter TEXT,                             -- of the latest attempt (the CLI that ran)
            started_at REAL NOT NULL,
            ended_at REAL,
            duration_s REAL,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            worker_cost_usd REAL NOT NULL DEFAULT 0,
            cost_reported INTEGER NOT NULL DEFAULT 0,  -- 1 when the CLI reported the cost itself
            parent_direct_tokens INTEGER,             -- estimated: what the parent would have spent
            parent_actual_tokens INTEGER,             -- estimated: what it reads from bosun instead
            parent_measured_tokens INTEGER,           -- measured by the parent, when it reported it
            parent_direct_cost_usd REAL,
            saving_usd REAL,
            proven INTEGER NOT NULL DEFAULT 0,        -- verification passed and every gate green
            gates_total INTEGER NOT NULL DEFAULT 0,
            gates_failed INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX run_facts_started ON run_facts(started_at);
        CREATE INDEX run_facts_caller ON run_facts(caller);
        CREATE INDEX runs_updated ON runs(updated_at);
        CREATE INDEX runs_profile ON runs(profile, created_at);
        CREATE INDEX runs_repo ON runs(repo, created_at);
        CREATE TABLE history_meta (key TEXT PRIMARY KEY, value REAL NOT NULL)
"""


# Worktree housekeeping (bosun.isolation.ports, bosun.isolation.pool): the port blocks leased to runs,
# and the warm pool's worktrees, each in exactly one state (idle, leased to one run, reclaiming).
M005_WORKTREES = """
        CREATE TABLE port_leases (
            first_port INTEGER PRIMARY KEY,   -- a block [first_port, first_port + size)
            size INTEGER NOT NULL,
            run_id TEXT NOT NULL,
            leased_at REAL NOT NULL
        );
        CREATE INDEX port_leases_run ON port_leases(run_id);
        CREATE TABLE pool_worktrees (
            path TEXT PRIMARY KEY,            -- the checkout, under $BOSUN_HOME/pool/
            repo TEXT NOT NULL,
            state TEXT NOT NULL,              -- idle, leased, reclaiming
            run_id TEXT,                      -- the run holding it (leased)
            head TEXT,                        -- the commit checked out
            setup_key TEXT,                   -- what the set-up in it was made from
            owner_pid INTEGER,                -- the process reclaiming or creating it
            owner_start TEXT,
            updated_at REAL NOT NULL
        );
        CREATE INDEX pool_worktrees_repo ON pool_worktrees(repo, state)
"""


# ``run_facts.proven`` now means the fail-to-pass proof held (verification.json's ``proven`` is true),
# not "verification passed and every gate green": the index is dropped and rebuilt from the run
# records on the next refresh (bosun.engine.history), so earlier runs are counted the new way too.
M006_REINDEX_PROVEN = """
        DELETE FROM run_history;
        DELETE FROM run_facts;
        DELETE FROM history_meta
"""


MIGRATIONS: list[tuple[str, str]] = [
    ("001_runs", M001_RUNS),
    ("002_run_search", M002_RUN_SEARCH),
    ("003_plans", M003_PLANS),
    ("004_run_history", M004_RUN_HISTORY),
    ("005_worktrees", M005_WORKTREES),
    ("006_reindex_proven", M006_REINDEX_PROVEN),
]


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply pending migrations, each in its own IMMEDIATE transaction (safe across processes).

    ``db`` must be in autocommit mode (isolation_level=None).
    """
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM migrations")}
    applied = []
    for name, sql in MIGRATIONS:
        if name in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while we waited for the write lock.
            if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                db.execute("COMMIT")
                continue
            for statement in (s.strip() for s in sql.split(";")):
                if statement:
                    db.execute(statement)
            db.execute("INSERT INTO migrations(name, applied_at) VALUES (?, strftime('%s','now'))", (name,))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied
