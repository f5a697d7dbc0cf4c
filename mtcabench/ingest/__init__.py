"""Ingest: turn raw agent conversations into validated Conversation records.

TauBench has an adapter module (a thin layer over the format layer's reader,
:mod:`mtcabench.transcripts`), ConFETTI is read by its format there
(:func:`~mtcabench.transcripts.read_confetti`); agent logs of any format
(:func:`ingest_transcripts`: OpenAI chat or Responses, Anthropic Messages, OpenTelemetry
GenAI, Inspect AI) are read by :mod:`mtcabench.transcripts` itself. All write through
:func:`write_conversations`, which refuses duplicate ids and writes atomically.
:func:`ingest_taubench`, :func:`ingest_confetti` and :func:`ingest_transcripts` are the
commands (an output that is an input is refused).
:func:`message_text` reads OpenAI chat message content (text or a list of parts) for any
reader of OpenAI-style transcripts.
"""

from mtcabench.ingest._common import write_conversations
from mtcabench.ingest._entry import ingest_confetti, ingest_taubench, ingest_transcripts
from mtcabench.ingest.taubench import read_taubench
from mtcabench.openai_content import ContentError, message_text
from mtcabench.transcripts import read_confetti

__all__ = ["ContentError", "ingest_confetti", "ingest_taubench", "ingest_transcripts",
           "message_text", "read_confetti", "read_taubench", "write_conversations"]
