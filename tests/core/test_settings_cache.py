"""`workers`, `models`, `pool status` and `savings` read without pydantic, and print what they printed.

The read-only verbs take the settings from the cache of validated settings when every input of the
validation is unchanged. Each test runs the real CLI as a subprocess under ``-X importtime``, so it
sees both what the command printed and every module it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, make_repo

# What a read of cached settings must not import: the validation itself, and the heavier stdlib
# modules the fast CLI paths already avoid.
HEAVY = {"pydantic", "bosun.core.config", "typing", "dataclasses", "inspect", "subprocess", "threading",
         "platformdirs", "hashlib", "shutil", "yaml", "httpx", "rich"}

PROFILES = """
default_profile = "cheap"

[profiles.cheap]
adapter = "command"
command = ["true"]
strengths = ["tests", "docs"]
fallbacks = ["careful"]

[profiles.careful]
adapter = "claude"
model = "claude-sonnet-4-5"
tier = "premium"
effort = "high"
prices = { input = 3.0, cached_input = 0.3, output = 15 }

[profiles.listed]
adapter = "opencode"
model = "provider/one"
tier = "standard"

[pool]
size = 1
"""

VERBS = (["workers", "--json"], ["workers"], ["models", "--json"], ["models"], ["models", "careful", "--json"],
         ["pool", "status", "--json"], ["pool", "status"])


def bosun(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``bosun ARGS`` in ``repo``: the finished process and the modules it imported."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "bosun", *args], cwd=repo, env=full_env,
                         capture_output=True, text=True, timeout=120)
    modules = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    return out, modules


def drop_cache(home: Path) -> None:
    for entry in (home / "settings-cache").glob("*.json"):
        entry.unlink()


@pytest.fixture
def setup(tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with three profiles, a pool of one, and a catalog already fetched for `listed`."""
    monkeypatch.setenv("BOSUN_CACHE_DIR", str(tmp_path / "cache"))
    repo = make_repo(tmp_path / "repo", with_config=False)
    (repo / "bosun.toml").write_text(PROFILES)
    from bosun.core.lean_imports import sha256

    key = sha256(json.dumps(["opencode models", ""]).encode()).hexdigest()[:24]
    catalog = tmp_path / "cache" / "models" / f"{key}.json"
    catalog.parent.mkdir(parents=True)
    import time

    catalog.write_text(json.dumps({"fetched_at": time.time(), "models": ["provider/one", "provider/two"]}))
    warmed, _ = bosun(repo, "pool", "warm", "--json")
    assert warmed.returncode == 0, warmed.stdout + warmed.stderr
    return repo


@pytest.mark.parametrize("args", VERBS, ids=" ".join)
def test_a_cached_read_prints_exactly_what_validation_prints(setup: Path, isolated_home: Path, args: list[str]):
    drop_cache(isolated_home)
    full, full_modules = bosun(setup, *args)  # a miss: validates, as every earlier version did
    light, light_modules = bosun(setup, *args)  # the entry that run wrote
    assert full.returncode == light.returncode == 0, full.stdout + full.stderr
    assert "pydantic" in full_modules
    assert light.stdout == full.stdout
    assert not light_modules & HEAVY, sorted(light_modules & HEAVY)


def test_the_reads_show_what_the_config_says(setup: Path):
    workers = json.loads(bosun(setup, "workers", "--json")[0].stdout)["workers"]
    assert [(w["profile"], w["tier"], w["default"]) for w in workers] == [
        ("careful", "premium", False), ("cheap", "cheap", True), ("listed", "standard", False)]
    models = {p["profile"]: p for p in json.loads(bosun(setup, "models", "--json")[0].stdout)["profiles"]}
    assert models["careful"]["prices"] == {"input": 3.0, "cached_input": 0.3, "output": 15.0}
    assert models["listed"]["cached"] is True and models["listed"]["listed"] is True
    pool = json.loads(bosun(setup, "pool", "status", "--json")[0].stdout)
    assert pool["size"] == 1 and pool["idle"] == 1


def test_an_unknown_profile_is_the_same_error_either_way(setup: Path, isolated_home: Path):
    drop_cache(isolated_home)
    full, _ = bosun(setup, "models", "nosuch", "--json")
    light, modules = bosun(setup, "models", "nosuch", "--json")
    assert "pydantic" not in modules
    assert light.returncode == full.returncode == 2
    assert light.stdout == full.stdout and "UNKNOWN_PROFILE" in light.stdout


def test_an_edit_of_the_same_size_and_time_is_seen(setup: Path):
    toml = setup / "bosun.toml"
    bosun(setup, "workers", "--json")
    before = os.stat(toml)
    edited = PROFILES.replace("[profiles.cheap]", "[profiles.cheep]").replace('"cheap"', '"cheep"', 1)
    assert len(edited) == len(PROFILES)
    toml.write_text(edited)
    os.utime(toml, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(toml).st_size == before.st_size and os.stat(toml).st_mtime_ns == before.st_mtime_ns
    out, modules = bosun(setup, "workers", "--json")
    assert "pydantic" in modules  # validated again
    assert [w["profile"] for w in json.loads(out.stdout)["workers"]] == ["careful", "cheep", "listed"]
    again, modules = bosun(setup, "workers", "--json")
    assert "pydantic" not in modules and again.stdout == out.stdout


def test_the_environment_and_the_user_config_are_inputs_too(setup: Path, tmp_path: Path):
    bosun(setup, "workers", "--json")
    out, modules = bosun(setup, "workers", "--json", env={"BOSUN_PROFILE": "careful"})
    assert "pydantic" in modules
    assert [w["profile"] for w in json.loads(out.stdout)["workers"] if w["default"]] == ["careful"]
    user = tmp_path / "user.toml"
    user.write_text('[profiles.mine]\nadapter = "command"\ncommand = ["true"]\n')
    out, modules = bosun(setup, "workers", "--json", env={"BOSUN_CONFIG": str(user)})
    assert "pydantic" in modules and "mine" in [w["profile"] for w in json.loads(out.stdout)["workers"]]
    user.write_text('[profiles.mine]\nadapter = "command"\ncommand = ["false"]\n')  # same size
    out, modules = bosun(setup, "workers", "--json", env={"BOSUN_CONFIG": str(user)})
    assert "pydantic" in modules


@pytest.mark.parametrize(("edit", "code", "words"), [
    ('tier = "premium"', 'tier = "golden"', "config profiles.careful.tier"),
    ('tier = "premium"', 'tire = "premium"', "unknown config key 'profiles.careful.tire'"),
    ("[pool]", "[pool", "invalid TOML"),
])
@pytest.mark.parametrize("args", [["workers", "--json"], ["models", "--json"], ["pool", "status", "--json"]],
                         ids=" ".join)
def test_a_broken_config_fails_as_it_always_did(setup: Path, args: list[str], edit: str, code: str, words: str,
                                                monkeypatch: pytest.MonkeyPatch):
    assert bosun(setup, *args)[0].returncode == 0  # the cache holds the good config
    from bosun.core.config import load_settings
    from bosun.core.errors import BadInput

    (setup / "bosun.toml").write_text(PROFILES.replace(edit, code))
    monkeypatch.chdir(setup)
    with pytest.raises(BadInput) as expected:  # `workers` reads --repo as given, the others its top level
        load_settings(Path(".") if args[0] == "workers" else setup)
    out, _ = bosun(setup, *args)
    assert out.returncode == 2
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "BAD_CONFIG" and words in error["message"]
    assert error["message"] == expected.value.message and error["hint"] == expected.value.hint
    text, _ = bosun(setup, *[a for a in args if a != "--json"])
    assert text.returncode == 2 and expected.value.message in text.stderr


def test_savings_reads_the_store_alone_and_sums_as_before(setup: Path):
    from bosun.apps.savings import totals
    from bosun.store.db import open_store

    out, modules = bosun(setup, "savings", "--json")
    assert out.returncode == 0
    assert not modules & HEAVY, sorted(modules & HEAVY)
    assert json.loads(out.stdout) == json.loads(json.dumps(totals(open_store(), setup)))
    text, modules = bosun(setup, "savings")
    assert text.returncode == 0 and text.stdout.startswith(f"runs: 0 ({setup.resolve()})")
    assert not modules & HEAVY


def test_only_the_showing_verbs_store_and_never_command_line_overrides(repo: Path, isolated_home: Path):
    from bosun.core.config import load_settings
    from bosun.core.settings_cache import cached_settings

    load_settings(repo)  # every other command: bosun's home stays as it was
    load_settings(repo, {"max_concurrent_runs": 2}, keep=True)
    assert cached_settings(repo) is None and not (isolated_home / "settings-cache").exists()
    settings = load_settings(repo, keep=True)
    view = cached_settings(repo)
    assert view is not None and view.default_profile == settings.default_profile
    assert {n: (p.adapter, p.command, p.prices.model_dump()) for n, p in view.profiles.items()} == {
        n: (p.adapter, p.command, p.prices.model_dump()) for n, p in settings.profiles.items()}
    assert view.pool.size == settings.pool.size


def test_a_cache_written_for_other_code_is_a_miss(repo: Path, isolated_home: Path):
    from bosun.core import settings_cache
    from bosun.core.config import load_settings

    load_settings(repo, keep=True)
    (entry,) = (isolated_home / "settings-cache").glob("*.json")
    doc = json.loads(entry.read_text())
    doc["key"] = "0" * 64
    entry.write_text(json.dumps(doc))
    assert settings_cache.cached_settings(repo) is None
    load_settings(repo, keep=True)  # writes it again
    assert settings_cache.cached_settings(repo) is not None
    doc = json.loads(entry.read_text())
    del doc["settings"]["profiles"]["fix"]["tier"]  # the right key, a document this code never wrote
    entry.write_text(json.dumps(doc))
    assert settings_cache.cached_settings(repo) is None


def test_another_pydantic_is_a_miss(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from bosun.core import settings_cache

    contents = [(p, settings_cache.read_config(p)) for p in settings_cache.config_files(repo)]
    before = settings_cache.cache_key(contents, {})
    shadow = tmp_path / "shadow" / "pydantic"
    shadow.mkdir(parents=True)
    (shadow / "version.py").write_text("VERSION = '0'\n")
    monkeypatch.syspath_prepend(str(shadow.parent))  # where `import pydantic` would now look first
    assert settings_cache.cache_key(contents, {}) != before


@pytest.mark.parametrize("env", [{}, {"XDG_CONFIG_HOME": "/x/conf", "XDG_CACHE_HOME": "/x/cache/"},
                                 {"XDG_CACHE_HOME": "relative", "HOME": "/h/"}, {"HOME": "/"}, {"HOME": "rel"}])
def test_the_config_and_cache_paths_are_platformdirs_own(env: dict[str, str], monkeypatch: pytest.MonkeyPatch):
    import platformdirs

    from bosun.core import paths

    for key in ("BOSUN_CONFIG", "BOSUN_CACHE_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert paths.user_config_path() == Path(platformdirs.user_config_dir("bosun")) / "config.toml"
    assert paths.cache_dir() == Path(platformdirs.user_cache_dir("bosun"))


def test_repo_root_answers_as_git_does_spawned_or_through_subprocess(repo: Path, tmp_path: Path):
    from bosun.core.errors import BadInput
    from bosun.isolation.git import git, repo_root, spawn_git

    def toplevel(path: Path) -> str | None:
        res = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True)
        return res.stdout.strip() if res.returncode == 0 else None

    subprocess.run(["git", "worktree", "add", "-q", str(tmp_path / "wt")], cwd=repo, check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    (tmp_path / "plain").mkdir()
    for path in (repo, repo / "src", tmp_path / "wt", tmp_path / "wt" / "tests", repo / ".git", tmp_path / "bare.git",
                 tmp_path / "plain", tmp_path / "missing"):
        expected = toplevel(path) if path.is_dir() else None
        if expected is None:
            with pytest.raises(BadInput):
                repo_root(path)
        else:
            assert repo_root(path) == Path(expected)
        if path.is_dir():  # the spawned call answers exactly as the subprocess one
            for args in (["rev-parse", "--show-toplevel"], ["status", "--porcelain"], ["log", "-1", "--format=%s"]):
                res = git(args, path, check=False)
                assert spawn_git(args, path) == (res.returncode, res.stdout)


def test_a_read_in_a_lean_process_asks_git_without_subprocess(repo: Path):
    code = ("import sys; from bosun.isolation.git import repo_root; print(repo_root(sys.argv[1]));"
            "print('subprocess' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(repo / "src")], env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines() == [str(repo.resolve()), "False"], out.stderr
