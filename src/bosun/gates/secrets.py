"""SECRET_DETECTED: credentials in lines the worker added.

Only added lines are scanned (from :mod:`bosun.gates.diffparse`): a secret already in the start
commit is not the worker's doing, and rescanning whole files would fail every run on such a repo.
Two kinds of finding:

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

A secret split into string literals is put back together before matching: adjacent literals
(``"AKIA" "Z7Q3..."``, also across consecutive added lines inside brackets) and literals joined by
``+`` (Python, JavaScript, Java...), ``.``/``..`` (PHP, Perl, Lua) or ``||`` (SQL) are joined, and the
joined value is scanned as if it had been written in one piece. An AWS access key id on its own is a
finding: it names the account and is half of the credential. It is also found when assembled from
literals anywhere in a file's added lines (``p = "AKIA"`` here, ``q = "Z7Q3..."`` there): the parts,
in order, spell exactly one key id from the start of one literal to the end of another.

A detail names path:line and the kind, never the value: the gate's output is logged and shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from bosun.changes import GateResult
from bosun.gates.context import GateContext, listing, plural

SECRET_DETECTED = "SECRET_DETECTED"

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


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str

    def describe(self) -> str:
        return f"{self.path}:{self.line} ({self.kind})"


def check_secrets(ctx: GateContext) -> GateResult:
    findings: list[Finding] = []
    scanned = 0
    for fdiff in ctx.diff_files:
        if fdiff.binary:
            continue
        scanned += 1
        for line_no, text in fdiff.added:
            findings += [Finding(fdiff.path, line_no, kind) for kind in scan_line(text, fdiff.path)]
        for line_no, text in joined_literals(fdiff.added):
            findings += [Finding(fdiff.path, line_no, kind) for kind in scan_line(text, fdiff.path)]
        seen = {(f.path, f.line) for f in findings if f.kind == "AWS access key id"}
        parts = [n for n in _aws_parts(fdiff.added) if (fdiff.path, n) not in seen]
        findings += [Finding(fdiff.path, n, "AWS access key id, in parts") for n in parts]
    findings = list(dict.fromkeys(findings))
    if findings:
        return GateResult(
            SECRET_DETECTED,
            False,
            f"possible secrets added (values withheld): {listing([f.describe() for f in findings])}",
        )
    return GateResult(SECRET_DETECTED, True, f"no secrets in the added lines of {plural(scanned, 'file')}")


# A string literal on one line (a JS template literal may span lines), with an optional Python prefix.
_LITERAL = re.compile(r"""(?<![\w])[rRbBuU]{0,2}(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)|`(?P<tbody>[^`]*)`""")
# What may stand between two literals that the language joins into one string.
_GLUE = re.compile(r"[\s\\]*(?:(?:\+|\.{1,2}|\|\|)[\s\\]*)?")


def joined_literals(added: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Lines rebuilt with each run of joined string literals written as one literal.

    ``added`` is (line number, text) of added lines; consecutive line numbers form one block, so a
    literal split over lines is joined too. Each result is (line of the run's first literal, the
    text before that literal on its line + the joined literal), ready for :func:`scan_line`.
    """
    out: list[tuple[int, str]] = []
    for first_line, block in _blocks(added):
        matches = list(_LITERAL.finditer(block))
        run: list[re.Match[str]] = []
        for m in [*matches, None]:
            if m is not None and run and _GLUE.fullmatch(block[run[-1].end() : m.start()]):
                run.append(m)
                continue
            if len(run) > 1:
                start = run[0].start()
                line_start = block.rfind("\n", 0, start) + 1
                joined = "".join(_body(r) for r in run)
                out.append((first_line + block.count("\n", 0, start), f'{block[line_start:start]}"{joined}"'))
            run = [m] if m is not None else []
    return out


_AWS_ID = re.compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}")


def _aws_parts(added: list[tuple[int, str]]) -> list[int]:
    """Lines where an AWS key id starts that two or more literals spell, read in order."""
    bodies: list[tuple[int, str]] = []
    for first_line, block in _blocks(added):
        bodies += [(first_line + block.count("\n", 0, m.start()), _body(m)) for m in _LITERAL.finditer(block)]
    text = "".join(body for _, body in bodies)
    starts: dict[int, int] = {}  # offset in ``text`` -> index of the literal starting there
    ends: set[int] = set()
    offset = 0
    for i, (_, body) in enumerate(bodies):
        starts.setdefault(offset, i)
        offset += len(body)
        ends.add(offset)
    found = []
    for start, i in starts.items():
        m = _AWS_ID.match(text, start)
        # Whole literals only, and more than one: a key in one literal is the line scan's finding.
        if m and m.end() in ends and len(bodies[i][1]) < len(m.group(0)) and not _is_placeholder(m.group(0)):
            found.append(bodies[i][0])
    return found


def _blocks(added: list[tuple[int, str]]) -> list[tuple[int, str]]:
    blocks: list[tuple[int, list[str]]] = []
    for line_no, text in added:
        if blocks and blocks[-1][0] + len(blocks[-1][1]) == line_no:
            blocks[-1][1].append(text)
        else:
            blocks.append((line_no, [text]))
    return [(start, "\n".join(texts)) for start, texts in blocks]


def _body(m: re.Match[str]) -> str:
    body = m.group("body")
    return m.group("tbody") if body is None else body


def scan_line(text: str, path: str = "") -> list[str]:
    """The kinds of secret found in one added line (each kind once), never the values."""
    kinds: list[str] = []
    for kind, rx in _TOKEN_FORMATS:
        if kind not in kinds and any(not _is_placeholder(m.group(0)) for m in rx.finditer(text)):
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
        return lambda m: m.group(0) if _is_placeholder(m.group(0)) else f"[REDACTED:{kind}]"

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
    return not _is_placeholder(value)


def _is_placeholder(token: str) -> bool:
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
