"""Conversations as agents log them, read into :class:`~mtcabench.model.Conversation` records.

The format layer's reader for ``mtcabench explain`` and the online :class:`Tracer` (which
feeds it one message at a time). It accepts three shapes of file:

- **OpenAI chat messages**: a JSON list of messages, an object ``{"messages": [...]}``, or
  JSON Lines with one message per line. Roles ``system`` (``developer`` is read as system),
  ``user``, ``assistant`` (with ``tool_calls``, parallel calls included) and ``tool``
  (answering a call by ``tool_call_id``). Content is a string, null, or a list of content
  parts, read by :func:`mtcabench.openai_content.message_text` exactly as ``ingest`` reads
  them: text and refusal parts joined with a line break, an image, audio or file part kept as
  a placeholder (``[image]``...) where it was, an unknown part refused; an assistant's
  ``refusal`` field is its text when it has no content.
- **A TauBench run**: one run object with ``traj``, or a TauBench trajectory file (a list of
  runs), from which one run is chosen (``select``).
- **Our conversation records**: JSON Lines of ``kind: conversation`` records (as ``ingest``
  writes them), from which one is chosen by id when there are several.

Every bad input is an :class:`~mtcabench.errors.InputError`: one line naming the file (and
the message) and what to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mtcabench.errors import InputError
from mtcabench.io import JSONError, format_validation_error, loads, read_records
from mtcabench.model import Conversation, Role, TargetSpan, ToolCall, Turn
from mtcabench.openai_content import ContentError, message_text

#: Roles read as another: OpenAI's ``developer`` messages are system instructions.
ROLE_ALIASES = {"developer": "system"}
#: What the chat messages of a plain transcript are recorded as.
TRANSCRIPT_SOURCE = "transcript"


def content_text(content: Any, where: str) -> str:
    """The text of a chat message's ``content`` (:func:`~mtcabench.openai_content.message_text`,
    the one normaliser ingest uses too); ``where`` (e.g. ``"run.json, message 3"``) names the
    message in the InputError of a part that is not read."""
    try:
        return message_text(content)
    except ContentError as e:
        raise InputError(f"{where}: {e}") from None


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, str):
        try:
            raw = loads(raw)
        except JSONError as exc:
            raise InputError(f"{where}: arguments are not JSON ({exc.reason}); expected a JSON "
                             "object as a string") from None
    if not isinstance(raw, dict):
        raise InputError(f"{where}: arguments are a {type(raw).__name__}; expected a JSON object")
    return raw


def _tool_calls(raw: Any, where: str) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(f"{where}: tool_calls is {type(raw).__name__}; expected a list")
    calls: list[ToolCall] = []
    for k, c in enumerate(raw):
        here = f"{where}, tool call {k}"
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise InputError(f"{here}: expected {{id, type: function, function: {{name, "
                             "arguments}}}")
        if not isinstance(c.get("id"), str) or not c["id"]:
            raise InputError(f"{here} ({fn['name']}): has no id; tool results name the call "
                             "they answer by its id")
        if any(x.id == c["id"] for x in calls):
            raise InputError(f"{here}: call id {c['id']!r} used twice in one message; each "
                             "parallel call needs its own id")
        calls.append(ToolCall(id=c["id"], name=fn["name"],
                              arguments=_arguments(fn.get("arguments"), here)))
    return calls


class MessageReader:
    """Reads chat messages into turns one at a time, in order.

    It remembers the calls issued so far, so that each ``tool`` message is checked against
    them as it comes (upstream logs reuse call ids: a result answers the latest call with its
    id). :meth:`read` converts without changing the state, :meth:`append` then accepts the
    turn: the online tracer appends only once the model has processed it.
    """

    def __init__(self, where: str = "messages"):
        self.where = where
        self.turns: list[Turn] = []
        self._calls: dict[str, str] = {}  # call id -> tool name, latest issue wins

    def read(self, message: Any) -> Turn:
        """The turn for ``message`` as the next turn (nothing is recorded)."""
        index = len(self.turns)
        here = f"{self.where}, message {index}"
        if not isinstance(message, Mapping):
            raise InputError(f"{here}: expected a chat message object, got "
                             f"{type(message).__name__}")
        role = message.get("role")
        role = ROLE_ALIASES.get(role, role)
        if role == "function":
            raise InputError(f"{here}: a legacy 'function' message (function_call); convert it "
                             "to an assistant tool_calls entry and a 'tool' message with its id")
        if role not in {r.value for r in Role}:
            raise InputError(f"{here}: unknown role {role!r}; expected system, developer, user, "
                             "assistant or tool")
        content = content_text(message.get("content"), here)
        if role == "assistant" and not content and isinstance(message.get("refusal"), str):
            content = message["refusal"]
        calls = _tool_calls(message.get("tool_calls"), here) if role == "assistant" else []
        if role != "assistant" and message.get("tool_calls"):
            raise InputError(f"{here}: a {role} message with tool_calls; only assistant "
                             "messages issue tool calls")
        call_id, name = None, None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InputError(f"{here}: a tool message needs the tool_call_id of the call "
                                 "it answers")
            if call_id not in self._calls:
                issued = ", ".join(list(self._calls)[-5:]) or "none"
                raise InputError(
                    f"{here}: tool result answers call {call_id!r}, which no earlier assistant "
                    f"message issued (latest call ids: {issued}); fix its tool_call_id or put "
                    "the assistant message with that call before it")
            name = message.get("name") if isinstance(message.get("name"), str) else None
            name = name or self._calls[call_id]
        try:
            return Turn(index=index, role=Role(role), content=content, tool_calls=calls,
                        tool_call_id=call_id, name=name)
        except ValidationError as exc:
            raise InputError(f"{here}: {format_validation_error(exc)}") from None

    def append(self, turn: Turn) -> None:
        """Accept ``turn`` (from :meth:`read`) as the next turn."""
        if turn.index != len(self.turns):
            raise ValueError(f"turn {turn.index} appended as turn {len(self.turns)}")
        self.turns.append(turn)
        for call in turn.tool_calls:
            self._calls[call.id] = call.name

    def add(self, message: Any) -> Turn:
        """Read ``message`` and accept it."""
        turn = self.read(message)
        self.append(turn)
        return turn


def conversation_from_messages(
    messages: Iterable[Any], *, id: str = "transcript", source: str = TRANSCRIPT_SOURCE,
    domain: str = "transcript", where: str = "messages", **fields: Any,
) -> Conversation:
    """A conversation from OpenAI chat messages (see the module docstring)."""
    reader = MessageReader(where)
    for m in messages:
        reader.add(m)
    if not reader.turns:
        raise InputError(f"{where}: no messages; a conversation needs at least one")
    try:
        return Conversation(id=id, source=source, domain=domain, turns=reader.turns, **fields)
    except ValidationError as exc:
        raise InputError(f"{where}: {format_validation_error(exc)}") from None


# --------------------------------------------------------------------------- files


def _load(path: Path) -> tuple[str, Any]:
    """The file's text and its JSON value (``None`` where the text is JSON Lines)."""
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"{path}: empty file; expected a transcript (JSON or JSON Lines)")
    try:
        return text, loads(text)
    except JSONError as exc:
        if "trailing characters" in exc.reason:
            return text, None  # more than one value: JSON Lines (each line checked there)
        raise InputError.at(path, exc.reason, line=exc.line) from None


def _json_lines(path: Path, text: str) -> list[dict]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = loads(line)
        except JSONError as exc:
            raise InputError.at(path, exc.reason, line=n) from None
        if not isinstance(obj, dict):
            raise InputError.at(path, f"a JSON {type(obj).__name__}, expected an object "
                                "(a chat message or a conversation record)", line=n)
        out.append(obj)
    return out


def choose(conversations: list[Conversation], select: str | None, where: str) -> Conversation:
    """The conversation ``select`` names: its id, the end of its id after a ``/``
    (``task-3/trial-0``, ``task-3``), or its position from 0; the only one when None."""
    if select is None:
        if len(conversations) == 1:
            return conversations[0]
        shown = ", ".join(c.id for c in conversations[:3])
        raise InputError(f"{where}: holds {len(conversations)} conversations; choose one with "
                         f"--conversation ID (e.g. {shown}) or its position from 0")
    hits = [c for c in conversations if c.id == select or c.id.endswith("/" + select)]
    if not hits and re.fullmatch(r"task-[^/]+", select):
        hits = [c for c in conversations if f"/{select}/" in c.id + "/"]
    if not hits and select.isdigit() and int(select) < len(conversations):
        hits = [conversations[int(select)]]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        shown = ", ".join(c.id for c in conversations[:3])
        raise InputError(f"{where}: no conversation {select!r} among {len(conversations)} "
                         f"(ids such as {shown}, or a position from 0)")
    shown = ", ".join(c.id for c in hits[:3])
    raise InputError(f"{where}: {select!r} names {len(hits)} conversations ({shown}, ...); "
                     "give a longer id")


def _taubench_run(path: Path, k: int | None, run: Any, listed: bool) -> Conversation:
    where = f"{path}: run {k}" if k is not None else str(path)
    if not isinstance(run, dict) or not isinstance(run.get("traj"), list):
        raise InputError(f"{where}: a TauBench run needs a 'traj' list of chat messages")
    # Ids as `ingest taubench` gives them when the file has the upstream <model>-<domain> name.
    model, _, domain = path.stem.rpartition("-") if listed else ("", "", "")
    task, trial = run.get("task_id"), run.get("trial", 0)
    cid = (f"taubench/{domain}/{model}/task-{task}/trial-{trial}" if model and domain
           else f"taubench/task-{task}/trial-{trial}")
    metadata = {key: v for key, v in run.items() if key != "traj"}
    metadata["origin"] = {"file": path.name, "run": k}
    return conversation_from_messages(
        run["traj"], id=cid, source="taubench", domain=domain or "unknown", where=where,
        agent_model=model or None, task_id=None if task is None else str(task),
        trial=trial if isinstance(trial, int) else None, metadata=metadata)


def read_transcript(path: str | Path, select: str | None = None) -> Conversation:
    """The conversation in a transcript file (see the module docstring for the shapes).

    ``select`` chooses one conversation of a file holding several (TauBench runs, conversation
    records): its id, the end of its id (``task-3/trial-0``) or its position from 0.
    """
    path = Path(path)
    text, value = _load(path)
    if value is None:  # JSON Lines: conversation records, or one chat message per line
        lines = _json_lines(path, text)
        if all(obj.get("kind") == Conversation.KIND for obj in lines):
            return choose(list(read_records(path, Conversation)), select, str(path))
        if all("role" in obj for obj in lines):
            return _messages(path, lines, select)
        raise InputError(f"{path}: JSON Lines of neither conversation records (kind: "
                         "conversation) nor chat messages (one object with a role per line)")
    if isinstance(value, dict):
        if isinstance(value.get("messages"), list):
            cid = value.get("id") if isinstance(value.get("id"), str) else None
            return _messages(path, value["messages"], select, cid)
        if "traj" in value:
            return _taubench_run(path, None, value, listed=False)
        if value.get("kind") == Conversation.KIND:
            return choose(list(read_records(path, Conversation)), select, str(path))
    elif isinstance(value, list) and value:
        if all(isinstance(m, dict) and "role" in m for m in value):
            return _messages(path, value, select)
        if all(isinstance(r, dict) and "traj" in r for r in value):
            runs = [_taubench_run(path, k, r, listed=True) for k, r in enumerate(value)]
            return choose(runs, select, str(path))
    elif isinstance(value, list):
        raise InputError(f"{path}: an empty list; expected chat messages or TauBench runs")
    raise InputError(f"{path}: not a transcript; expected a JSON list of chat messages, "
                     "{\"messages\": [...]}, a TauBench run (with 'traj') or a list of them, "
                     "or conversation records (JSON Lines)")


def _messages(path: Path, messages: list, select: str | None, cid: str | None = None) -> Conversation:
    if select is not None:
        raise InputError(f"{path}: holds one conversation (chat messages); leave out "
                         "--conversation")
    return conversation_from_messages(messages, id=cid or path.stem, where=str(path),
                                      metadata={"origin": {"file": path.name}})


# --------------------------------------------------------------------------- targets


def last_answer(conversation: Conversation) -> int:
    """The last assistant turn with content: what is explained unless told otherwise."""
    for t in reversed(conversation.turns):
        if t.role is Role.ASSISTANT and t.content.strip():
            return t.index
    raise InputError(f"conversation {conversation.id}: no assistant turn with content to "
                     "explain; name one with --turn")


def target_span(
    conversation: Conversation, turn: int, span: str | tuple[int, int] | TargetSpan | None = None,
) -> TargetSpan:
    """A target span in assistant turn ``turn``: ``span`` as text (its first occurrence in
    ``Turn.text``), as ``(start, end)`` offsets into ``Turn.text``, or as a TargetSpan; None:
    the turn's whole content (its whole text where it has only tool calls)."""
    where = f"conversation {conversation.id}"
    if not 0 <= turn < len(conversation.turns):
        raise InputError(f"{where}: no turn {turn} (it has {len(conversation.turns)} turns, "
                         "numbered from 0)")
    t = conversation.turns[turn]
    if t.role is not Role.ASSISTANT:
        raise InputError(f"{where}: turn {turn} is a {t.role.value} turn; only assistant turns "
                         "are explained (their text is what the model wrote)")
    text = t.text
    if isinstance(span, TargetSpan):
        if span.turn != turn:
            raise InputError(f"{where}: the span is in turn {span.turn}, not {turn}")
        start, end = span.start, span.end
    elif isinstance(span, str):
        if not span:
            raise InputError(f"{where}: an empty span text")
        start = text.find(span)
        if start < 0:
            raise InputError(f"{where}: {span!r} does not occur in turn {turn} "
                             f"({_excerpt(text)!r})")
        end = start + len(span)
    elif span is None:
        start, end = (0, len(t.content)) if t.content.strip() else (0, len(text))
    else:
        start, end = span
    if not 0 <= start < end <= len(text):
        raise InputError(f"{where}: span {start}-{end} is not inside turn {turn}'s text "
                         f"(0-{len(text)}, start before end)")
    if isinstance(span, TargetSpan) and span.text != text[start:end]:
        raise InputError(f"{where}: span text {span.text!r} is not at {start}:{end} of turn {turn}")
    return TargetSpan(turn=turn, start=start, end=end, text=text[start:end])


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


__all__ = [
    "MessageReader",
    "choose",
    "content_text",
    "conversation_from_messages",
    "last_answer",
    "read_transcript",
    "target_span",
]
