"""What a worker may never do in a shell, shared by every adapter whose CLI can filter commands."""

from __future__ import annotations

# Shell commands a worker may never run. Each becomes the patterns "CMD *" (the command alone or with
# arguments) and "*/CMD *" (called by absolute path). OpenCode matches each command of a pipeline or a
# `&&` chain separately.
SHELL_DENY: tuple[str, ...] = (
    # history, branches, remotes: bosun commits and integrates the change itself
    "git commit", "git push", "git pull", "git fetch", "git clone", "git remote", "git reset",
    "git checkout", "git switch", "git restore --staged", "git rebase", "git merge", "git cherry-pick",
    "git revert", "git am", "git stash", "git clean", "git tag", "git branch", "git update-ref",
    "git symbolic-ref", "git filter-branch", "git filter-repo", "git replace", "git notes",
    "git worktree", "git gc", "git prune", "git reflog expire", "git config",
    # the network
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet", "ftp",
    # publishing
    "npm publish", "pnpm publish", "yarn publish", "yarn npm publish", "bun publish", "npx np",
    "twine", "python -m twine", "python3 -m twine", "poetry publish", "uv publish", "flit publish",
    "hatch publish", "cargo publish", "cargo yank", "gem push", "docker push", "docker login",
    "gh", "glab", "hub",
    # privileges
    "sudo", "su", "doas", "pkexec",
)


def denied_commands() -> list[str]:
    """The shell commands (as word prefixes) no worker may run, normalized and deduplicated."""
    seen: dict[str, None] = {}
    for cmd in SHELL_DENY:
        cmd = " ".join(cmd.split())
        if cmd:
            seen[cmd] = None
    return list(seen)


# What a CLI whose shell rules match command text cannot promise in a run that may edit.
SHELL_TEXT_RULES = "shell deny rules are text patterns; a wrapped command (bash -c, python -c) is not matched"
NO_NETWORK_SANDBOX = "no network sandbox for shell commands"

# Lines of ``bosun doctor``'s enforces / cannot_enforce that several CLIs share.
GUARD_ENV_TIMEOUTS = "git guard, env allowlist, timeouts (process group kill, stray shell commands reaped)"
CANNOT_SHELL_TEXT = ("shell deny rules match command text: wrappers (bash -c, env, xargs, python -c) get past them; "
                     "bosun's git guard still refuses history changes and the gates still check the diff")
CANNOT_NETWORK = "no network sandbox for shell commands (only the listed network tools are denied)"
