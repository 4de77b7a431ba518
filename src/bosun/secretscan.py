"""Recognising credentials in text: known key formats and assignments of real-looking values.

Used by the SECRET_DETECTED gate (:mod:`bosun.gates.secrets`, which also joins split literals) and by
:mod:`bosun.redaction`, which masks what it finds in everything bosun writes or prints. A leaf module:
it imports nothing of bosun's, so the read-only CLI verbs can redact without loading the gates.

* Known key formats, recognisable anywhere: AWS access key ids (AKIA/ASIA), GitHub tokens
  (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), Anthropic (sk-ant-), OpenAI (sk-, sk-proj-), Slack
  (xoxb-, xoxa-, xoxp-, xoxr-, xoxs-), Google API keys (AIza), Stripe live keys (sk_live_,
  rk_live_), private key blocks ("-----BEGIN ... PRIVATE KEY-----") and JWTs (eyJ... . eyJ... .).
* Assignments to a name ending in a secret word (api_key, secret, secret_key, token, password,
  passwd, pwd, passphrase, private_key, access_key, client_secret): ``api_key = "..."``,
  ``token: '...'``, ``"password": "..."``, ``SECRET_KEY=...``. The value must look real: at least 8
  characters, no whitespace, and not a placeholder ("changeme", "xxxx", "<...>", "${VAR}", "your-api-key",
  "example", "dummy", "test", "placeholder", "***", env var names). In source code only quoted values
  count, since an unquoted value is an expression (``token = os.environ["T"]``, ``password=get()``);
  in config files (.env, YAML, TOML, INI, shell) a bare value is the literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# (kind, pattern). Order matters where formats overlap: sk-ant- before the general sk-. An OpenAI key
# must hold a digit somewhere, so hyphenated words ("sk-learn-model-selection-tools") are not keys.
_TOKEN_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(rx))
    for kind, rx in (
        ("private key block", r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),
        ("AWS access key id", r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
        ("GitHub token", r"(?<![\w])gh[pousr]_[A-Za-z0-9]{36,}"),
        ("GitHub token", r"(?<![\w])github_pat_[A-Za-z0-9_]{22,}"),
        ("Anthropic API key", r"(?<![\w-])sk-ant-[A-Za-z0-9_\-]{20,}"),
        ("OpenAI API key", r"(?<![\w-])sk-(?!ant-)(?=[\w-]*\d)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
        ("Slack token", r"(?<![\w])xox[baprs]-[A-Za-z0-9\-]{10,}"),
        ("Google API key", r"(?<![\w])AIza[0-9A-Za-z_\-]{35}"),
        ("Stripe live key", r"(?<![\w])[rs]k_live_[0-9A-Za-z]{16,}"),
        ("JWT", r"(?<![\w-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"),
    )
)

# A name ending in a secret word ("db_password", "GITHUB_TOKEN", "x-api-key"), then an optional
# closing quote (JSON/dict keys), an optional type annotation, and an assignment operator.
_SECRET_WORDS = (
    r"api[_\-]?key|secret(?:[_\-]?key)?|(?:access|auth|refresh|bearer)?[_\-]?token|passw(?:or)?d|pwd"
    r"|passphrase|private[_\-]?key|access[_\-]?key(?:[_\-]?id)?|client[_\-]?secret"
)
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (?<![\w.\-])(?P<name>[\w.\-]*?(?:{_SECRET_WORDS})s?)(?![\w])
    ["']?\s*
    (?::\s*[a-z_][\w\[\]., |]*?\s*(?==))?     # a type annotation: "password: str = ..."
    (?P<op>:=|=>|=|:)\s*
    (?P<value>.*)
    """
)
_QUOTED = re.compile(r"""^(?:[rRbBuU]{1,2})?(?P<q>["'`])(?P<body>.*?)(?P=q)""")
_FSTRING = re.compile(r"""^[fF][rR]?["']""")
_BARE = re.compile(r"""^[^\s,;#'"`]+""")

# Files where "name = value" holds a literal even without quotes.
_CONFIG_SUFFIXES = tuple(
    ".env .ini .cfg .conf .toml .yaml .yml .properties .sh .bash .zsh .envrc .tfvars .txt".split()
)
# A value containing one of these is filler, not a credential.
_PLACEHOLDER_WORDS = tuple(
    """changeme change_me change-me example dummy test placeholder your redacted sample fake mock
    secret_here insert replace todo fixme xxxx **** .... password notasecret not-a-secret none null
    undefined""".split()
)
_ENV_REFERENCE = re.compile(
    r"\$\{?\w+|%\(\w+\)s|\{\{.*\}\}|os\.environ|os\.getenv|getenv|process\.env|ENV\[|environ\b|secrets\.\w+"
)


def scan_line(text: str, path: str = "") -> list[str]:
    """The kinds of secret found in one added line (each kind once), never the values."""
    kinds: list[str] = []
    for kind, rx in _TOKEN_FORMATS:
        if kind not in kinds and any(not is_placeholder(m.group(0)) for m in rx.finditer(text)):
            kinds.append(kind)
    if not kinds:  # a known format already names the problem; an assignment would repeat it
        assigned = _assignment_kind(text, _is_config(path))
        if assigned:
            kinds.append(assigned)
    return kinds


def redact_line(text: str) -> str:
    """``text`` with every credential :func:`scan_line` would report replaced by ``[REDACTED:kind]``.

    Assignments are judged as in a config file (a bare value counts): redaction errs on hiding.
    """
    def token(kind: str) -> Callable[[re.Match[str]], str]:
        return lambda m: m.group(0) if is_placeholder(m.group(0)) else f"[REDACTED:{kind}]"

    for kind, rx in _TOKEN_FORMATS:
        text = rx.sub(token(kind), text)

    def assignment(m: re.Match[str]) -> str:
        if m.group("op") != ":" and m.group("value").startswith(("=", ">")):
            return m.group(0)
        value = _value(m.group("value"), True)
        if value is None or not _looks_real(value) or value.startswith("[REDACTED"):
            return m.group(0)
        return m.group(0).replace(value, f"[REDACTED:{_word(m.group('name'))}]", 1)

    return "\n".join(_ASSIGNMENT.sub(assignment, line) for line in text.split("\n"))


def _assignment_kind(text: str, config: bool) -> str | None:
    for m in _ASSIGNMENT.finditer(text):
        if m.group("op") != ":" and m.group("value").startswith(("=", ">")):
            continue  # "==", "=>" read as a comparison or an arrow, not an assignment
        value = _value(m.group("value"), config)
        if value is None:
            continue
        if _looks_real(value):
            return f"hardcoded {_word(m.group('name'))}"
    return None


def _value(raw: str, config: bool) -> str | None:
    """The literal assigned, or None when it is an expression (a call, a variable, a template)."""
    raw = raw.strip()
    if _FSTRING.match(raw):
        return None  # an f-string builds its value from variables
    quoted = _QUOTED.match(raw)
    if quoted:
        return quoted.group("body")
    if not config:
        return None  # unquoted in code: a name or an expression, not a literal
    bare = _BARE.match(raw)
    if bare is None or "(" in bare.group(0):
        return None
    return bare.group(0)


def _looks_real(value: str) -> bool:
    if len(value) < 8 or any(ch.isspace() for ch in value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if _ENV_REFERENCE.search(value) or value.startswith(("<", "$", "%", "{", "!", "[")):
        return False
    if re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", value):
        return False  # an env var's name ("GITHUB_TOKEN"), not its value
    if re.fullmatch(r"[\w]+\(.*", value):
        return False  # a call
    return not is_placeholder(value)


def is_placeholder(token: str) -> bool:
    """Filler rather than a key: "sk-xxxxxxxx...", "AKIAIOSFODNN7EXAMPLE", one character repeated."""
    lowered = token.lower()
    if "example" in lowered or "xxxx" in lowered or "0000000" in lowered or "****" in lowered:
        return True
    body = re.sub(r"[^A-Za-z0-9]", "", token)
    return len(set(body)) <= 3


_LABELS = (
    ("clientsecret", "client secret"),
    ("privatekey", "private key"),
    ("accesskeyid", "access key"),
    ("accesskey", "access key"),
    ("apikey", "API key"),
    ("secretkey", "secret"),
    ("secret", "secret"),
    ("passphrase", "password"),
    ("password", "password"),
    ("passwd", "password"),
    ("pwd", "password"),
    ("token", "token"),
)


def _word(name: str) -> str:
    """A label for the assigned name, from the secret word it ends with ("DB_PASSWORD": "password")."""
    squashed = re.sub(r"[_\-.]", "", name.lower()).removesuffix("s")
    return next((label for suffix, label in _LABELS if squashed.endswith(suffix)), "secret")


def _is_config(path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return name.startswith(".env") or name.endswith(_CONFIG_SUFFIXES) or "." not in name
