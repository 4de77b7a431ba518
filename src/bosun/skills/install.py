"""``bosun skill install`` and ``bosun mcp install``: put bosun where each parent agent looks.

Skill directories (Agent Skills): Claude Code reads ``~/.claude/skills/*/`` and ``.claude/skills/*/``;
Codex and other hosts read ``~/.agents/skills/*/`` and ``.agents/skills/*/``; OpenCode reads both.

Every install writes a manifest (``.bosun-manifest.json``, the files and their SHA-256) next to what
it wrote. Re-installing rewrites only bosun's own files; a file bosun did not write is never
overwritten; uninstall removes exactly the manifest's files that are unchanged, then the manifest,
then the directories that became empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from bosun.core.errors import BadInput, NotFound
from bosun.core.fileio import write_bytes_atomic
from bosun.skills.playbook import SKILL_NAME, render

HOSTS = ("claude", "codex", "agents", "opencode")
MANIFEST = ".bosun-manifest.json"
PLUGIN_FILES = (".claude-plugin/plugin.json", ".claude-plugin/marketplace.json", ".mcp.json", "hooks/hooks.json")
# Which skill directories each host reads (OpenCode reads Claude Code's and the shared one).
READS = {"claude": ("claude",), "codex": ("agents",), "agents": ("agents",), "opencode": ("claude", "agents")}


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def _family(host: str) -> str:
    if host not in HOSTS:
        raise BadInput(f"unknown host {host!r}", "hosts: " + ", ".join(HOSTS))
    return "claude" if host == "claude" else "agents"


def skills_root(family: str, project: bool, repo: Path, env: Mapping[str, str]) -> Path:
    if project:
        return repo / (".claude" if family == "claude" else ".agents") / "skills"
    if family == "claude":
        base = env.get("CLAUDE_CONFIG_DIR")
        return (Path(base) if base else _home(env) / ".claude") / "skills"
    return _home(env) / ".agents" / "skills"


def skill_dir(host: str, project: bool, repo: Path, env: Mapping[str, str]) -> Path:
    return skills_root(_family(host), project, repo, env) / SKILL_NAME


def _settings(project: bool, repo: Path) -> Any:
    from bosun.core.config import load_settings

    # A user-wide skill lists the user's own profiles; a project skill adds the repo's bosun.toml.
    return load_settings(repo if project else None)


def playbook(project: bool, repo: Path) -> str:
    from bosun import __version__

    return render(_settings(project, repo), __version__)


# --- owned files ---------------------------------------------------------------------------------


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(root: Path) -> dict[str, str] | None:
    try:
        doc = json.loads((root / MANIFEST).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return None
    # Only plain relative paths: a tampered manifest must not point outside its directory.
    return {str(k): str(v) for k, v in files.items()
            if not Path(str(k)).is_absolute() and ".." not in Path(str(k)).parts}


def write_owned(root: Path, files: dict[str, bytes]) -> dict[str, Any]:
    """Write ``files`` under ``root``; refuse to overwrite a file bosun did not write."""
    owned = _manifest(root) or {}
    for rel, data in files.items():
        target = root / rel
        if target.exists() and rel not in owned and target.read_bytes() != data:
            raise BadInput(f"{target} exists and was not written by bosun",
                           "move it away, or uninstall it the way it was installed")
    changed = []
    for rel, data in files.items():
        target = root / rel
        if not target.exists() or target.read_bytes() != data:
            write_bytes_atomic(target, data)
            changed.append(str(target))
    for rel, digest in owned.items():
        if rel not in files:  # written by an older install and no longer part of it
            old = root / rel
            if old.is_file() and _sha(old.read_bytes()) == digest:
                old.unlink()
    doc = {"format_version": 1, "generated_by": "bosun", "files": {rel: _sha(d) for rel, d in files.items()}}
    write_bytes_atomic(root / MANIFEST, (json.dumps(doc, indent=2) + "\n").encode())
    return {"path": str(root), "changed": changed, "unchanged": not changed}


def remove_owned(root: Path) -> dict[str, Any]:
    owned = _manifest(root)
    if owned is None:
        raise NotFound(f"nothing installed by bosun at {root}", "install first; bosun removes only what it wrote")
    removed, kept = [], []
    for rel, digest in owned.items():
        target = root / rel
        if not target.is_file():
            continue
        if _sha(target.read_bytes()) == digest:
            target.unlink()
            removed.append(str(target))
        else:
            kept.append(str(target))
    (root / MANIFEST).unlink()
    removed.append(str(root / MANIFEST))
    for rel in sorted(owned, key=lambda r: -r.count("/")):
        parent = (root / rel).parent
        while True:  # remove the directories that became empty, never above root
            try:
                parent.rmdir()
            except OSError:
                break
            if parent == root:
                break
            parent = parent.parent
    return {"path": str(root), "removed": removed, "kept_changed_by_user": kept}


# --- skills --------------------------------------------------------------------------------------


def install_skill(host: str, project: bool, repo: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    target = skill_dir(host, project, repo, env)
    out = write_owned(target, {"SKILL.md": playbook(project, repo).encode()})
    return {"host": host, "scope": "project" if project else "user", **out}


def uninstall_skill(host: str, project: bool, repo: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if env is None else env
    return {"host": host, "scope": "project" if project else "user",
            **remove_owned(skill_dir(host, project, repo, env))}


def _bosun_command() -> list[str]:
    exe = shutil.which("bosun")
    return [exe] if exe else [sys.executable, "-m", "bosun"]


def install_plugin(target: Path, repo: Path) -> dict[str, Any]:
    """A Claude Code plugin directory: manifest, marketplace, MCP server, SessionStart hook, skill."""
    data = resources.files("bosun.skills") / "plugin"
    files: dict[str, bytes] = {}
    for rel in PLUGIN_FILES:
        files[rel] = data.joinpath(rel).read_bytes()
    mcp = json.loads(files[".mcp.json"])
    cmd = _bosun_command()
    mcp["mcpServers"]["bosun"]["command"] = cmd[0]
    mcp["mcpServers"]["bosun"]["args"] = [*cmd[1:], "mcp"]
    files[".mcp.json"] = (json.dumps(mcp, indent=2) + "\n").encode()
    files[f"skills/{SKILL_NAME}/SKILL.md"] = playbook(False, repo).encode()
    out = write_owned(target, files)
    out["next"] = f"claude plugin marketplace add {target} && claude plugin install bosun@bosun"
    return {"host": "claude", "scope": "plugin", **out}


def uninstall_plugin(target: Path) -> dict[str, Any]:
    return {"host": "claude", "scope": "plugin", **remove_owned(target)}


# --- doctor --------------------------------------------------------------------------------------


def installed(repo: Path, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every bosun skill in the places hosts read, with whether it is bosun's and up to date."""
    env = os.environ if env is None else env
    found = []
    for family in ("claude", "agents"):
        for project in (False, True):
            d = skills_root(family, project, repo, env) / SKILL_NAME
            skill = d / "SKILL.md"
            if not skill.is_file():
                continue
            ours = _manifest(d) is not None
            try:
                stale = ours and skill.read_text("utf-8") != playbook(project, repo)
            except Exception:  # noqa: BLE001 - a broken config makes every skill "unknown", not a crash
                stale = False
            found.append({"family": family, "scope": "project" if project else "user", "path": str(d),
                          "by_bosun": ours, "stale": stale})
    return found


def warnings(repo: Path, env: Mapping[str, str] | None = None) -> list[str]:
    found = installed(repo, env)
    out = []
    for host, families in READS.items():
        if host == "agents":
            continue
        seen = [f["path"] for f in found if f["family"] in families]
        if len(seen) > 1:
            out.append(f"{host} sees the bosun skill {len(seen)} times: {', '.join(seen)}; "
                       f"remove one with `bosun skill install HOST --uninstall [--project]`")
    for f in found:
        if f["stale"]:
            out.append(f"the bosun skill at {f['path']} is stale (profiles or bosun changed); re-run "
                       f"`bosun skill install` for it")
        if not f["by_bosun"]:
            out.append(f"{f['path']} holds a bosun skill bosun did not write")
    return out


# --- MCP registration ----------------------------------------------------------------------------

Runner = Callable[[list[str]], tuple[int, str]]


def mcp_command(host: str, project: bool) -> list[list[str]]:
    """The host's own commands that register ``bosun mcp`` (a removal first keeps it idempotent)."""
    cmd = [*_bosun_command(), "mcp"]
    if host == "claude":
        scope = "project" if project else "user"
        return [["claude", "mcp", "remove", "-s", scope, "bosun"],
                ["claude", "mcp", "add", "-s", scope, "-e", "PARENT_AGENT=claude-code", "bosun", "--", *cmd]]
    if host == "codex":
        if project:
            raise BadInput("Codex registers MCP servers per user only", "drop --project")
        return [["codex", "mcp", "remove", "bosun"],
                ["codex", "mcp", "add", "bosun", "--env", "PARENT_AGENT=codex", "--", *cmd]]
    raise BadInput(f"cannot register the MCP server with {host!r}",
                   "hosts: claude, codex; for others see docs/parents.md")


def _run(argv: list[str]) -> tuple[int, str]:
    from bosun.proc import run_quick

    res = run_quick(argv, timeout=60)
    return res.returncode, (res.stdout + res.stderr).strip()


# The keys of bosun's [mcp_servers.bosun] table that `codex mcp add` cannot set: for a stdio server it
# carries the command and --env only (its -c overrides a key for that one invocation and writes nothing).
CODEX_TABLE_ONLY = ("startup_timeout_sec", "tool_timeout_sec", "required", "default_tools_approval_mode", "env_vars")


def codex_config(env: Mapping[str, str] | None = None) -> str:
    """Where Codex reads its configuration, as a person would write it."""
    home = (os.environ if env is None else env).get("CODEX_HOME")
    return str(Path(home) / "config.toml") if home else "~/.codex/config.toml"


def codex_toml(cmd: list[str]) -> str:
    args = ", ".join(json.dumps(a) for a in cmd[1:])
    # The MCP SDK takes a few seconds to import on a busy machine; Codex's default start-up limit is 10 s.
    # `required`: Codex otherwise starts the first turn before bosun's tools are listed, so a one-shot
    # `codex exec` never sees them. `approve`: Codex asks before every tool that is not read-only, and
    # `codex exec` cannot ask; bosun's own gates and approve/integrate are the authority over what lands.
    return (f'[mcp_servers.bosun]\ncommand = {json.dumps(cmd[0])}\nargs = [{args}]\n'
            f'env = {{ PARENT_AGENT = "codex" }}\nstartup_timeout_sec = 30\ntool_timeout_sec = 120\n'
            f'required = true\ndefault_tools_approval_mode = "approve"\n'
            # Codex starts MCP servers with a bare environment: CODEX_HOME is how bosun finds the
            # parent's session log when it is not ~/.codex.
            f'env_vars = ["CODEX_HOME"]\n')


def mcp_install(host: str, project: bool, print_only: bool = False, run: Runner | None = None) -> dict[str, Any]:
    steps = mcp_command(host, project)
    add = steps[-1]
    out: dict[str, Any] = {"host": host, "command": add, "ran": False}
    if host == "codex":
        # `codex mcp add` would register a server Codex gives 10 s to start and does not wait for, so a
        # one-shot `codex exec` never sees its tools: the table is the registration that works.
        out["config_toml"] = codex_toml(add[add.index("--") + 1 :])
        out["command_cannot_set"] = list(CODEX_TABLE_ONLY)
        out["reason"] = (f"`codex mcp add` cannot set {', '.join(CODEX_TABLE_ONLY)}: add this [mcp_servers.bosun] "
                         f"table to {codex_config()} instead (after `codex mcp remove bosun` if bosun is registered "
                         "already)")
        return out
    exe = shutil.which(add[0])
    if print_only or exe is None:
        out["reason"] = "printed only" if print_only else f"{add[0]} is not on PATH; run the command once it is"
        return out
    runner = run or _run
    runner([exe, *steps[0][1:]])  # absent before: the removal fails harmlessly
    code, text = runner([exe, *add[1:]])
    out.update(ran=True, exit_code=code, output=text[-2000:])
    if code != 0:
        raise BadInput(f"{add[0]} could not register bosun: {text[-500:]}", "run the command yourself: " + " ".join(add))
    return out
