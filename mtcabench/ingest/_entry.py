"""The ingest commands as functions: refuse an output that is an input, read, write atomically.

The CLI and tests call these; a reader alone (``read_taubench``, ``read_confetti``) writes
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from pathlib import Path

from mtcabench.ingest._common import write_conversations
from mtcabench.ingest.confetti import read_confetti
from mtcabench.ingest.taubench import read_taubench
from mtcabench.io import check_outputs_are_not_inputs
from mtcabench.progress import tracked


def ingest_taubench(paths: Sequence[str | Path], out: str | Path, *,
                    agent_model: str | None = None, domain: str | None = None,
                    progress: bool = True) -> int:
    """TauBench trajectory files to one conversations file; returns how many were written."""
    check_outputs_are_not_inputs(paths, [out])
    convs = chain.from_iterable(read_taubench(p, agent_model=agent_model, domain=domain)
                                for p in paths)
    with tracked(convs, "ingest taubench", enabled=progress) as items:
        return write_conversations(out, items)


def ingest_confetti(path: str | Path, out: str | Path, *, domain: str | None = None,
                    progress: bool = True) -> int:
    """A ConFETTI BFCL-style file to a conversations file; returns how many were written."""
    check_outputs_are_not_inputs([path], [out])
    with tracked(read_confetti(path, domain=domain), "ingest confetti",
                 enabled=progress) as items:
        return write_conversations(out, items)
