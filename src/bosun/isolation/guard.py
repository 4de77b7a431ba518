"""The git guard around an untrusted worker: it may read history and edit files, never move refs or push.

Three layers, because any one can be bypassed by a determined process:

* a ``git`` shim first on the worker's PATH refuses history-changing and ref-changing subcommands
  with a message the agent can act on (a POSIX sh script: agents call git constantly, and sh starts
  in about a millisecond where Python takes tens);
* a ``reference-transaction`` hook, selected through ``GIT_CONFIG_*`` env config (which also reaches
  ``/usr/bin/git`` called by absolute path), aborts every ref update;
* a ``pushInsteadOf`` rule with an empty prefix rewrites every push URL to an unreachable helper,
  and a ``pre-push`` hook refuses pushes that escape it (an explicit ``pushurl`` or a longer
  ``pushInsteadOf`` of the user's own is not rewritten by our rule).

None of this is a sandbox; the engine still checks the user's refs before it integrates.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bosun.core.errors import BosunError

GUARD_MARKER = "bosun git guard"

# Matches every URL (git 2.39 accepts an empty prefix and the longest match wins; an empty one
# loses only to the user's own pushInsteadOf rules, which the pre-push hook covers). The base
# names a remote helper that does not exist, so the error names bosun.
PUSH_BLOCK_KEY = "url.bosun-push-blocked::.pushInsteadOf"

_HISTORY = "bosun commits the worktree for you when you finish; leave your changes in the files"
_REFS = "branches, tags and other refs belong to the user"
_REMOTE = "bosun integrates the change itself; nothing is fetched or pushed from a worktree"
_SHARED = "it changes the repository the worktree shares with the user"

_SHIM = r"""#!/bin/sh
# __MARKER__: workers may read history, edit files and stage them; they may not commit, move
# refs, rewrite history or push. Everything allowed runs the real git with its arguments unchanged.
REAL_GIT=__REAL_GIT__

refuse() {
    printf 'bosun: git %s is not allowed for workers (%s)\n' "$1" "$2" >&2
    exit 1
}

# -c overrides that would switch the guard off: hooks, URL rewrites, aliases, included files.
check_override() {
    case $1 in
        [Cc][Oo][Rr][Ee].[Hh][Oo][Oo][Kk][Ss][Pp][Aa][Tt][Hh]*|[Uu][Rr][Ll].*|[Aa][Ll][Ii][Aa][Ss].*|[Ii][Nn][Cc][Ll][Uu][Dd][Ee]*)
            refuse "-c $1" "it would switch off bosun's git guard" ;;
    esac
}

check_remote() {
    for a in "$@"; do
        case $a in
            -v|--verbose) ;;
            show|get-url) return 0 ;;
            *) refuse "remote $a" "__REMOTE__" ;;
        esac
    done
}

check_config() {
    n=0 need=0 first=
    for a in "$@"; do
        if [ "$need" = 1 ]; then need=0; continue; fi
        case $a in
            --get|--get-all|--get-regexp|--get-urlmatch|--get-color|--get-colorbool|--list|-l) return 0 ;;
            -f|--file|--blob|--type|--default) need=1 ;;
            --file=*|--blob=*|--type=*|--default=*|--global|--system|--local|--worktree) ;;
            --includes|--no-includes|--show-origin|--show-scope|--null|-z|--name-only) ;;
            --bool|--int|--bool-or-int|--path|--expiry-date|--fixed-value) ;;
            -*) refuse "config $a" "only reading configuration is allowed" ;;
            *) n=$((n + 1)); [ "$n" = 1 ] && first=$a ;;
        esac
    done
    case $first in
        get|list) return 0 ;;
        set|unset|edit|rename-section|remove-section) refuse "config $first" "only reading configuration is allowed" ;;
    esac
    [ "$n" -le 1 ] && return 0
    refuse "config" "only reading configuration is allowed"
}

check_branch() {
    listing=0 positional= need=0 maybe=0
    for a in "$@"; do
        if [ "$need" = 1 ]; then need=0; continue; fi
        if [ "$maybe" = 1 ]; then
            maybe=0
            case $a in -*) ;; *) continue ;; esac
        fi
        case $a in
            --list) listing=1 ;;
            --contains|--no-contains|--merged|--no-merged) maybe=1 ;;
            --points-at|--sort|--format) need=1 ;;
            --contains=*|--no-contains=*|--merged=*|--no-merged=*|--points-at=*|--sort=*|--format=*) ;;
            --all|--remotes|--verbose|--quiet|--show-current|--ignore-case|--omit-empty) ;;
            --abbrev|--abbrev=*|--no-abbrev|--color|--color=*|--no-color|--column|--column=*|--no-column) ;;
            --) ;;
            --*) refuse "branch $a" "__REFS__" ;;
            -*)
                case ${a#-} in *[!arvqil]*) refuse "branch $a" "__REFS__" ;; esac
                case $a in *l*) listing=1 ;; esac ;;
            *) [ -n "$positional" ] || positional=$a ;;
        esac
    done
    if [ -n "$positional" ] && [ "$listing" = 0 ]; then
        refuse "branch $positional" "__REFS__; use git branch --list to read them"
    fi
}

guard() {
    # Skip git's global options to find the subcommand, checking -c overrides on the way.
    while [ $# -gt 0 ]; do
        case $1 in
            -c|--config-env)
                [ $# -ge 2 ] || return 0
                check_override "$2"; shift 2 ;;
            --config-env=*) check_override "${1#--config-env=}"; shift ;;
            -C|--git-dir|--work-tree|--namespace|--super-prefix|--attr-source)
                [ $# -ge 2 ] || return 0
                shift 2 ;;
            -*) shift ;;
            *) break ;;
        esac
    done
    [ $# -gt 0 ] || return 0
    sub=$1
    shift
    case $sub in
        commit|merge|rebase|cherry-pick|revert|am|pull|stash) refuse "$sub" "__HISTORY__" ;;
        reset|checkout|switch)
            refuse "$sub" "it moves HEAD or discards work; use git restore <path> to undo a file" ;;
        clean) refuse "$sub" "it deletes untracked files wholesale; remove files one by one with rm" ;;
        push|fetch|send-pack|http-push) refuse "$sub" "__REMOTE__" ;;
        tag|update-ref|symbolic-ref|filter-branch|replace|notes|bisect) refuse "$sub" "__REFS__" ;;
        worktree|gc|prune|repack|pack-refs|maintenance) refuse "$sub" "__SHARED__" ;;
        remote) check_remote "$@" ;;
        config) check_config "$@" ;;
        branch) check_branch "$@" ;;
        reflog)
            case ${1-} in expire|delete) refuse "reflog $1" "__SHARED__" ;; esac ;;
    esac
}

guard "$@"
exec "$REAL_GIT" "$@"
"""

_REFERENCE_TRANSACTION = """#!/bin/sh
# __MARKER__: a worker may not create, move or delete any ref, even through git called by path.
while read -r _line; do :; done
if [ "$1" = prepared ]; then
    echo "bosun: workers may not change branches, tags or other refs (bosun commits the work itself)" >&2
    exit 1
fi
exit 0
"""

_PRE_PUSH = """#!/bin/sh
# __MARKER__: a worker may not push anywhere.
echo "bosun: git push is not allowed for workers (bosun integrates the change itself)" >&2
exit 1
"""


def _sh_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _is_guard(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return GUARD_MARKER.encode() in fh.read(256)
    except OSError:
        return False


def find_real_git() -> str:
    """The first ``git`` on PATH that is not a bosun shim, as an absolute path."""
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(entry or ".") / "git"
        if candidate.is_file() and os.access(candidate, os.X_OK) and not _is_guard(candidate):
            return os.path.abspath(candidate)
    raise BosunError(
        "git is not installed (no git on PATH)", "install git; bosun needs it to isolate workers"
    )


def _write_executable(path: Path, content: str) -> None:
    # Written aside and renamed: sh reads a script as it runs, so rewriting one in place could
    # feed a worker's running git half of the old text and half of the new.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(content.replace("__MARKER__", GUARD_MARKER))
    tmp.chmod(0o755)
    os.replace(tmp, path)


def render_shim(real_git: str) -> str:
    text = _SHIM
    for key, value in {
        "__REAL_GIT__": _sh_quote(real_git),
        "__HISTORY__": _HISTORY,
        "__REFS__": _REFS,
        "__REMOTE__": _REMOTE,
        "__SHARED__": _SHARED,
    }.items():
        text = text.replace(key, value)
    return text


def install_guard(guard_dir: Path, real_git: str | None = None) -> dict[str, str]:
    """Write the shim and hooks under ``guard_dir``; return the env additions that switch them on.

    The caller prepends ``BOSUN_GUARD_BIN`` to the worker's PATH; the ``GIT_CONFIG_*`` entries reach
    every git the worker runs, shim or not.
    """
    if real_git is None:
        real_git = find_real_git()
    elif not os.path.isabs(real_git):
        real_git = shutil.which(real_git) or real_git
    real_git = os.path.abspath(real_git)
    bin_dir = guard_dir / "bin"
    hooks_dir = guard_dir / "hooks"
    _write_executable(bin_dir / "git", render_shim(real_git))
    _write_executable(hooks_dir / "reference-transaction", _REFERENCE_TRANSACTION)
    _write_executable(hooks_dir / "pre-push", _PRE_PUSH)
    config = [("core.hooksPath", str(hooks_dir.resolve())), (PUSH_BLOCK_KEY, "")]
    env = {"BOSUN_GUARD_BIN": str(bin_dir.resolve()), "GIT_TERMINAL_PROMPT": "0"}
    env["GIT_CONFIG_COUNT"] = str(len(config))
    for n, (key, value) in enumerate(config):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env
