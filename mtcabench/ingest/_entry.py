"""The ingest commands as functions: refuse an output that is an input, read, write atomically.

The CLI and tests call these; a reader alone (``read_taubench``, ``read_confetti``,
``mtcabench.transcripts.read_conversations``) writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.ingest._common import write_conversations
from mtcabench.io import check_outputs_are_not_inputs
from mtcabench.model import agent_model_name, domain_name, source_name
from mtcabench.progress import tracked
from mtcabench.transcripts import (
    id_stems,
    read_confetti,
    read_conversations,
    read_tau2,
    read_taubench,
)


def _option(rule: Callable[[Any], Any], value: str | None, option: str) -> Any:
    """An option's name by the name rule (:mod:`mtcabench.model._names`), normalised, checked
    before any file is read (None: not given)."""
    if value is None:
        return None
    try:
        return rule(value)
    except ValueError as exc:
        raise InputError(f"{option}: {exc}") from None


def ingest_taubench(paths: Sequence[str | Path], out: str | Path, *,
                    agent_model: str | None = None, domain: str | None = None,
                    progress: bool = True, report: Callable[[str], None] | None = None) -> int:
    """TauBench trajectory files to one conversations file; returns how many were written.
    ``report`` is handed each line saying that a domain or agent model came from a file name
    (:func:`mtcabench.transcripts.read_taubench`)."""
    agent_model = _option(agent_model_name, agent_model, "--agent-model")
    domain = _option(domain_name, domain, "--domain")
    check_outputs_are_not_inputs(paths, [out])
    convs = chain.from_iterable(read_taubench(p, agent_model=agent_model, domain=domain,
                                              report=report)
                                for p in paths)
    with tracked(convs, "ingest taubench", enabled=progress) as items:
        return write_conversations(out, items)


def ingest_tau2(paths: Sequence[str | Path], out: str | Path, *, domain: str | None = None,
                agent_model: str | None = None, agent_implementation: str | None = None,
                progress: bool = True, report: Callable[[str], None] | None = None) -> int:
    """tau2-bench files of any layout to one conversations file, every simulation a
    conversation (:mod:`mtcabench.transcripts._tau2`); returns how many were written.
    ``domain``, ``agent_model``, ``agent_implementation``: what a bare list of simulations
    does not record. A bad file, or two runs of one id across the files, writes nothing."""
    domain = _option(domain_name, domain, "--domain")
    agent_model = _option(agent_model_name, agent_model, "--agent-model")
    check_outputs_are_not_inputs(paths, [out])
    convs = chain.from_iterable(
        read_tau2(p, domain=domain, agent_model=agent_model,
                  agent_implementation=agent_implementation, report=report) for p in paths)
    with tracked(convs, "ingest tau2", enabled=progress) as items:
        return write_conversations(out, items)


def ingest_confetti(path: str | Path, out: str | Path, *, domain: str | None = None,
                    progress: bool = True) -> int:
    """A ConFETTI BFCL-style file to a conversations file; returns how many were written."""
    domain = _option(domain_name, domain, "--domain")
    check_outputs_are_not_inputs([path], [out])
    with tracked(read_confetti(path, domain=domain), "ingest confetti",
                 enabled=progress) as items:
        return write_conversations(out, items)


def ingest_transcripts(paths: Sequence[str | Path], out: str | Path, *,
                       format: str | None = None, source: str | None = None,
                       domain: str | None = None, progress: bool = True) -> int:
    """Agent logs of any format (:data:`mtcabench.transcripts.FORMATS`) to one conversations
    file; ``source`` / ``domain`` replace the records' (default ``transcript``). Returns how
    many were written; a bad file or a duplicate id writes nothing."""
    # Checked here: model_copy below does not validate what it replaces.
    source = _option(source_name, source, "--source")
    domain = _option(domain_name, domain, "--domain")
    check_outputs_are_not_inputs(paths, [out])
    fields = {k: v for k, v in (("source", source), ("domain", domain)) if v is not None}
    # Two logs of one name in different folders get ids that tell them apart (id_stems).
    convs = (c.model_copy(update=fields) if fields else c
             for p, stem in zip(paths, id_stems(paths))
             for c in read_conversations(p, format, id_stem=stem))
    with tracked(convs, "ingest transcripts", enabled=progress) as items:
        return write_conversations(out, items)
