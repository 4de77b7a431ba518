"""Recognising credentials in text: known key formats and assignments of real-looking values.

Used by the SECRET_DETECTED gate (:mod:`bosun.gates.secrets`, which also joins split literals) and by
:mod:`bosun.core.redaction`, which masks what it finds in everything bosun writes or prints. A leaf module:
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
_TOKEN_SOURCES: tuple[tuple[str, str], ...] = (
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
# Every token format starts with one of these literals, and every assignment holds one of the secret
# words (matched case-insensitively; casefold() maps each character the regex's IGNORECASE accepts
# onto these letters). Text holding none of them cannot match, so most text is passed over without
# compiling a pattern: compiling them all costs every read-only verb's start-up ~3 ms.
_TOKEN_LITERALS = ("-----BEGIN ", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                   "sk-", "xox", "AIza", "k_live_", "eyJ")
_WORD_LITERALS = ("key", "secret", "token", "passw", "pwd", "passphrase")

# A name ending in a secret word ("db_password", "GITHUB_TOKEN", "x-api-key"), then an optional
# closing quote (JSON/dict keys), an optional type annotation, and an assignment operator.
_SECRET_WORDS = (
    r"api[_\-]?key|secret(?:[_\-]?key)?|(?:access|auth|refresh|bearer)?[_\-]?token|passw(?:or)?d|pwd"
    r"|passphrase|private[_\-]?key|access[_\-]?key(?:[_\-]?id)?|client[_\-]?secret"
)
_ASSIGNMENT_SOURCE = (
    rf"""(?ix)
    (?<![\w.\-])(?P<name>[\w.\-]*?(?:{_SECRET_WORDS})s?)(?![\w])
    ["']?\s*
    (?::\s*[a-z_][\w\[\]., |]*?\s*(?==))?     # a type annotation: "password: str = ..."
    (?P<op>:=|=>|=|:)\s*
    (?P<value>.*)
    """
)

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
_ENV_REFERENCE_SOURCE = (
    r"\$\{?\w+|%\(\w+\)s|\{\{.*\}\}|os\.environ|os\.getenv|getenv|process\.env|ENV\[|environ\b|secrets\.\w+"
)


class _Patterns:
    """The compiled patterns, built on first use (see ``_TOKEN_LITERALS``)."""

    def __init__(self) -> None:
        self.token_formats = tuple((kind, re.compile(rx)) for kind, rx in _TOKEN_SOURCES)
        self.assignment = re.compile(_ASSIGNMENT_SOURCE)
        self.quoted = re.compile(r"""^(?:[rRbBuU]{1,2})?(?P<q>["'`])(?P<body>.*?)(?P=q)""")
        self.fstring = re.compile(r"""^[fF][rR]?["']""")
        self.bare = re.compile(r"""^[^\s,;#'"`]+""")
        self.env_reference = re.compile(_ENV_REFERENCE_SOURCE)


_compiled: _Patterns | None = None


def _rx() -> _Patterns:
    global _compiled
    if _compiled is None:
        _compiled = _Patterns()
    return _compiled


_near_assignment: re.Pattern[str] | None = None


def may_hold_secret(text: str) -> bool:
    """False when ``text`` cannot hold anything :func:`scan_line` reports (a cheap first look)."""
    global _near_assignment
    if any(lit in text for lit in _TOKEN_LITERALS):
        return True
    folded = text.casefold()
    if not any(word in folded for word in _WORD_LITERALS):
        return False
    if _near_assignment is None:
        # The tail of the assignment pattern alone (a secret word, then an operator), without the
        # rest: a fifth of the cost of compiling them all, and bosun's own texts ("SECRET_DETECTED",
        # "tokens saved") stop here.
        _near_assignment = re.compile(rf"""(?i)(?:{_SECRET_WORDS})s?["']?\s*[:=]""")
    return _near_assignment.search(text) is not None


def scan_line(text: str, path: str = "") -> list[str]:
    """The kinds of secret found in one added line (each kind once), never the values."""
    kinds: list[str] = []
    if not may_hold_secret(text):
        return kinds
    for kind, rx in _rx().token_formats:
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
    if not may_hold_secret(text):
        return text

    def token(kind: str) -> Callable[[re.Match[str]], str]:
        return lambda m: m.group(0) if is_placeholder(m.group(0)) else f"[REDACTED:{kind}]"

    for kind, rx in _rx().token_formats:
        text = rx.sub(token(kind), text)

    def assignment(m: re.Match[str]) -> str:
        if m.group("op") != ":" and m.group("value").startswith(("=", ">")):
            return m.group(0)
        value = _value(m.group("value"), True)
        if value is None or not _looks_real(value) or value.startswith("[REDACTED"):
            return m.group(0)
        return m.group(0).replace(value, f"[REDACTED:{_word(m.group('name'))}]", 1)

    return "\n".join(_rx().assignment.sub(assignment, line) for line in text.split("\n"))


def _assignment_kind(text: str, config: bool) -> str | None:
    for m in _rx().assignment.finditer(text):
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
    if _rx().fstring.match(raw):
        return None  # an f-string builds its value from variables
    quoted = _rx().quoted.match(raw)
    if quoted:
        return quoted.group("body")
    if not config:
        return None  # unquoted in code: a name or an expression, not a literal
    bare = _rx().bare.match(raw)
    if bare is None or "(" in bare.group(0):
        return None
    return bare.group(0)


def _looks_real(value: str) -> bool:
    if len(value) < 8 or any(ch.isspace() for ch in value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if _rx().env_reference.search(value) or value.startswith(("<", "$", "%", "{", "!", "[")):
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
