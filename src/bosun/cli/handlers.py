"""Handlers of the run verbs and the set-up verbs: arguments into core calls, the result rendered.

``cli/dispatch.py`` holds the table of every verb's handler, these and those of the other cli modules.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bosun.cli.render import emit_json, exit_for_state
from bosun.core.errors import EXIT_NEEDS_REVIEW, EXIT_OK, BadInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING would import typing, which the fast CLI paths avoid
if TYPE_CHECKING:
    from typing import Any

    from bosun.core.config import Settings
    from bosun.core.settings_cache import SettingsView
    from bosun.engine.context import RunContext
    from bosun.store.db import Store
    from bosun.store.run import Run


def _ctx() -> RunContext:
    from bosun.engine.context import RunContext
    from bosun.store.db import open_store

    return RunContext(open_store())


def _checked_id(args: argparse.Namespace, store: Store | None = None) -> str:
    """The run the command names: its id, or a unique prefix of it (as git takes a short sha)."""
    from bosun.core.paths import check_run_id
    from bosun.store.db import open_store

    args.run_id = (store or open_store()).resolve_run_id(check_run_id(args.run_id))  # errors name the run in full
    return str(args.run_id)


def _finish(args: argparse.Namespace, run: Run, ctx: RunContext | None = None, confirm: str = "") -> int:
    """The run's result under --json; on a terminal the run as text, or for ``confirm`` (approve,
    integrate, discard) a line of what was done and what is next."""
    from bosun.engine.results import run_result

    result = run_result(run)
    if args.json:
        emit_json(result)
    elif confirm:
        from bosun.cli.render import print_confirmation

        print_confirmation(confirm, run)
    else:
        from bosun.cli.render import print_run

        print_run(run, ctx.store if ctx else None)
    return exit_for_state(run.state, result.get("verdict"))


def _progress(args: argparse.Namespace) -> Any:
    if args.json or getattr(args, "quiet", False):
        return None
    from bosun.cli.render import event_printer

    return event_printer()


def _ticking(args: argparse.Namespace) -> Any:
    """The live line of a verify command that runs long (cli/ticker.py), for a person only."""
    from bosun.cli.ticker import verify_ticker

    return verify_ticker(not args.json and not getattr(args, "quiet", False))


def _refuse_secret(task: Any, args: argparse.Namespace) -> None:
    from bosun.core.redaction import refuse_secret_in_task, task_texts

    refuse_secret_in_task(task_texts(task), args.allow_secret_in_task)


def cmd_delegate(args: argparse.Namespace) -> int:
    from bosun.cli.waits import wait_limit, waits_said
    from bosun.core.contract import load_contract
    from bosun.engine.delegation import delegate

    if args.dry_run:
        return _check(args, dry_run=True)
    limit = wait_limit(args)
    task = load_contract(args.task)
    _refuse_secret(task, args)
    ctx = _ctx()
    profile = args.profile
    if args.remote is not None:  # the worker step runs on a remote pool (cli/remote_cli.py)
        from bosun.cli.remote_cli import remote_overrides

        ctx.settings_overrides, profile = remote_overrides(args.remote), args.profile or "remote"

    def on_prepared(run_id: str) -> None:
        args._created_run = run_id
        if not args.json and not args.quiet:
            sys.stderr.write(f"bosun: run {run_id} prepared\n")

    with _ticking(args), waits_said(args):
        run = delegate(
            ctx, task, Path(args.repo), profile, auto_approve=args.auto_approve, wait=args.wait or limit is not None,
            on_event=_progress(args), task_source=str(Path(args.task).resolve()), on_prepared=on_prepared,
            wait_limit_s=limit,
        )
    return _finish(args, run, ctx)


def cmd_check(args: argparse.Namespace) -> int:
    return _check(args, dry_run=False)


def _check(args: argparse.Namespace, dry_run: bool) -> int:
    """The contract and every pre-flight check, all problems at once; with dry_run also the worker's
    command. Creates nothing."""
    from bosun.core.contract import load_contract
    from bosun.core.errors import EXIT_BAD_INPUT, BosunError, Problem

    out: dict[str, Any] = {"ok": False, "task": args.task, "title": None, "dry_run": dry_run, "repo": None,
                           "base": None, "routing": None, "problems": [], "warnings": []}
    try:
        task = load_contract(args.task)
    except BosunError as err:
        problems = getattr(err, "problems", None) or [Problem(err.code, err.message, err.hint)]
        out["problems"] = [p.to_dict() for p in problems]
        out["error"] = err.to_dict()  # what `delegate` would have failed with
        return _report_check(args, out, None)
    from bosun.engine.preflight import check_task, to_json
    from bosun.store.db import open_store

    out["title"] = task.title
    pf = check_task(task, Path(args.repo), args.profile, open_store(), probe=getattr(args, "probe", False))
    out.update(to_json(pf))
    if pf.settings is not None and task.mode.value == "code":
        from bosun.core.review_config import effective_review

        review = effective_review(task.review, pf.settings.review)
        out["review"] = review.model_dump(mode="json") if review else None  # who reads the change, if anyone
        if pf.choice is not None:
            from bosun.engine.repair import rounds_for, rungs_for

            # What a refusal for the work itself gets: repair rounds per rung, and the rungs it climbs.
            out["repair"] = {"rounds": rounds_for(task, pf.settings),
                             "ladder": rungs_for(pf.settings, pf.choice.profile.name)}
    if not pf.ok:
        from bosun.engine.preflight import PreflightFailed

        out["error"] = PreflightFailed(pf.problems).to_dict()  # what `delegate` would have failed with
    if dry_run:
        out["worker"] = None
        if pf.choice is not None and pf.repo is not None and pf.settings is not None:
            from bosun.engine.dry_run import worker_command

            out["worker"] = worker_command(task, pf.choice.profile, pf.repo, pf.settings)
    code = _report_check(args, out, pf)
    return code if out["ok"] else EXIT_BAD_INPUT


def _report_check(args: argparse.Namespace, out: dict[str, Any], pf: Any) -> int:
    from bosun.core.errors import EXIT_BAD_INPUT

    if args.json:
        emit_json(out)
        return EXIT_OK if out["ok"] else EXIT_BAD_INPUT
    from bosun.cli.render import print_check

    print_check(out)
    return EXIT_OK if out["ok"] else EXIT_BAD_INPUT


def cmd_prepare(args: argparse.Namespace) -> int:
    from bosun.cli.waits import wait_limit, waits_said
    from bosun.core.contract import load_contract
    from bosun.engine.lifecycle import prepare

    limit = wait_limit(args)
    task = load_contract(args.task)
    _refuse_secret(task, args)
    ctx = _ctx()
    with waits_said(args):
        run = prepare(ctx, task, Path(args.repo), args.profile, wait=args.wait or limit is not None,
                      task_source=str(Path(args.task).resolve()), wait_limit_s=limit)
    return _finish(args, run, ctx)


def cmd_work(args: argparse.Namespace) -> int:
    from bosun.engine.lifecycle import work

    ctx = _ctx()
    run = work(ctx, _checked_id(args, ctx.store), resume=args.resume, profile_name=args.profile, on_event=_progress(args))
    return _finish(args, run, ctx)


def cmd_verify(args: argparse.Namespace) -> int:
    from bosun.engine.lifecycle import verify

    ctx = _ctx()
    with _ticking(args):
        run = verify(ctx, _checked_id(args, ctx.store))
    return _finish(args, run, ctx)


def cmd_approve(args: argparse.Namespace) -> int:
    from bosun.engine.lifecycle import approve

    if args.waive and not args.reason:
        raise BadInput("--waive needs --reason TEXT", "say why the waived gate is acceptable; it is recorded")
    review = None
    if args.review:
        try:
            review = json.loads(Path(args.review).read_text("utf-8"))
        except FileNotFoundError:
            raise BadInput(f"review file not found: {args.review}", "pass the path of a review JSON file") from None
        except json.JSONDecodeError as exc:
            raise BadInput(f"{args.review}: invalid JSON at line {exc.lineno}: {exc.msg}", "fix the review file") from None
    waivers = {code.upper(): args.reason for code in args.waive}
    ctx = _ctx()
    run_id = _checked_id(args, ctx.store)
    # A person at a terminal reads the reasons and answers [y/N]: only "y" approves. A script (no
    # terminal) must say --yes; either way the acknowledgment is recorded with who gave it.
    person = sys.stdin.isatty() and sys.stderr.isatty() and not args.json
    acknowledge, by = ("all", "script") if args.yes else ("all", "person") if person else (None, "person")
    from bosun.cli.asking import print_review_reasons, said_yes

    if acknowledge is not None and print_review_reasons(ctx, run_id) and not args.yes and not said_yes():
        sys.stderr.write(f"bosun: not approved: {run_id} still waits for your review (`bosun approve {run_id}` "
                         f"asks again; `bosun discard {run_id}` throws it away)\n")
        return EXIT_NEEDS_REVIEW
    return _finish(args, approve(ctx, run_id, review, waivers, acknowledge=acknowledge, by=by), ctx, "approve")


def cmd_integrate(args: argparse.Namespace) -> int:
    from bosun.cli.waits import waits_said
    from bosun.engine.lifecycle import land

    ctx = _ctx()
    with _ticking(args), waits_said(args):  # the record, then the worktree's cleanup
        run = land(ctx, _checked_id(args, ctx.store), reverify=False if args.no_reverify else None)
    return _finish(args, run, ctx, "integrate")


def cmd_report(args: argparse.Namespace) -> int:
    from bosun.engine.lifecycle import report

    ctx = _ctx()
    run = report(ctx, _checked_id(args, ctx.store))
    if not args.json:
        from bosun.core.paths import run_dir

        sys.stdout.write((run_dir(run.id) / "report.md").read_text("utf-8"))
        return EXIT_OK
    return _finish(args, run, ctx)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from bosun.engine.teardown import cleanup

    ctx = _ctx()
    run = cleanup(ctx, _checked_id(args, ctx.store), force=args.force)
    _finish(args, run, ctx)
    return EXIT_OK


def cmd_recover(args: argparse.Namespace) -> int:
    from bosun.engine.lifecycle import recover

    ctx = _ctx()
    return _finish(args, recover(ctx, _checked_id(args, ctx.store)), ctx)


def cmd_cancel(args: argparse.Namespace) -> int:
    from bosun.engine.teardown import cancel

    ctx = _ctx()
    _finish(args, cancel(ctx, _checked_id(args, ctx.store)), ctx)
    return EXIT_OK


def cmd_discard(args: argparse.Namespace) -> int:
    """``bosun discard RUN [RUN ...]``: each run in turn; one that cannot be discarded is said and the
    others still are (exit of the first failure)."""
    from bosun.core.errors import BosunError
    from bosun.engine.results import run_result
    from bosun.engine.teardown import discard

    ctx = _ctx()
    if len(args.run_ids) == 1:
        args.run_id = args.run_ids[0]
        _finish(args, discard(ctx, _checked_id(args, ctx.store)), ctx, "discard")
        return EXIT_OK
    done: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for given in args.run_ids:
        args.run_id = given
        try:
            run = discard(ctx, _checked_id(args, ctx.store))
        except BosunError as err:
            failed.append({"id": given, "error": err.to_dict(), "exit": err.exit_code})
            if not args.json:
                sys.stderr.write(f"bosun: error: {given}: {err.message}\n  hint: {err.hint}\n")
            continue
        done.append(dict(run_result(run)))
        if not args.json:
            from bosun.cli.render import print_confirmation

            print_confirmation("discard", run)
    if args.json:
        emit_json({"runs": done, "count": len(done), "failed": [{k: f[k] for k in ("id", "error")} for f in failed]})
    return failed[0]["exit"] if failed else EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from bosun.store.db import open_store

    store = open_store()
    run = store.require_run(_checked_id(args, store))
    if args.json:
        from bosun.engine.results import run_result

        out: dict[str, Any] = dict(run_result(run))
        if args.events:
            from bosun.engine.record import read_events

            out["events"] = read_events(run.id)
        emit_json(out)
        return EXIT_OK
    from bosun.cli.render import print_events, print_run

    print_run(run, store)
    if args.events:
        print_events(run.id)
    return EXIT_OK


def cmd_diff(args: argparse.Namespace) -> int:
    from bosun.core.paths import run_dir
    from bosun.store.db import open_store

    store = open_store()
    run = store.require_run(_checked_id(args, store))
    path = run_dir(run.id) / "diff.patch"
    if not path.exists():
        raise BadInput(f"run {run.id} has no verified diff yet", "run `bosun verify` first")
    text = path.read_text("utf-8", "replace")
    if args.json:
        from bosun.engine.run_report import diff_stats

        emit_json({"id": run.id, "diff_sha256": run.diff_sha256, "stats": diff_stats(text), "diff": None if args.stat else text})
        return EXIT_OK
    if args.stat:
        from bosun.cli.render import diffstat

        sys.stdout.write(diffstat(text))
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from bosun.engine.results import list_item
    from bosun.store.db import open_store

    if args.state:
        from bosun.core.states import STATES

        if args.state not in STATES:
            raise BadInput(f"unknown state {args.state!r}", "states: " + ", ".join(STATES))
    runs = open_store().list_runs(state=args.state, limit=args.limit, search=args.search)
    if args.json:
        emit_json({"runs": [list_item(r) for r in runs], "count": len(runs)})
        return EXIT_OK
    from bosun.cli.render import print_list

    print_list(runs)
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    # The schema as shipped next to the code (a test keeps it equal to the models'): printing it
    # needs no pydantic, so the verb starts like the other read-only ones.
    text = (Path(__file__).resolve().parent.parent / "task_contract.schema.json").read_text(encoding="utf-8")
    if args.json:
        emit_json({"schema": json.loads(text)})
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_template(args: argparse.Namespace) -> int:
    from bosun.core.contract_template import TEMPLATE

    if args.json:
        emit_json({"template": TEMPLATE, "format": "yaml"})
    else:
        sys.stdout.write(TEMPLATE)
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from bosun.apps.doctor import gather, healthy
    from bosun.core.errors import EXIT_ERROR

    report = gather(Path(args.repo), args.profile, args.probe)
    ok = healthy(report)
    if args.json:
        sys.stdout.write(json.dumps({**report, "ok": ok}) + "\n")
    else:
        from bosun.cli.views import print_doctor

        print_doctor(report)
    return EXIT_OK if ok else EXIT_ERROR


def shown_settings(repo: Path) -> Settings | SettingsView:
    """The settings of ``repo`` for a verb that only shows them: as validated before when nothing they
    are made from changed since (no pydantic import), else validated now and kept for the next time."""
    from bosun.core.settings_cache import cached_settings

    cached = cached_settings(repo)
    if cached is not None:
        return cached
    from bosun.core.config import load_settings

    return load_settings(repo, keep=True)


def cmd_workers(args: argparse.Namespace) -> int:
    from bosun.apps.doctor import worker_rows

    repo = Path(args.repo)
    if not repo.is_dir():
        # The profiles shown are the repository's (its bosun.toml): a path that is not there shows none of them.
        raise BadInput(f"no directory {args.repo}", "pass your repository with --repo (default: the current directory)",
                       code="NOT_A_REPO")
    rows = worker_rows(repo, shown_settings(repo))
    if args.json:
        sys.stdout.write(json.dumps({"workers": rows}) + "\n")
        return EXIT_OK
    from bosun.cli.views import print_workers

    print_workers(rows)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    if args.remote:
        from bosun.cli.remote_demo import run_remote_demo

        return run_remote_demo(keep=args.keep, as_json=args.json)
    from bosun.cli.demo import run_demo

    return run_demo(keep=args.keep, as_json=args.json)


def cmd_replay(args: argparse.Namespace) -> int:
    if args.replay_command != "serve":
        raise BadInput("usage: bosun replay serve --script S.yaml [--port P]", "see `bosun replay serve --help`")
    from bosun.replay.serve import serve_forever

    return serve_forever(args.script, port=args.port, root=args.root, log_path=args.log, as_json=args.json)


def cmd_models(args: argparse.Namespace) -> int:
    from bosun.apps.models import catalog
    from bosun.isolation.git import repo_root

    doc = catalog(shown_settings(repo_root(Path(args.repo))), args.profile, refresh=args.refresh)
    if args.json:
        emit_json(doc)
    else:
        from bosun.cli.views import print_catalog

        print_catalog(doc)
    return EXIT_OK
