"""Ingest: turn raw agent conversations (TauBench, ConFETTI) into validated Conversation records.

Each source has an adapter module; both write through :func:`write_conversations`, which
refuses duplicate ids and writes atomically. :func:`ingest_taubench` and
:func:`ingest_confetti` are the commands (an output that is an input is refused).
:func:`message_text` reads OpenAI chat message content (text or a list of parts) for any
reader of OpenAI-style transcripts.
"""

from mtcabench.ingest._common import write_conversations
from mtcabench.ingest._entry import ingest_confetti, ingest_taubench
from mtcabench.ingest.confetti import read_confetti
from mtcabench.openai_content import ContentError, message_text
from mtcabench.ingest.taubench import read_taubench

__all__ = ["ContentError", "ingest_confetti", "ingest_taubench", "message_text", "read_confetti",
           "read_taubench", "write_conversations"]
