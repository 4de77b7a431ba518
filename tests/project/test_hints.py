"""Every hint bosun gives reads as written: no clause said twice, no placeholder left unfilled, and no
hint that only repeats its message.

The hints are read from the source: every error raised (``BosunError`` and its subclasses, ``Problem``),
every ``hint=`` and every ``"hint": ...`` of an error object. A hint built at run time is rendered with
its literal parts as written and each interpolated value as one opaque word, both arms of an ``x or
"fallback"`` and of an ``a if c else b``; the errors whose classes supply a hint are constructed."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src" / "bosun"
VALUE = "\u2039value\u203a"  # an interpolated value: one opaque word


@dataclass(frozen=True)
class Said:
    where: str
    hint: str
    message: str | None  # None: built at run time from something else


def _error_classes(trees: dict[Path, ast.Module]) -> set[str]:
    names, grew = {"BosunError"}, True
    while grew:
        grew = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names and any(
                        getattr(b, "id", getattr(b, "attr", None)) in names for b in node.bases):
                    names.add(node.name)
                    grew = True
    return names


def _strings(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Names bound to a literal string anywhere in the module (a hint kept in a variable)."""
    out: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if isinstance(node.value, ast.Constant | ast.JoinedStr | ast.BinOp):
                out.setdefault(node.targets[0].id, []).append(node.value)
    return out


def render(node: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> list[str]:
    """Every text ``node`` can be, literal parts as written, values as VALUE."""
    if depth > 4:
        return [VALUE]
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else [VALUE]
    if isinstance(node, ast.JoinedStr):
        texts = [""]
        for part in node.values:
            pieces = render(part, names, depth + 1) if isinstance(part, ast.Constant) else _value(part)
            texts = [t + p for t in texts for p in pieces]
        return texts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [a + b for a in render(node.left, names, depth + 1) for b in render(node.right, names, depth + 1)]
    if isinstance(node, ast.BoolOp):
        return [t for v in node.values for t in render(v, names, depth + 1)]
    if isinstance(node, ast.IfExp):
        return render(node.body, names, depth + 1) + render(node.orelse, names, depth + 1)
    if isinstance(node, ast.Name) and node.id in names:
        return [t for v in names[node.id] for t in render(v, names, depth + 1)]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
        return [re.sub(r"\{\w*\}", VALUE, t) for t in render(node.func.value, names, depth + 1)]
    return [VALUE]


def _value(part: ast.expr) -> list[str]:
    """An interpolated value, and the text of its fallback when it is ``x.get(key, "literal")``."""
    expr = part.value if isinstance(part, ast.FormattedValue) else part
    if (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "get"
            and len(expr.args) == 2 and isinstance(expr.args[1], ast.Constant)):
        return [VALUE, str(expr.args[1].value)]
    return [VALUE]


def _call_name(func: ast.expr) -> str | None:
    return getattr(func, "id", None) or getattr(func, "attr", None)


def said() -> Iterator[Said]:
    trees = {path: ast.parse(path.read_text()) for path in sorted(SRC.rglob("*.py"))}
    errors = _error_classes(trees)
    for path, tree in trees.items():
        names = _strings(tree)
        rel = path.relative_to(SRC)
        for node in ast.walk(tree):
            pairs: list[tuple[ast.expr | None, ast.expr | None]] = []
            if isinstance(node, ast.Call):
                name, kw = _call_name(node.func), {k.arg: k.value for k in node.keywords}
                if name in errors or name == "Problem":
                    first = 1 if name == "Problem" else 0  # Problem(code, message, hint)
                    args = [*node.args, None, None, None]
                    pairs.append((args[first] or kw.get("message"), args[first + 1] or kw.get("hint")))
                elif "hint" in kw:
                    pairs.append((kw.get("message"), kw["hint"]))
            elif isinstance(node, ast.Dict):
                keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
                if "hint" in keys:
                    pairs.append((keys.get("message"), keys["hint"]))
            for message, hint in pairs:
                if hint is None:
                    continue
                messages = render(message, names) if message is not None else [None]
                for text in render(hint, names):
                    for msg in messages:
                        yield Said(f"{rel}:{node.lineno}", text, msg if msg != VALUE else None)


def constructed() -> Iterator[Said]:
    """The errors whose own class supplies the hint."""
    from bosun.core.errors import Problem, ProblemsFound
    from bosun.isolation.git import GitError
    from bosun.sandbox import SandboxFailed

    for err in (SandboxFailed("the kernel refused"), GitError("git failed"),
                GitError.from_failure(["status"], 128, "fatal: not a git repository", "/r"),
                ProblemsFound([Problem("A", "one", "do a"), Problem("B", "two", "do b")])):
        yield Said(type(err).__name__, err.hint, err.message)


WORD = re.compile(r"[\w\-./=\u2039\u203a]+")
SPLIT = re.compile(r"[,;:()\[\]]|\s(?:or|and|then|but)\s|\.\s")


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower().replace("`", ""))


def doubled(text: str) -> str | None:
    """The clause (two words or more) or the run of four words said twice, if any."""
    seen: set[tuple[str, ...]] = set()
    for clause in SPLIT.split(text):
        words = tuple(_words(clause))
        if len(words) >= 2 and words != (VALUE,) * len(words):
            if words in seen:
                return " ".join(words)
            seen.add(words)
    words = _words(text)
    grams = [tuple(words[i:i + 4]) for i in range(len(words) - 3)]
    for i, gram in enumerate(grams):
        if VALUE not in gram and gram in grams[i + 4:]:
            return " ".join(gram)
    return None


PLACEHOLDERS = [
    (re.compile(r"\{[A-Za-z_][\w.]*\}"), "a {name} left unformatted"),
    (re.compile(r"%[sdrif]\b|%\("), "a %-placeholder"),
    (re.compile(r"``|`\s+`"), "empty backticks"),
    (re.compile(r"(?<![\w'\"])None(?![\w'\"])"), "None"),
    (re.compile(r"(?:^|\s)\?(?:\s|$)"), "a lone ?"),
]


def unfilled(text: str) -> str | None:
    for pattern, what in PLACEHOLDERS:
        if pattern.search(text):
            return what
    return None


def _norm(text: str) -> str:
    return " ".join(w.strip(".") for w in _words(text))


def repeats(hint: str, message: str | None) -> bool:
    if message is None or not hint.strip():
        return False
    h, m = _norm(hint), _norm(message)
    return h == m or (len(h) >= 12 and h in m)


@functools.cache
def _all() -> list[Said]:
    return [*said(), *constructed()]


def test_the_source_has_many_hints() -> None:
    found = _all()
    assert len(found) > 200 and len({s.where.split(":")[0] for s in found}) > 40, len(found)


def test_no_hint_says_a_clause_twice() -> None:
    bad = [f"{s.where}: {d!r} in {s.hint!r}" for s in _all() if (d := doubled(s.hint))]
    assert not bad, "\n".join(bad)


def test_no_hint_or_message_leaves_a_placeholder_unfilled() -> None:
    bad = [f"{s.where}: {what} in {text!r}" for s in _all() for text in (s.hint, s.message or "")
           if (what := unfilled(text))]
    assert not bad, "\n".join(bad)


def test_no_hint_only_repeats_its_message() -> None:
    bad = [f"{s.where}: {s.hint!r} repeats {s.message!r}" for s in _all() if repeats(s.hint, s.message)]
    assert not bad, "\n".join(bad)


def test_the_rules_catch_what_they_are_for() -> None:
    assert doubled("cd into your repository or pass --repo (run bosun inside a git repository, or pass --repo)")
    assert doubled("run `bosun verify` first; run bosun verify first")
    assert not doubled("`bosun plan watch P` follows it; `bosun plan cancel P` stops it")
    assert unfilled("see the log at {path}") and unfilled("pass %s") and unfilled("run `` first")
    assert unfilled("the worker changed ? files") and unfilled("profile None is unknown")
    assert not unfilled('e.g. {"verdict": "approve", "findings": []}') and not unfilled("did you mean `verify`?")
    assert repeats("no such run", "No such run.") and not repeats("`bosun list` shows your runs", "no run x")
    tree = ast.parse('raise BadInput(f"no run {r}", f"run {r!r} is not " + ("there" if x else "known"))')
    hint = tree.body[0].exc.args[1]  # type: ignore[attr-defined]
    assert render(hint, {}) == [f"run {VALUE} is not there", f"run {VALUE} is not known"]
    fallback = ast.parse("f\"changed {v.get('count', '?')} files\"").body[0].value  # type: ignore[attr-defined]
    assert unfilled(render(fallback, {})[1])


def test_no_error_is_given_an_empty_hint() -> None:
    # Every hint says what to do: an error written with "" (or an arm of one that can be "") says nothing.
    bad = [f"{s.where}: {s.message!r}" for s in said() if not s.hint.strip()]
    assert not bad, "\n".join(bad)
