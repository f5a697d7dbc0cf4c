"""ConFETTI logs: ``data/BFCL_v2_conversationsclean.json`` read into Conversation records
(``ingest confetti``, and the ``confetti`` format of ``ingest transcripts`` and ``explain``).

The file is BFCL-style JSON Lines. Each line is one turn-level *prefix* of a dialog:
``id`` (``conversationsclean_N``), ``dialog_id`` (``<uuid>_<k>``, k the turn), ``question``
(the messages so far, each with ``role``, ``content`` and ``content_type``) and
``function`` (the tool schemas). A dialog is rebuilt from its longest prefix; every shorter
prefix must agree with it. Execution results are not in the record, so tool calls have no
tool turns unless the line holds them.

No copy of the upstream file exists where this was written: the adapter accepts exactly
the shapes below and fails, naming the line, on anything else.

- ``question``: a list of messages, or BFCL's list of lists of messages (flattened).
- ``content_type`` ``text`` (or absent): a plain message.
- ``content_type`` one of :data:`CALL_TYPES` on an assistant message: tool calls, given as
  JSON (``{"name", "arguments"}`` or a list of them) or as Python call syntax
  (``get_weather(city="Paris")`` or a list of such calls).
- ``content_type`` one of :data:`RESULT_TYPES`: a tool result answering the oldest
  unanswered call of the previous call turn.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterator

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.io import JSONError, ascii_int, format_validation_error, iter_json_lines, loads
from mtcabench.model import Conversation, Role, ToolCall, Turn, conversation_metadata
from mtcabench.transcripts._registry import NO, SURE, LogFormat, register_format
from mtcabench.transcripts._source import Source

SOURCE = "confetti"
TEXT_TYPES = {"text", None}
CALL_TYPES = {"function_call", "tool_call", "api_call", "action"}
RESULT_TYPES = {"function_output", "tool_output", "tool_result", "observation"}


@dataclass
class _Dialog:
    uuid: str
    first_line: int
    prefixes: list[tuple[int, int, list[dict], dict]] = field(default_factory=list)
    # (k, line number, messages, the line object)


def read_confetti(path: str | Path, *, domain: str | None = None) -> Iterator[Conversation]:
    """Yield one Conversation per dialog of a ConFETTI BFCL-style JSON Lines file."""
    path = Path(path)
    dialogs: dict[str, _Dialog] = {}
    for lineno, obj in iter_json_lines(path):
        uuid, k = _split_dialog_id(path, lineno, obj)
        messages = _messages(path, lineno, obj)
        dialog = dialogs.setdefault(uuid, _Dialog(uuid, lineno))
        dialog.prefixes.append((k, lineno, messages, obj))
    if not dialogs:
        raise InputError(f"{path}: no records; expected ConFETTI BFCL-style JSON Lines")
    for dialog in sorted(dialogs.values(), key=lambda d: d.first_line):
        yield _rebuild(path, dialog, domain)


def _split_dialog_id(path: Path, lineno: int, obj: dict) -> tuple[str, int]:
    for key in ("id", "dialog_id", "question"):
        if key not in obj:
            raise InputError.at(path, f"unknown record shape: no {key!r} field (expected id, "
                                "dialog_id, question, function)", line=lineno)
    dialog_id = obj["dialog_id"]
    uuid, sep, k = str(dialog_id).rpartition("_")
    if not sep or not uuid or ascii_int(k) is None:
        raise InputError.at(path, f"dialog_id {dialog_id!r} is not <uuid>_<turn>", line=lineno,
                            record=str(obj["id"]))
    return uuid, ascii_int(k)


def _messages(path: Path, lineno: int, obj: dict) -> list[dict]:
    q = obj["question"]
    if not isinstance(q, list) or not q:
        raise InputError.at(path, "'question' must be a non-empty list of messages",
                            line=lineno, record=str(obj["id"]))
    if all(isinstance(x, list) for x in q):  # BFCL nests messages per turn
        q = [m for turn in q for m in turn]
    for j, m in enumerate(q):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise InputError.at(path, f"question[{j}] is not a message with role and content",
                                line=lineno, record=str(obj["id"]))
    return q


def _rebuild(path: Path, dialog: _Dialog, domain: str | None) -> Conversation:
    dialog.prefixes.sort(key=lambda p: (len(p[2]), p[0]))
    k, lineno, longest, obj = dialog.prefixes[-1]
    for _, other_line, msgs, _ in dialog.prefixes[:-1]:
        if [_key(m) for m in msgs] != [_key(m) for m in longest[: len(msgs)]]:
            raise InputError.at(path, f"prefix disagrees with the longest prefix of dialog "
                                f"{dialog.uuid} (line {lineno})", line=other_line,
                                record=dialog.uuid)
    turns = _turns(path, lineno, dialog.uuid, longest)
    cid = f"{SOURCE}/{dialog.uuid}"
    try:
        return Conversation(
            id=cid,
            source=SOURCE,
            domain=domain or str(obj.get("category") or obj.get("domain") or "unknown"),
            task_id=dialog.uuid,
            turns=turns,
            metadata=conversation_metadata(
                dialog_id=obj["dialog_id"],
                record_ids=[p[3]["id"] for p in dialog.prefixes],
                function=obj.get("function"),
            ),
        )
    except ValidationError as exc:
        raise InputError.at(path, format_validation_error(exc), line=lineno, record=cid) from None


def _key(m: dict) -> tuple:
    return (m.get("role"), json.dumps(m.get("content"), sort_keys=True), m.get("content_type"))


def _turns(path: Path, lineno: int, uuid: str, messages: list[dict]) -> list[Turn]:
    turns: list[Turn] = []
    pending: list[str] = []  # calls of the latest call turn not yet answered
    for j, m in enumerate(messages):
        role, ctype, content = m.get("role"), m.get("content_type"), m.get("content")
        where = f"question[{j}] (role {role!r}, content_type {ctype!r})"
        if role not in {r.value for r in Role}:
            raise InputError.at(path, f"{where}: unknown role", line=lineno, record=uuid)
        if ctype in TEXT_TYPES and role != "tool":
            if not isinstance(content, str):
                raise InputError.at(path, f"{where}: text content is {type(content).__name__}",
                                    line=lineno, record=uuid)
            turns.append(Turn(index=len(turns), role=Role(role), content=content))
        elif ctype in CALL_TYPES and role == "assistant":
            calls = [
                ToolCall(id=f"{uuid}-call-{len(turns)}-{n}", name=name, arguments=args)
                for n, (name, args) in enumerate(_parse_calls(path, lineno, uuid, where, content))
            ]
            pending = [c.id for c in calls]
            turns.append(Turn(index=len(turns), role=Role.ASSISTANT, tool_calls=calls))
        elif ctype in RESULT_TYPES or role == "tool":
            if not pending:
                raise InputError.at(path, f"{where}: a tool result with no unanswered call before "
                                    "it", line=lineno, record=uuid)
            text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
            turns.append(Turn(index=len(turns), role=Role.TOOL, content=text,
                              tool_call_id=pending.pop(0)))
        else:
            raise InputError.at(path, f"{where}: unknown message shape; the ConFETTI adapter "
                                f"knows content_type text, {sorted(CALL_TYPES)} (assistant) and "
                                f"{sorted(RESULT_TYPES)}", line=lineno, record=uuid)
    return turns


def _parse_calls(path: Path, lineno: int, uuid: str, where: str, content: Any) -> list[tuple]:
    """Tool calls from JSON objects or Python call syntax, as (name, arguments) pairs."""
    def fail(why: str) -> InputError:
        return InputError.at(path, f"{where}: cannot read tool calls ({why})", line=lineno,
                             record=uuid)

    value = content
    if isinstance(content, str):
        try:
            value = loads(content)
        except JSONError as exc:
            if "nested" in exc.reason:
                raise fail(exc.reason) from None
            return _parse_python_calls(content, fail)
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and "name" in item:
            args = item.get("arguments", item.get("parameters", {}))
            if isinstance(args, str):
                try:
                    args = loads(args)
                except JSONError as exc:
                    raise fail(f"arguments of {item['name']} are not JSON: {exc.reason}") from None
            if not isinstance(args, dict):
                raise fail(f"arguments of {item['name']} are not an object")
            out.append((str(item["name"]), args))
        elif isinstance(item, dict) and len(item) == 1:  # BFCL answer style {"fn": {...}}
            (name, args), = item.items()
            if not isinstance(args, dict):
                raise fail(f"arguments of {name} are not an object")
            out.append((str(name), args))
        else:
            raise fail(f"unexpected item {str(item)[:60]!r}")
    if not out:
        raise fail("no call found")
    return out


def _parse_python_calls(text: str, fail) -> list[tuple]:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        # ValueError: a NUL byte; RecursionError/MemoryError: nesting the parser gives up on.
        raise fail("neither JSON nor Python call syntax") from None
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    out = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            raise fail("expected name(keyword=value, ...) calls")
        name = ast.unparse(node.func)
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            raise fail(f"arguments of {name} are not literals") from None
        out.append((name, args))
    if not out:
        raise fail("no call found")
    return out


# --------------------------------------------------------------------------- the format


def _sniff(source: Source) -> int:
    """A file of BFCL-style records, each a dialog prefix with ``dialog_id`` and
    ``question`` (one record alone, or JSON Lines: the reader reads it line by line)."""
    value = source.value
    records = [value] if isinstance(value, dict) else value if source.json_lines else None
    if source.path is not None and records and all(
            isinstance(r, dict) and "dialog_id" in r and "question" in r for r in records):
        return SURE
    return NO


def _read(source: Source) -> list[Conversation]:
    if source.path is None:
        raise InputError(f"{source.label} (ConFETTI): read from a file of BFCL-style JSON "
                         "Lines; write the records to a file first")
    # Read again line by line, so that errors name the file's line numbers.
    return list(read_confetti(source.path))


register_format(LogFormat(
    "confetti", "ConFETTI", "BFCL-style JSON Lines of dialog prefixes {id, dialog_id, "
    "question, function}", _sniff, _read, order=65))
