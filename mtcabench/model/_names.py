"""The name rule: what a source, a domain and an agent model may be called, in every record.

A domain and a source name the release's files and configurations (``data/spans/<source>/
<domain>-<split>.parquet``, the configs ``<domain>`` and ``<domain>-conversations``) and the
rows of every per-domain table (score, view's facets, the card); an agent model names the rows
of the per-agent tables. One rule, here, applied where a record is made or read (the fields of
:class:`~mtcabench.model.Conversation` and :class:`~mtcabench.model.BenchmarkSpan`), so that
every reader (``ingest taubench``, ``tau2``, ``confetti``, ``transcripts`` and their
``--domain`` / ``--agent-model`` options) and every later stage sees the same names:

- **Normalised once**: blanks around a name are dropped; a domain or source is lower-cased and
  its inner runs of blanks become one ``_`` (``" Airline "`` and ``airline`` are one domain).
  An agent model keeps its case (upstream model ids are case-sensitive: an OpenAI fine-tune
  id ``ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm``) and may hold no blank.
- **Refused**, with one message naming the value: a control character anywhere (a line break
  is not spacing: ``"telecom\\n"``), an empty name, a character outside the allowed set (a
  domain or source: ASCII lower-case letters, digits, ``_`` and ``-``, starting with a letter
  or digit; an agent model: ASCII letters, digits and ``. _ - : / @ +``), more than
  :data:`MAX_NAME` characters, a domain or source that is a configuration every release has
  or may have (:data:`RESERVED_CONFIGS`: ``claims`` where it holds claims) or ends in ``-conversations`` (the suffix of a domain's
  conversations configuration: ``airline`` and ``airline-conversations`` would both give a
  config ``airline-conversations``), an agent model named :data:`NO_AGENT` (what reports show
  for conversations that name no agent) or holding ``://`` (an endpoint URL, which may carry
  a password, is not a model name).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

#: The longest name (a file name part, a config name, a table cell).
MAX_NAME = 100
#: Configs a release has (and that the split layout adds; ``claims`` where a release holds
#: claims, docs/release.md): no domain or source takes them.
RESERVED_CONFIGS = frozenset({"spans", "conversations", "all", "claims"})
#: The suffix of a domain's (and a source's) conversations config.
CONVERSATIONS_SUFFIX = "-conversations"
#: What reports, facets and tables show for a conversation that names no agent model.
NO_AGENT = "unknown"

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_AGENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
_DOMAIN_CHARS = "ASCII lower-case letters, digits, '_' and '-', starting with a letter or digit"
_AGENT_CHARS = "ASCII letters, digits and . _ - : / @ +, starting with a letter or digit"


def _shown(value: str) -> str:
    return repr(value if len(value) <= 60 else value[:57] + "...")


def _common(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be text, got {type(value).__name__}")
    if (m := _CONTROL.search(value)) is not None:
        raise ValueError(f"{what} {_shown(value)} holds the control character {m.group()!r} "
                         f"at position {m.start()}; names are printable text")
    return value


def _bad_char(value: str, pattern: re.Pattern) -> str:
    for i in range(len(value)):
        if not pattern.fullmatch(value[: i + 1]):
            return value[i]
    return value[-1]  # pragma: no cover - a whole that fails has a first failing prefix


def file_name(value: object, what: str = "the domain") -> str:
    """``value`` as a domain or source name (see the module docstring), or ValueError."""
    name = "_".join(_common(value, what).split()).lower()
    if not name:
        raise ValueError(f"{what} is empty; name it (a task family: airline, retail, ...)")
    if len(name) > MAX_NAME:
        raise ValueError(f"{what} {_shown(name)} has {len(name)} characters, more than "
                         f"{MAX_NAME}")
    if not _FILE_NAME.fullmatch(name):
        raise ValueError(f"{what} {_shown(name)} holds {_bad_char(name, _FILE_NAME)!r}; it "
                         f"names the release's files and configs: {_DOMAIN_CHARS}")
    if name in RESERVED_CONFIGS:
        raise ValueError(f"{what} {_shown(name)} is the name of a config every release has "
                         f"or may have ({', '.join(sorted(RESERVED_CONFIGS))}); name it "
                         "otherwise")
    if name.endswith(CONVERSATIONS_SUFFIX):
        raise ValueError(f"{what} {_shown(name)} ends in {CONVERSATIONS_SUFFIX!r}, the suffix "
                         "of a domain's conversations config (two domains would share one); "
                         "name it otherwise")
    return name


def domain_name(value: object) -> str:
    """``value`` as a domain name (see the module docstring), or ValueError."""
    return file_name(value, "the domain")


def source_name(value: object) -> str:
    """``value`` as a source name (see the module docstring), or ValueError."""
    return file_name(value, "the source")


def agent_model_name(value: object) -> str | None:
    """``value`` as an agent model name (None stays None: no agent named), or ValueError."""
    if value is None:
        return None
    what = "the agent model"
    name = _common(value, what).strip()
    if not name:
        raise ValueError(f"{what} is empty; leave it out when the run names none")
    if len(name) > MAX_NAME:
        raise ValueError(f"{what} {_shown(name)} has {len(name)} characters, more than "
                         f"{MAX_NAME}")
    if "://" in name:
        raise ValueError(f"{what} {_shown(name.split('://')[0] + '://...')} is an endpoint URL, "
                         "not a model name (a URL may carry a password); name the model")
    if name.lower() == NO_AGENT:
        raise ValueError(f"{what} {_shown(name)} is what mtcabench shows for conversations "
                         "that name no agent; leave it out, or name the model")
    if not _AGENT.fullmatch(name):
        raise ValueError(f"{what} {_shown(name)} holds {_bad_char(name, _AGENT)!r}; an agent "
                         f"model name is {_AGENT_CHARS}")
    return name


#: A domain field: normalised and checked by :func:`domain_name` wherever a record is made.
Domain = Annotated[str, BeforeValidator(domain_name)]
#: A source field (:func:`source_name`).
Source = Annotated[str, BeforeValidator(source_name)]
#: An agent model field (:func:`agent_model_name`).
AgentModel = Annotated[str | None, BeforeValidator(agent_model_name)]
