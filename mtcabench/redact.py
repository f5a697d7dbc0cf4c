"""Keeping secrets out of everything that leaves the process: one redaction for every message.

A server controls what it answers, and a hostile or buggy one may echo the request's
``Authorization`` header (or the key anywhere) back in its answer, its error messages, an HTML
error page or a response header, plainly or encoded (``\\uXXXX`` escapes, URL-encoded, HTML
entities, JSON-escaped ``\\/``). Every secret the process holds is known here: the values the
service clients register when they are built (an LLM endpoint's key, whatever ``--api-key``
gave, the Label Studio key, the Hub token) and the values of the environment variables in
:data:`SECRET_ENV`, each only when it looks like a key (:func:`looks_secret`: long enough, not
one ordinary word, enough entropy; ``OPENAI_API_KEY=ollama`` is no secret, and "ollama" stays
in a user's records). :func:`redact` replaces each of them in any of those spellings, base64
and split across a line break included, and the value of any ``Authorization``-like header,
any password written into a URL and any key of a published shape (``sk-``, ``hf_``, ``ghp_``)
with :data:`REDACTED`.

Where it applies: every :class:`~mtcabench.errors.MtcaError` message (so every one-line error
of the CLI), everything a command prints on stdout and stderr (:func:`redacted_output`, which
the CLI runs every command in: ``explain``'s trees too), everything the writers of
:mod:`mtcabench.io` write as text (records, summaries, reports, pages), and the LLM answers
before they are cached or parsed. A text is
redacted *before* it is cut to a length (:func:`clip`), so that a cut cannot leave part of a
key behind.
"""

from __future__ import annotations

import base64
import contextlib
import math
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

#: What a secret is replaced with.
REDACTED = "[redacted]"

#: Environment variables whose values are secrets wherever they appear.
SECRET_ENV = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "LABEL_STUDIO_API_KEY",
    "PHOENIX_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
)

#: A shorter value is not treated as a secret (it would redact ordinary words).
MIN_SECRET_LENGTH = 8
#: The least information a value must carry to count as a secret: its length times the
#: Shannon entropy of its characters, in bits. A 16-character random key carries 60 or more;
#: ``lm-studio`` (a placeholder local servers take) about 27.
MIN_SECRET_BITS = 32.0
#: One ordinary word (``ollama``, ``Placeholder``, ``EMPTY``): never a secret, whatever its length.
_WORD = re.compile(r"[a-z]+|[A-Z][a-z]+|[A-Z]+")


def looks_secret(value: str) -> bool:
    """Whether ``value`` (an environment variable's value, a key given by flag) is treated as
    a secret: long enough, not one ordinary word, and with the character mix of a key.

    Local servers take any key, and the values people give them are words (``OPENAI_API_KEY=
    ollama``, ``EMPTY``, ``lm-studio``, ``none``): redacting such a value would replace that
    word everywhere in a user's records and messages. A real key (``sk-...``, ``hf_...``, a
    40-character hex token) passes easily.
    """
    if len(value) < MIN_SECRET_LENGTH or _WORD.fullmatch(value):
        return False
    counts: dict[str, int] = {}
    for c in value:
        counts[c] = counts.get(c, 0) + 1
    n = len(value)
    bits = -sum(k * math.log2(k / n) for k in counts.values())
    return bits >= MIN_SECRET_BITS


def _spellings(secret: str) -> list[str]:
    """The secret as written plainly and as its base64 would sit inside a longer base64 text
    (a ``Basic`` header, a config dump): at each of the three byte alignments, the characters
    that depend on the secret's bytes only, in the standard and the URL-safe alphabet."""
    out = [secret]
    data = secret.encode("utf-8")
    for pad in range(3):
        full = base64.b64encode(b"\0" * pad + data).decode("ascii").rstrip("=")
        inner = full[-(-8 * pad // 6) if pad else 0: 8 * (pad + len(data)) // 6]
        if len(inner) >= MIN_SECRET_LENGTH:
            out += [inner, inner.replace("+", "-").replace("/", "_")]
    return list(dict.fromkeys(out))

_registered: set[str] = set()
_lock = threading.Lock()

# The value of an Authorization-like header, in a header dump, a JSON body or a repr:
# ``Authorization: Bearer X``, ``"authorization": "Token X"``, ``api-key: X``.
_HEADER = re.compile(
    r"(?i)(\b(?:proxy-)?authori[sz]ation|\bx-api-key|\bapi[-_]key)"
    r"(\\?[\"']?\s*[:=]\s*\\?[\"']?\s*)"
    r"((?:bearer|token|basic)\s+)?"
    r"([^\s\"'\\,;}&<]{4,})")
# A password written into a URL (``https://user:password@host``).
_USERINFO = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)([^@\s/]+)(@)")
# A bearer token outside a header name (``you sent Bearer X``).
_BEARER = re.compile(r"(?i)(\b(?:bearer|token)\s+)([A-Za-z0-9._~+/=-]{12,})")
# Keys of the services the tool talks to, by their published shapes, held or not: OpenAI
# (``sk-``, ``sk-proj-``), Anthropic (``sk-ant-``), Hugging Face (``hf_``), GitHub (``ghp_``
# and the other ``gh?_`` kinds, ``github_pat_``). A log or a server's answer may hold a key the
# process does not hold; printed, it is still a key.
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})")


def register_secret(*values: str | None) -> None:
    """Add values (a key given by flag or read from a file) to the secrets this process holds."""
    with _lock:
        for v in values:
            if v and looks_secret(v):
                _registered.add(v)


def held_secrets() -> list[str]:
    """Every secret the process holds: registered, and the values of :data:`SECRET_ENV`."""
    env = (os.environ.get(name, "").strip() for name in SECRET_ENV)
    with _lock:
        values = set(_registered)
    values.update(v for v in env if looks_secret(v))
    return sorted(values, key=len, reverse=True)


_BREAK = r"(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*)?"


def _char(c: str) -> str:
    """A regex for one character of a secret in any of the spellings a text may hold it in."""
    o = ord(c)
    alts = [re.escape(c)]
    if o < 0x10000:
        alts.append(rf"\\u(?i:{o:04x})")  # JSON / Python escape
    if o < 0x100:
        alts.append(rf"%(?i:{o:02x})")  # URL-encoded
        alts.append(rf"\\x(?i:{o:02x})")  # Python repr of bytes
        alts.append(rf"&#0*{o};")  # HTML entities
        alts.append(rf"&#[xX]0*(?i:{o:x});")
    if c == "/":
        alts.append(r"\\/")
    return "(?:" + "|".join(alts) + ")"


class _Plan:
    """The redaction of one set of secrets, prepared once: the plain spellings, the strings
    one of which any other spelling contains (a text holding none needs no regex search),
    and the regex of every spelling."""

    def __init__(self, secrets: tuple[str, ...]):
        self.secrets = secrets
        self.spellings = sorted({w for s in secrets for w in _spellings(s)}, key=len,
                                reverse=True)
        self.anchors = tuple({a for s in secrets for a in _anchors(s)})
        # Between two characters, a line break (raw or escaped) and its indentation: a key
        # wrapped by a terminal, a log formatter or a config file is still found.
        parts = [_BREAK.join(_char(c) for c in s) for s in secrets]
        self.pattern = re.compile("|".join(parts)) if parts else None

    def plain(self, text: str) -> str:
        for s in self.spellings:
            if s in text:
                text = text.replace(s, REDACTED)
        return text

    def __call__(self, text: str) -> str:
        text = self.plain(text)
        if self.pattern is not None and any(a in text for a in self.anchors):
            text = self.pattern.sub(REDACTED, text)
        return text


_plans: dict[tuple[str, ...], _Plan] = {}


def _plan(secrets: Iterable[str]) -> _Plan:
    key = tuple(secrets)
    plan = _plans.get(key)
    if plan is None:
        plan = _plans[key] = _Plan(key)
    return plan


def _anchors(secret: str) -> list[str]:
    """Its first character in each encoding (hex digits in either case), its plain start,
    and its first character followed by an escape (a mixed spelling)."""
    o = ord(secret[0])
    out = [secret[:4], "&#"]
    out += [secret[:k] + brk for k in range(1, 4) for brk in ("\n", "\\n", "\r")]
    out += [secret[0] + mark for mark in ("\\u", "%", "\\x", "&#")]
    for hexed in (f"{o:04x}", f"{o:04X}"):
        out.append("\\u" + hexed)
        if o < 0x100:
            out += ["%" + hexed[2:], "\\x" + hexed[2:]]
    return out


def _headers(text: str) -> str:
    text = _HEADER.sub(lambda m: m.group(1) + m.group(2) + (m.group(3) or "") + REDACTED
                       if m.group(4) != REDACTED else m.group(0), text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _KEY_SHAPES.sub(REDACTED, text)
    return _USERINFO.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)


#: Words of a field name that say its value is a credential (``password``, ``client_secret``,
#: ``Authorization``; ``token`` and ``bearer`` as the name's last word: ``HF_TOKEN``).
_CREDENTIAL_WORDS = {"password", "passwd", "passphrase", "secret", "authorization",
                     "authorisation", "credential", "credentials", "cookie", "apikey", "token",
                     "bearer"}
#: Two words in a row that name a credential (``api_key``, ``accessToken``, ``private-key``).
_CREDENTIAL_PAIRS = {("api", "key"), ("access", "key"), ("secret", "key"), ("private", "key"),
                     ("access", "token"), ("auth", "token"), ("refresh", "token"),
                     ("id", "token"), ("session", "token")}
_NAME_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def credential_name(name: str) -> bool:
    """Whether a field named ``name`` holds a credential by its name: one of its words is one
    of :data:`_CREDENTIAL_WORDS` (``db_password``, ``Authorization``, ``client_secret``;
    ``token`` and ``bearer`` only as the last word: ``hf_token``), or two of its words in a row
    name one (``api_key``, ``accessToken``). Words are whole: ``max_tokens`` and
    ``token_count`` are counts, ``keyword`` and ``secretary`` no credentials."""
    words = [w.lower() for w in _NAME_WORD.findall(name)]
    if not words:
        return False
    if words[-1] in _CREDENTIAL_WORDS or any(w in _CREDENTIAL_WORDS - {"token", "bearer"}
                                             for w in words):
        return True
    return any(pair in _CREDENTIAL_PAIRS for pair in zip(words, words[1:]))


def credential_value(value: str) -> bool:
    """Whether a text holds a credential, by the rule every message is redacted by
    (:func:`redact`): a secret this process holds, an ``Authorization``-like header's value,
    a bearer token, a password in a URL or a key of a published shape."""
    return redact(value) != value


def credential_fields(value: object, path: str = "") -> list[str]:
    """The field paths (``$.info.api_key``, ``$.headers[0][1]``) under ``value`` (parsed JSON)
    whose name or text looks like a credential (:func:`credential_name`,
    :func:`credential_value`): a value under a credential's name; a text holding one (a key, a
    URL with ``user:password@``, an Authorization header); a **key** holding one (an API key
    used as the name of an argument), named ``<key N>``; and the value of a name-value pair
    whose name is a credential's (a header list ``[["x-api-key", KEY]]``). The paths name
    where, never what: a credential is not repeated in a message."""
    found: list[str] = []
    stack: list[tuple[object, str]] = [(value, path or "$")]
    while stack:
        v, at = stack.pop()
        if isinstance(v, dict):
            for i, (k, item) in enumerate(v.items()):
                if credential_value(str(k)):
                    found.append(f"{at}.<key {i}>")
                    continue
                where = f"{at}.{k}"
                if credential_name(str(k)) and item not in (None, "", [], {}):
                    found.append(where)
                else:
                    stack.append((item, where))
        elif isinstance(v, (list, tuple)):
            if (len(v) == 2 and isinstance(v[0], str) and credential_name(v[0])
                    and v[1] not in (None, "", [], {})):
                found.append(f"{at}[1]")  # a header pair: ("Authorization", "Bearer ...")
                stack.append((v[0], f"{at}[0]"))
                continue
            stack.extend((item, f"{at}[{i}]") for i, item in enumerate(v))
        elif isinstance(v, str) and credential_value(v):
            found.append(at)
    return sorted(found)


def redact(text: str, extra: Iterable[str | None] = (), *, headers: bool = True) -> str:
    """``text`` with every secret held (and ``extra``) replaced, in any spelling.

    ``headers``: also replace the value of any ``Authorization``-like header, any bearer
    token and any password in a URL, known or not (for messages; record data keeps such text
    as the user wrote it).
    """
    secrets = held_secrets()
    if extra:
        more = {e for e in extra if e and looks_secret(e)}
        secrets = sorted(set(secrets) | more, key=len, reverse=True)
    if secrets:
        text = _plan(secrets)(text)
    return _headers(text) if headers else text


def scrubber() -> Callable[[str], str]:
    """The redaction of the secrets held now, prepared once, for a writer of many lines.

    Writers see decoded text (an answer's escapes were decoded, and redacted, when it came
    in; JSON is written with ``ensure_ascii=False``), so the plain spelling is the one to
    replace there, at the speed of a substring search; no header patterns either (record
    data keeps such text as the user wrote it).
    """
    secrets = held_secrets()
    return _plan(secrets).plain if secrets else _unchanged


def _unchanged(text: str) -> str:
    return text


def clip(text: str, limit: int) -> str:
    """``text`` redacted, then cut to ``limit`` characters: a cut never leaves part of a key."""
    text = redact(text)
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


class Redactor:
    """The redaction of a client: the secrets it holds (registered process-wide) and every
    other secret the process holds, in strings and dicts/lists of them, deeply."""

    def __init__(self, secrets: Iterable[str | None] = (), *, headers: bool = False):
        self.own = [s for s in secrets if s]
        register_secret(*self.own)
        self.headers = headers

    @property
    def secrets(self) -> list[str]:
        return held_secrets()

    def __bool__(self) -> bool:
        return bool(held_secrets())

    def text(self, value: str) -> str:
        return redact(value, headers=self.headers)

    def redact(self, value: T) -> T:
        """``value`` with every secret replaced: strings, and dicts/lists of them, deeply."""
        if isinstance(value, str):
            return self.text(value)  # type: ignore[return-value]
        if isinstance(value, dict):
            return {self.redact(k): self.redact(v) for k, v in value.items()}  # type: ignore[return-value]
        if isinstance(value, list):
            return [self.redact(v) for v in value]  # type: ignore[return-value]
        return value


class RedactedStream:
    """A text stream whose every write is redacted, headers included: the CLI puts one over
    ``sys.stderr``, so that even a bug's traceback shows no secret the process holds."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def redacted_output():
    """Everything written to ``sys.stdout`` and ``sys.stderr`` inside is redacted (headers and
    key shapes included): what a command prints, its data on stdout (``explain``'s trees, a
    table, a graph) as well as its messages, goes through this one redaction. The CLI runs
    every command inside it."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, RedactedStream):
        sys.stdout = RedactedStream(sys.stdout)
    if not isinstance(sys.stderr, RedactedStream):
        sys.stderr = RedactedStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
