"""Ingest: turn raw agent conversations into validated Conversation records.

TauBench, tau2-bench and ConFETTI files are read by their formats in the format layer
(:func:`~mtcabench.transcripts.read_taubench`, :func:`~mtcabench.transcripts.read_tau2`,
:func:`~mtcabench.transcripts.read_confetti`, re-exported here); agent logs of any format
(:func:`ingest_transcripts`: OpenAI chat or Responses, Anthropic Messages, OpenTelemetry
GenAI, Inspect AI) are read by :mod:`mtcabench.transcripts` itself. All write through
:func:`write_conversations`, which refuses duplicate ids and writes atomically.
:func:`ingest_taubench`, :func:`ingest_tau2`, :func:`ingest_confetti` and
:func:`ingest_transcripts` are the commands (an output that is an input is refused). Every
reader builds a conversation's metadata by name from one allow-list
(:data:`~mtcabench.model.METADATA_KEYS`): a run's settings are never copied.
:func:`message_text` reads OpenAI chat message content (text or a list of parts) for any
reader of OpenAI-style transcripts.
"""

from mtcabench.ingest._common import write_conversations
from mtcabench.ingest._entry import (
    ingest_confetti,
    ingest_tau2,
    ingest_taubench,
    ingest_transcripts,
)
from mtcabench.openai_content import ContentError, message_text
from mtcabench.transcripts import read_confetti, read_tau2, read_taubench

__all__ = ["ContentError", "ingest_confetti", "ingest_tau2", "ingest_taubench",
           "ingest_transcripts", "message_text", "read_confetti", "read_tau2", "read_taubench",
           "write_conversations"]
