"""``SdkStreamParser``, the parser of the Claude Code and Qwen Code adapters.

Claude Code (``--output-format stream-json --verbose``) and
Qwen Code (``--output-format stream-json``) print the same "Claude Agent SDK" stream:

=========== ======================================================================================
type        what the parser takes from it
=========== ======================================================================================
system      ``init``: session_id. ``api_retry`` (Claude): a retryable error event.
            ``permission_denied`` (Claude): the tool_use_id whose result is a refusal.
assistant   message.id (one step per distinct id), message.content (``text``, ``tool_use``) and
            message.usage. Claude repeats a message once per content block with the same id and
            usage: each id's usage is counted once (later repeats only add what grew).
user        message.content ``tool_result`` blocks (``is_error``), Claude's ``tool_result_meta``
            (``permission_decision``) for refusals.
result      subtype, is_error, result (the final answer), usage (the run's totals: when present they
            replace the per-message sum, through one correcting usage event), permission_denials,
            Claude's api_error_status.
=========== ======================================================================================

``DENIED_RE`` (refusals in the words of Claude Code, Qwen Code and Gemini CLI) is shared with the
Gemini CLI parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bosun.workers.base import (
    ErrorClass,
    Usage,
    as_count,
    as_dict,
    ev_error,
    ev_message,
    ev_session,
    ev_tool_call,
    ev_tool_result,
    ev_usage,
)
from bosun.workers.classify import classify_http, parse_retry_after, status_in_text
from bosun.workers.cli_base import note_error
from bosun.workers.cli_worker import usage_copy
from bosun.workers.jsonlines import JsonLinesParser

# Tool results that are refusals rather than failures, in the words of Claude Code, Qwen Code and
# Gemini CLI.
DENIED_RE = re.compile(
    r"permission to use .{0,80} has been denied|denied by (permission rules|policy)|running in don't ask mode"
    r"|cannot (write|modify) .{0,200} (while )?in plan mode|requires approval|permission_denied|policy_violation"
    r"|so \w+ was not run|access denied: plan path",
    re.I,
)
_REFUSAL_KINDS = {"permission-rule", "user-rejected", "automode-unavailable", "hook-rejected"}


# ---------------------------------------------------------------------------------------------
# the Claude-SDK-like stream


def sdk_usage(raw: dict[str, Any] | None, input_includes_cache: bool) -> Usage:
    """Usage from an SDK-stream ``usage`` object.

    Anthropic's ``input_tokens`` leaves out cache reads and cache writes (Claude Code):
    input = input_tokens + cache_read + cache_creation. Qwen Code reports the OpenAI prompt count, cache
    reads included (``input_includes_cache``). Reasoning ("thinking") tokens are part of output_tokens.
    """
    raw = raw or {}
    inp = as_count(raw.get("input_tokens"))
    read = as_count(raw.get("cache_read_input_tokens"))
    write = as_count(raw.get("cache_creation_input_tokens"))
    if not input_includes_cache:
        inp += read + write
    details = raw.get("output_tokens_details") or {}
    reasoning = as_count(details.get("thinking_tokens") or details.get("reasoning_tokens") or raw.get("thoughts_tokens"))
    out = as_count(raw.get("output_tokens"))
    return Usage(
        input_tokens=inp,
        cached_input_tokens=min(read, inp),
        output_tokens=out,
        reasoning_tokens=min(reasoning, out),
    )


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens - b.input_tokens,
        cached_input_tokens=a.cached_input_tokens - b.cached_input_tokens,
        output_tokens=a.output_tokens - b.output_tokens,
        reasoning_tokens=a.reasoning_tokens - b.reasoning_tokens,
    )


def _is_zero(u: Usage) -> bool:
    return not (u.input_tokens or u.cached_input_tokens or u.output_tokens or u.reasoning_tokens)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text" or "text" in block:
                    parts.append(str(block.get("text") or ""))
            else:
                parts.append(str(block))
        return "\n".join(p for p in parts if p)
    if content is None:
        return ""
    return json.dumps(content, default=str)


_API_ERROR_RE = re.compile(r"^\s*\[?API Error\b", re.I)


def _is_api_error_text(content: Any) -> bool:
    """Qwen Code reports a failed request as an assistant text "[API Error: 401 ...]"."""
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return False
    block = content[0]
    return block.get("type") == "text" and bool(_API_ERROR_RE.match(str(block.get("text") or "")))


class SdkStreamParser(JsonLinesParser):
    """Maps Claude Code / Qwen Code stream-json lines to normalized events (see the module docstring)."""

    def __init__(
        self, cli: str = "claude", input_includes_cache: bool = False, baseline: Usage | None = None
    ) -> None:
        self.cli = cli
        self.input_includes_cache = input_includes_cache
        # Qwen Code's result usage covers the whole session, earlier (resumed) runs included: what bosun
        # counted for the session before is the baseline subtracted from it. ``session_total`` is the
        # new total to save for the next resume.
        self.baseline = baseline
        self.session_total: Usage | None = None
        super().__init__()
        self.tool_names: dict[str, str] = {}
        self.msg_usage: dict[str, Usage] = {}
        self.emitted = Usage()
        self.denied_ids: set[str] = set()
        self.result_ids: set[str] = set()
        self.last_text: str | None = None
        self.retries: list[str] = []
        self.saw_result = False

    # -- entry point -----------------------------------------------------------------------------
    def on_object(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        sid = obj.get("session_id")
        if sid and self.state.session_id is None:
            self.state.session_id = str(sid)
            out.append(ev_session(str(sid)))
        kind = obj.get("type")
        if kind == "system":
            out.extend(self._system(obj))
        elif kind == "assistant":
            out.extend(self._assistant(obj))
        elif kind == "user":
            out.extend(self._user(obj))
        elif kind == "result":
            out.extend(self._result(obj))
        return out

    # -- event kinds -----------------------------------------------------------------------------
    def _system(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        sub = obj.get("subtype")
        if sub == "permission_denied" and obj.get("tool_use_id"):
            self.denied_ids.add(str(obj["tool_use_id"]))
        elif sub == "api_retry":
            status = obj.get("error_status")
            status = int(status) if isinstance(status, int | float) else None
            what = str(obj.get("error") or "error")
            msg = (
                f"{self.cli} retrying the model request (attempt {obj.get('attempt')}/{obj.get('max_retries')}, "
                f"HTTP {status or '?'}: {what})"
            )
            self.retries.append(msg)
            delay = obj.get("retry_delay_ms")
            return [
                ev_error(
                    msg,
                    classify_http(status, what.replace("_", " ")),
                    retryable=True,
                    retry_after_s=round(float(delay) / 1000, 3) if isinstance(delay, int | float) else None,
                )
            ]
        return []

    def _assistant(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        msg = as_dict(obj.get("message"))
        if obj.get("parent_tool_use_id"):
            sub_agent = True  # a subagent's message: its usage is in the result totals, its tools are its own
        else:
            sub_agent = False
        out: list[dict[str, Any]] = []
        mid = str(msg.get("id") or obj.get("uuid") or f"anon-{len(self.msg_usage)}")
        # Claude Code reports a failed request as a "<synthetic>" assistant message: not a model step,
        # and its text is the error (the result event turns it into an error event).
        synthetic = msg.get("model") == "<synthetic>" or _is_api_error_text(msg.get("content"))
        if mid not in self.msg_usage and not sub_agent and not synthetic:
            self.state.steps += 1
        usage = sdk_usage(msg.get("usage"), self.input_includes_cache) if msg.get("usage") else None
        if usage is not None:
            prev = self.msg_usage.get(mid)
            if prev is None:
                self.msg_usage[mid] = usage
                out.append(self._add_usage(usage))
            else:
                grown = Usage(
                    input_tokens=max(0, usage.input_tokens - prev.input_tokens),
                    cached_input_tokens=max(0, usage.cached_input_tokens - prev.cached_input_tokens),
                    output_tokens=max(0, usage.output_tokens - prev.output_tokens),
                    reasoning_tokens=max(0, usage.reasoning_tokens - prev.reasoning_tokens),
                )
                if not _is_zero(grown):
                    prev.add(grown)
                    out.append(self._add_usage(grown))
        elif mid not in self.msg_usage:
            self.msg_usage[mid] = Usage()
        for block in msg.get("content") or []:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text":
                text = str(block.get("text") or "")
                if text.strip():
                    if not sub_agent:
                        self.last_text = text
                    if not synthetic:
                        out.append(ev_message(text))
            elif btype == "tool_use":
                call_id = str(block.get("id") or "")
                name = str(block.get("name") or "?")
                self.tool_names[call_id] = name
                out.append(ev_tool_call(name, block.get("input"), call_id or None))
        return out

    def _user(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        msg = as_dict(obj.get("message"))
        meta = {
            str(m.get("id")): m for m in obj.get("tool_result_meta") or [] if isinstance(m, dict) and m.get("id")
        }
        out: list[dict[str, Any]] = []
        content = msg.get("content")
        if not isinstance(content, list):
            return out
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            call_id = str(block.get("tool_use_id") or "")
            text = _content_text(block.get("content"))
            is_error = bool(block.get("is_error"))
            m = meta.get(call_id) or {}
            decision = (m.get("permission_decision") or {}).get("decision")
            denied = (
                call_id in self.denied_ids
                or (decision == "reject" and m.get("non_execution_kind") in _REFUSAL_KINDS)
                or (decision == "reject" and not m.get("non_execution_kind"))
                or (is_error and bool(DENIED_RE.search(text[:600])))
            )
            self.result_ids.add(call_id)
            out.append(ev_tool_result(self.tool_names.get(call_id), not (is_error or denied), text, call_id or None, denied))
        return out

    def _result(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        self.saw_result = True
        out: list[dict[str, Any]] = []
        for d in obj.get("permission_denials") or []:
            if not isinstance(d, dict):
                continue
            call_id = str(d.get("tool_use_id") or "")
            if call_id and call_id in self.result_ids:
                continue
            self.result_ids.add(call_id)
            out.append(ev_tool_result(d.get("tool_name"), False, d.get("tool_input"), call_id or None, denied=True))
        if isinstance(obj.get("usage"), dict):
            total = sdk_usage(obj["usage"], self.input_includes_cache)
            self.session_total = usage_copy(total)
            if self.baseline is not None:
                total = _minus(total, self.baseline)
            cost = obj.get("total_cost_usd")
            delta = _minus(total, self.emitted)
            if isinstance(cost, int | float) and cost > 0:
                delta.cost_usd = float(cost)
            if not _is_zero(delta) or delta.cost_usd:
                out.append(self._add_usage(delta))
        is_error = bool(obj.get("is_error")) or str(obj.get("subtype") or "").startswith("error")
        result_text = obj.get("result") if isinstance(obj.get("result"), str) else None
        if not is_error:
            self.state.finished_ok = True
            self.state.final_text = result_text if result_text is not None else self.last_text
            return out
        self.state.finished_ok = False
        status = obj.get("api_error_status")
        status = int(status) if isinstance(status, int | float) else None
        errors = [str(e) for e in obj.get("errors") or [] if e]
        text = result_text or "; ".join(errors) or self.last_text or str(obj.get("subtype") or "error")
        if status is None:
            status = status_in_text(text)
        subtype = str(obj.get("subtype") or "")
        if subtype == "error_max_turns":
            cls = ErrorClass.permanent
            text = f"{self.cli} stopped at its turn limit: {text}"
        elif subtype == "error_max_budget_usd":
            cls = ErrorClass.quota
        else:
            cls = classify_http(status, text)
        shown = text if status is None or str(status) in text else f"{text} (HTTP {status})"
        ev = note_error(self.state, shown, cls)
        retry = parse_retry_after(text)
        if retry:
            self.state.retry_after_s = retry
            ev["retry_after_s"] = retry
        out.append(ev)
        return out

    # -- helpers ---------------------------------------------------------------------------------
    def _add_usage(self, delta: Usage) -> dict[str, Any]:
        self.emitted.add(delta)
        self.state.usage.add(delta)
        return ev_usage(delta)

    def finish(self) -> list[dict[str, Any]]:
        """After the process ended: the final text when no result event came (killed, crashed)."""
        if self.state.final_text is None and not self.saw_result:
            self.state.final_text = self.last_text
        return []
