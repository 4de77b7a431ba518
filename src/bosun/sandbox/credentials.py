"""Where the user's credentials usually live: hidden from every confined process.

A worker gets a HOME of its own, so nothing in the user's HOME is needed for honest work except the
programs installed there (a CLI's install, toolchains on PATH), which stay readable. What is hidden
is where keys and logins are kept: SSH and GPG keys and agents' sockets, cloud and cluster configs,
registry and forge tokens, netrc, password stores, shell history and start-up files (where people
export keys). ``sandbox_hide`` in bosun.toml adds the user's own paths.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterable
from pathlib import Path

# Relative to a HOME. A path that does not exist is left out (there is nothing to hide).
IN_HOME = (
    ".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials", ".pgpass",
    ".my.cnf", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pypirc", ".gem/credentials", ".cargo/credentials",
    ".cargo/credentials.toml", ".terraform.d", ".vault-token", ".password-store", ".oci", ".boto",
    ".s3cfg", ".config/gh", ".config/hub", ".config/gcloud", ".config/doctl", ".config/op",
    ".config/git/credentials", ".config/rclone", ".config/heroku", ".local/share/keyrings",
    ".local/share/gnome-keyring", ".claude/.credentials.json", ".claude.json", ".codex/auth.json",
    ".config/github-copilot", ".gemini/oauth_creds.json", ".qwen/oauth_creds.json",
    ".bash_history", ".zsh_history", ".python_history", ".node_repl_history", ".psql_history",
    ".mysql_history", ".sqlite_history", ".lesshst", ".bashrc", ".bash_profile", ".bash_login",
    ".profile", ".zshrc", ".zshenv", ".zprofile", ".config/fish", ".env",
)
# Sockets that act with the user's (or the machine's) authority.
SYSTEM = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman", "/run/containerd/containerd.sock")


def user_homes() -> tuple[Path, ...]:
    """The user's HOME as bosun sees it and as the password database gives it (they may differ)."""
    homes = []
    env = os.environ.get("HOME", "")
    if os.path.isabs(env):
        homes.append(Path(env))
    try:
        homes.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        pass
    return tuple(dict.fromkeys(homes))


def credential_stores(extra: Iterable[str | Path] = ()) -> tuple[Path, ...]:
    """Every existing credential store of this user, and ``extra`` (``~`` expanded)."""
    found = [home / rel for home in user_homes() for rel in IN_HOME]
    found += [Path(p) for p in SYSTEM]
    runtime = Path(f"/run/user/{os.getuid()}")  # the user's agents' sockets (ssh, gpg, keyrings, D-Bus)
    found.append(runtime)
    found += [Path(os.path.expanduser(str(p))) for p in extra]
    return tuple(p for p in dict.fromkeys(found) if os.path.lexists(p))
