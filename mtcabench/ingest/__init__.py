"""Ingest: turn raw agent conversations (TauBench, ConFETTI) into validated Conversation records.

Each source has an adapter module; both write through :func:`write_conversations`, which
refuses duplicate ids and writes atomically.
"""

from mtcabench.ingest._common import write_conversations
from mtcabench.ingest.confetti import read_confetti
from mtcabench.ingest.taubench import read_taubench

__all__ = ["read_confetti", "read_taubench", "write_conversations"]
