"""SECRET_DETECTED: known key formats and real-looking assignments in added lines, never echoed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bosun.core.changes import FileChange
from bosun.core.contract import TaskContract
from bosun.gates import GateInputs
from bosun.gates.secrets import check_secrets, scan_line

# Realistic shapes, assembled so this file does not itself look like it leaks keys.
AWS = "AKIA" + "Z7Q3L9W2X8V4B6N1"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijKLMNOP"
OPENAI = "sk-proj-" + "Tq8vN3kLm2Xw9Rz4Yp7Hs6Jd1Fb5Gc0"
ANTHROPIC = "sk-ant-" + "api03-Zk4nQ8vB2mX7wR1tY9pL3sD6hJ0fG5cA"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKl"
GOOGLE = "AIza" + "SyD3kF9mQ2xW7vB1nL8pR4tY6hJ0cZ5gA-s"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PW_VALUE = "Tr0ub4dor&3x"
BEGIN = "-----" + "BEGIN "


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (f'AWS_ACCESS_KEY_ID = "{AWS}"', "AWS access key id"),
        (f"token = '{GITHUB}'", "GitHub token"),
        (f"GH={GITHUB_PAT}", "GitHub token"),
        (f'client = OpenAI(api_key="{OPENAI}")', "OpenAI API key"),
        (f'key = "{ANTHROPIC}"', "Anthropic API key"),
        (f"slack: {SLACK}", "Slack token"),
        (f'const key = "{GOOGLE}";', "Google API key"),
        (f"stripe.api_key = '{STRIPE}'", "Stripe live key"),
        (f"{BEGIN}OPENSSH PRIVATE KEY-----", "private key block"),
        (f"{BEGIN}RSA PRIVATE KEY-----", "private key block"),
        (f"Authorization: Bearer {JWT}", "JWT"),
    ],
)
def test_known_formats(line: str, kind: str) -> None:
    assert scan_line(line, "src/app.py") == [kind]


@pytest.mark.parametrize(
    ("line", "path", "kind"),
    [
        (f'api_key = "{PW_VALUE}"', "src/app.py", "hardcoded API key"),
        (f"password: str = '{PW_VALUE}'", "src/app.py", "hardcoded password"),
        (f'"password": "{PW_VALUE}",', "config/app.json", "hardcoded password"),
        (f"  token: '{PW_VALUE}'", "deploy/values.yaml", "hardcoded token"),
        ("SECRET_KEY=9f8e7d6c5b4a3210ff", "deploy/prod.env", "hardcoded secret"),
        (f"db_password = {PW_VALUE}", "settings.ini", "hardcoded password"),
        (f'login(user="bob", password="{PW_VALUE}")', "src/app.py", "hardcoded password"),
        (f"client_secret => '{PW_VALUE}'", "app.rb", "hardcoded client secret"),
    ],
)
def test_real_looking_assignments(line: str, path: str, kind: str) -> None:
    assert scan_line(line, path) == [kind]


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ('api_key = ""', "src/app.py"),
        ('api_key = "changeme"', "src/app.py"),
        ('password = "xxxxxxxxxxxx"', "src/app.py"),
        ('api_key = "<your-api-key>"', "src/app.py"),
        ('token = "${GITHUB_TOKEN}"', "src/app.py"),
        ("token: ${{ secrets.GITHUB_TOKEN }}", ".github/workflows/ci.yml"),
        ('api_key = os.environ["OPENAI_API_KEY"]', "src/app.py"),
        ('password = os.getenv("DB_PASSWORD")', "src/app.py"),
        ("password = get_password()", "settings.cfg"),
        ("api_key = settings.api_key", "src/app.py"),
        ('api_key = "your-api-key"', "README.md"),
        ('secret = "example-secret-value"', "src/app.py"),
        ('password = "dummy-password"', "tests/test_app.py"),
        ('token = "test-token-123"', "tests/test_app.py"),
        ('password = "placeholder"', "src/app.py"),
        ('password = "********"', "src/app.py"),
        ("token = process.env.TOKEN", "web/app.js"),
        ('auth_token = f"Bearer {token}"', "src/app.py"),
        ("api_key: OPENAI_API_KEY", "config.yaml"),
        ('if password == "hunter2hunter2":', "src/app.py"),
        ('tokenizer = "bert-base-uncased"', "src/app.py"),
        ("max_tokens = 4096", "config.toml"),
        ('password = "correct horse battery staple"', "docs/guide.py"),
        ("key = AKIAIOSFODNN7EXAMPLE", "docs/aws.md"),
        ('openai_key = "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"', "docs/setup.md"),
        ("pip install scikit-learn sk-learn-model-selection-tools", "notes.txt"),
        ("model.fit(x, y)  # the token count", "src/train.py"),
    ],
)
def test_placeholders_and_expressions_are_not_secrets(line: str, path: str) -> None:
    assert scan_line(line, path) == []


def _ctx(diff: str) -> GateInputs:
    return GateInputs(
        task=TaskContract(title="t", prompt="p"),
        changes=[FileChange(path="src/settings.py", status="M", added=2, deleted=1)],
        diff=diff.encode(),
        locked=[],
        base_line_count=lambda p: 3,
        base_text=lambda p: None,
        new_text=lambda p: None,
        verification_passed=True,
    )


def test_gate_reports_path_line_and_kind_but_never_the_value() -> None:
    diff = (
        "diff --git a/src/settings.py b/src/settings.py\n"
        "index 1111111..2222222 100644\n"
        "--- a/src/settings.py\n"
        "+++ b/src/settings.py\n"
        "@@ -10,3 +10,4 @@ import os\n"
        " DEBUG = False\n"
        '-API_KEY = os.environ["API_KEY"]\n'
        f'+API_KEY = "{OPENAI}"\n'
        f'+DB_PASSWORD = "{PW_VALUE}"\n'
        " ALLOWED_HOSTS = []\n"
    )
    result = check_secrets(_ctx(diff))
    assert not result.ok
    assert result.code == "SECRET_DETECTED"
    assert "src/settings.py:11 (OpenAI API key)" in result.detail
    assert "src/settings.py:12 (hardcoded password)" in result.detail
    for secret in (OPENAI, PW_VALUE, OPENAI[8:20], PW_VALUE[:6]):
        assert secret not in result.detail


def test_removed_and_context_lines_are_not_scanned() -> None:
    diff = (
        "diff --git a/src/settings.py b/src/settings.py\n"
        "--- a/src/settings.py\n"
        "+++ b/src/settings.py\n"
        "@@ -1,3 +1,3 @@\n"
        f'-API_KEY = "{OPENAI}"\n'
        '+API_KEY = os.environ["API_KEY"]\n'
        f' DB_PASSWORD = "{PW_VALUE}"\n'
        " x = 1\n"
    )
    result = check_secrets(_ctx(diff))
    assert result.ok and result.detail == "no secrets in the added lines of 1 file"


def test_binary_files_are_skipped() -> None:
    diff = "diff --git a/k.bin b/k.bin\nnew file mode 100644\nBinary files /dev/null and b/k.bin differ\n"
    assert check_secrets(_ctx(diff)).ok


# --- secrets split into literals ------------------------------------------------------------------

AWS_HEAD, AWS_TAIL = AWS[:4], AWS[4:]


def _added(path: str, *lines: str, start: int = 1) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +{start},{len(lines)} @@\n{body}"
    )


@pytest.mark.parametrize(
    "lines",
    [
        (f'KEY = "{AWS_HEAD}" + "{AWS_TAIL}"',),  # Python / JS concatenation
        (f'KEY = "{AWS_HEAD}" "{AWS_TAIL}"',),  # Python adjacent literals
        (f"const k = '{AWS_HEAD}' + '{AWS_TAIL[:8]}' + '{AWS_TAIL[8:]}';",),
        (f"const k = `{AWS_HEAD}` + \"{AWS_TAIL}\";",),
        (f'KEY = ("{AWS_HEAD}"', f'       "{AWS_TAIL}")'),  # split over lines inside brackets
        (f'$k = "{AWS_HEAD}" . "{AWS_TAIL}";',),  # PHP
        (f'p = "{AWS_HEAD}"', "x = 1", f'q = "{AWS_TAIL}"', "key = p + q"),  # parts in variables
    ],
)
def test_aws_key_split_into_literals_is_found(lines: tuple[str, ...]) -> None:
    result = check_secrets(_ctx(_added("src/settings.py", *lines)))
    assert not result.ok, lines
    assert "src/settings.py:1 (AWS access key id" in result.detail
    assert AWS_TAIL not in result.detail and AWS_TAIL[:8] not in result.detail


def test_an_aws_key_id_alone_is_a_finding() -> None:
    assert scan_line(AWS, "notes.md") == ["AWS access key id"]
    assert scan_line(f"id {AWS} in prose", "README") == ["AWS access key id"]


def test_split_password_assignment_is_found() -> None:
    assert scan_line(f'DB_PASSWORD = "{PW_VALUE[:5]}" + "{PW_VALUE[5:]}"', "app.py") == []  # one line alone
    result = check_secrets(_ctx(_added("app.py", f'DB_PASSWORD = "{PW_VALUE[:5]}" + "{PW_VALUE[5:]}"')))
    assert not result.ok and "app.py:1 (hardcoded password)" in result.detail


def test_ordinary_concatenation_is_not_a_secret() -> None:
    lines = ('msg = "Hello, " + name + "!"', 'path = "src" + "/" + "calc.py"', 'x = "AKIA" + suffix', 'URL = "https://" "example.org"')
    assert check_secrets(_ctx(_added("app.py", *lines))).ok


# -- the cheap first look never hides a secret --------------------------------------------------------

def _patterns():
    from bosun.core.secretscan import _rx

    rx = _rx()
    return [*rx.token_formats, ("assignment", rx.assignment)]


@pytest.mark.parametrize(("kind", "pattern"), _patterns(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_text_a_pattern_matches_passes_the_first_look(kind, pattern):
    from bosun.core.secretscan import may_hold_secret

    @settings(max_examples=100, deadline=None)
    @given(st.from_regex(pattern))
    def check(text):
        assert may_hold_secret(text), (kind, text)

    check()


def test_a_key_written_with_lookalike_letters_is_still_found():
    from bosun.core.secretscan import redact_line

    # U+212A KELVIN SIGN reads as "K" to a case-insensitive pattern: the first look must not skip it.
    assert "[REDACTED" in redact_line('API_\u212aEY = "q8Zr2mWx7Lp4Tn9Vb3Kc"')
