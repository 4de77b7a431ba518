"""Every flag docs/cli.md names exists in the parser of the verb it is named for.

A section's heading names its verbs (``bosun plan run``, then ``status``, ``continue``: plan's too); a
flag in a code span that names a verb (```bosun approve RUN --yes```, ```show --events```) belongs to
that verb, any other flag of the section to one of the section's verbs."""

from __future__ import annotations

import argparse
import re

from tests.conftest import ROOT

DOC = (ROOT / "docs" / "cli.md").read_text()
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _resolve(words: list[str], root: argparse.ArgumentParser) -> tuple[list[str], argparse.ArgumentParser] | None:
    """The longest verb path ``words`` start with, and its parser (None: no verb)."""
    path, parser = [], root
    for word in words:
        sub = _subparsers(parser).get(word)
        if sub is None:
            break
        path.append(word)
        parser = sub
    return (path, parser) if path else None


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for action in parser._actions for opt in action.option_strings}


def _sections() -> list[tuple[str, str]]:
    verbs = DOC.split("\n## Verbs\n", 1)[1].split("\n## ", 1)[0]
    return [(part.partition("\n")[0], part.partition("\n")[2]) for part in re.split(r"^### ", verbs, flags=re.M)[1:]]


def _section_verbs(heading: str, root: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """``bosun plan run``, ``status`` -> plan run, plan status: the siblings share the first's parent."""
    spans = re.findall(r"`([^`]+)`", heading)
    first = _resolve(spans[0].split()[1:], root)
    assert first is not None, heading
    path, parser = first
    out = [(" ".join(path), parser)]
    parent = _resolve(path[:-1], root) if len(path) > 1 else None
    siblings = _subparsers(parent[1] if parent else root)
    for span in spans[1:]:
        name = span.split()[0]
        if name in siblings:
            out.append((" ".join([*path[:-1], name]), siblings[name]))
    return out


def test_every_flag_the_cli_page_names_exists():
    from bosun.cli.main import build_parser

    root = build_parser()
    missing = []
    for heading, body in _sections():
        own = _section_verbs(heading, root)
        text = f"`{heading.split('`', 2)[1]}`\n{body}"
        for span in re.findall(r"`([^`]+)`", text, flags=re.S):
            words = span.split()
            # A span that names a verb (`delegate --auto-approve` in another verb's section) is that verb's.
            named = _resolve(words[1:] if words[:1] == ["bosun"] else words, root)
            for flag in FLAG.findall(span):
                where = [(" ".join(named[0]), named[1])] if named is not None else own
                if not any(flag in _flags(parser) for _, parser in where):
                    missing.append(f"{flag} ({' or '.join(name for name, _ in where)}; section {heading})")
        prose = re.sub(r"`[^`]+`", "", body)
        for flag in FLAG.findall(prose):
            if not any(flag in _flags(parser) for _, parser in own):
                missing.append(f"{flag} ({' or '.join(name for name, _ in own)}; section {heading})")
    assert not missing, "docs/cli.md names flags its verbs do not have:\n" + "\n".join(missing)


def test_the_check_finds_a_flag_a_verb_does_not_have():
    from bosun.cli.main import build_parser

    root = build_parser()
    named = _resolve(["savings"], root)
    assert named is not None and "--all" in _flags(named[1]) and "--all-repos" not in _flags(named[1])


def _listed(sentence: str, root: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """The verbs a sentence's code spans name: `plan check`, `plan run|continue|resume`."""
    out = []
    for span in re.findall(r"`([^`]+)`", sentence):
        *head, last = span.split()
        for alternative in last.split("|"):
            named = _resolve([*head, alternative], root)
            if named is not None and len(named[0]) == len(head) + 1:
                out.append((" ".join(named[0]), named[1]))
    return out


def test_the_shared_flags_are_on_every_verb_the_page_lists():
    from bosun.cli.main import build_parser

    root = build_parser()
    intro = DOC.split("\n## ", 1)[0].replace("\n", " ")
    for flag in ("--repo", "--quiet"):
        sentence = re.search(rf"`{flag}[^`]*` on every verb[^(]*\(([^)]*)\)", intro)
        assert sentence, flag
        verbs = _listed(sentence.group(1), root)
        assert len(verbs) >= 3, (flag, verbs)
        assert [name for name, parser in verbs if flag not in _flags(parser)] == [], flag
    # "Every verb accepts --json", but for the ones the page names as serving, not printing.
    assert "Every verb accepts `--json`" in intro
    exceptions = re.search(r"Every verb accepts `--json` \(([^)]*)\)", intro)
    assert exceptions, "the page says which verbs print no JSON"
    spared = {name for name, _ in _listed(exceptions.group(1), root)}
    without = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        subs = _subparsers(parser)
        if not subs:
            if "--json" not in _flags(parser) and " ".join(path) not in spared:
                without.append(" ".join(path))
            return
        for name, sub in subs.items():
            walk(sub, [*path, name])

    walk(root, [])
    assert without == [], without
