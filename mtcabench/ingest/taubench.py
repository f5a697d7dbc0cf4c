"""TauBench adapter: ``historical_trajectories/<model>-<domain>.json`` to Conversation records.

The file is a JSON list of runs, each with ``task_id``, ``trial``, ``reward``, ``info`` and
``traj`` (OpenAI chat messages). A thin layer over the format layer's TauBench reader
(:mod:`mtcabench.transcripts`), which reads ``traj`` with the one OpenAI chat reader, so that
``ingest``, ``explain`` and the tracer read a run alike. The agent model and domain come from
the file name (``gpt-4o-airline.json`` -> model ``gpt-4o``, domain ``airline``) unless given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mtcabench.errors import InputError
from mtcabench.ingest._common import load_json
from mtcabench.model import Conversation
from mtcabench.transcripts import taubench_conversation, taubench_id

SOURCE = "taubench"


def model_and_domain(path: Path) -> tuple[str, str]:
    """Split ``<model>-<domain>.json`` (the upstream naming) into its two parts."""
    stem = path.stem
    if "-" not in stem:
        raise InputError(
            f"{path}: cannot tell agent model and domain from the name; expected "
            "<model>-<domain>.json (e.g. gpt-4o-airline.json) or pass --agent-model and --domain"
        )
    model, domain = stem.rsplit("-", 1)
    return model, domain


def conversation_id(domain: str, model: str, task_id: Any, trial: Any) -> str:
    """Stable id of a TauBench run: source, domain, agent model, task and trial."""
    return taubench_id(domain, model, task_id, trial)


def read_taubench(
    path: str | Path, *, agent_model: str | None = None, domain: str | None = None
) -> Iterator[Conversation]:
    """Yield one validated Conversation per run of a TauBench trajectory file."""
    path = Path(path)
    runs = load_json(path)
    if not isinstance(runs, list):
        raise InputError(f"{path}: expected a JSON list of runs, got {type(runs).__name__}")
    if agent_model is None or domain is None:
        model_guess, domain_guess = model_and_domain(path)
        agent_model = agent_model or model_guess
        domain = domain or domain_guess
    for i, run in enumerate(runs):
        yield taubench_conversation(path, i, run, agent_model, domain)
