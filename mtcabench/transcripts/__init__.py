"""Agent logs as agents write them, read into :class:`~mtcabench.model.Conversation` records.

The format layer's one reader, used by ``ingest transcripts``, ``ingest taubench``,
``ingest tau2``, ``ingest confetti``, ``explain``, :func:`mtcabench.explain` and the online
``Tracer``. Each format is one module declaring a :class:`LogFormat` (how it recognises and
reads its whole files and, where it has them, its single messages), registered in
:data:`FORMATS` (the built-in ones listed in :data:`BUILT_IN`; a new format is one module and
a :func:`register_format`): OpenAI chat, OpenAI Responses, Anthropic Messages, OpenTelemetry
GenAI spans (OTLP JSON), Inspect AI eval logs (``.json`` and ``.eval``), plus TauBench runs,
tau2-bench results, ConFETTI dialogs and our own conversation records. A file's format is
recognised from its shape (:func:`detect`), a single message's from its own
(:func:`detect_message`, what the Tracer's :class:`LiveReader` asks); ``format=`` forces one.

**The mapping, the same for every format** (so the same conversation gives the same turns
whatever it was logged in):

1. System instructions are turn 0 (Responses ``instructions``, Anthropic's top-level
   ``system``, OpenTelemetry ``gen_ai.system_instructions``, a ``system`` or ``developer``
   message).
2. One model response is one assistant turn: its text and its tool calls (an assistant
   message with ``tool_calls``; Responses' ``message`` and ``function_call`` items between
   two inputs; an Anthropic assistant message with its ``text`` and ``tool_use`` blocks; a
   GenAI output message with ``text`` and ``tool_call`` parts).
3. Every tool result is its own tool turn, in the log's order, answering its call by id (the
   latest call with that id issued before it) and named after that call's tool; a result
   answering no earlier call is refused. Several results in one message (Anthropic
   ``tool_result`` blocks, GenAI ``tool_call_response`` parts) are several turns; text
   beside them in the same message is a user turn after them.
4. Text parts of a message are joined one per line, as ingest joins chat content parts
   (:mod:`mtcabench.openai_content`); a part without text (image, audio, file, document) is
   kept as a placeholder, ``[image]``, ``[audio]`` or ``[file]``, where it was.
5. Reasoning is dropped: Responses ``reasoning`` items, Anthropic ``thinking`` and
   ``redacted_thinking`` blocks, GenAI ``reasoning`` parts and Inspect ``reasoning``
   content are not part of any turn (they are hidden, summarised or encrypted in most logs,
   and the chat format has no place for them, so keeping them would make formats disagree).
   A response with nothing but reasoning gives no turn.
6. Anything else the reader cannot place (a built-in tool item, an unknown block or part
   type, a result answering no call, broken JSON in an attribute) is refused with one line
   (:class:`~mtcabench.errors.InputError`, exit 3) naming the file, the format, the item and
   what to do. Nothing is guessed.

Ids are stable: the file name's stem, followed by the log's own ids where one file holds
several conversations (an OpenTelemetry trace or ``gen_ai.conversation.id``, an Inspect
sample and epoch); a benchmark's runs (TauBench, tau2-bench) are named by what they are
(source, domain, agent, task, trial). ``metadata.origin`` names the file, the format and
those ids. Metadata is built by name from one allow-list for every reader
(:data:`~mtcabench.model.METADATA_KEYS`): no reader copies a run's settings.
"""

# The formats register themselves from the modules listed in _registry.BUILT_IN, imported
# when the registry is first asked for them.
from mtcabench.transcripts._chat import (
    TRANSCRIPT_SOURCE,
    MessageReader,
    content_text,
    conversation_from_messages,
)
from mtcabench.transcripts._confetti import read_confetti
from mtcabench.transcripts._live import LiveReader
from mtcabench.transcripts._reading import (
    choose,
    conversations_from_value,
    id_stems,
    read_conversations,
    read_transcript,
)
from mtcabench.transcripts._registry import (
    BUILT_IN,
    FORMATS,
    NO,
    PLAUSIBLE,
    SURE,
    LogFormat,
    detect,
    detect_message,
    format_names,
    formats,
    formats_help,
    get_format,
    register_format,
)
from mtcabench.transcripts._domains import DOMAIN_TOOLS, policy_domain, run_domain
from mtcabench.transcripts._source import Source, load
from mtcabench.transcripts._targets import last_answer, target_span
from mtcabench.transcripts._tau2 import conversation_id as tau2_id
from mtcabench.transcripts._tau2 import read_tau2
from mtcabench.transcripts._taubench import conversation_id as taubench_id
from mtcabench.transcripts._taubench import read_taubench
from mtcabench.transcripts._taubench import run_conversation as taubench_conversation
from mtcabench.transcripts._turns import TurnBuilder, check_text

__all__ = [
    "BUILT_IN",
    "DOMAIN_TOOLS",
    "FORMATS",
    "NO",
    "PLAUSIBLE",
    "SURE",
    "TRANSCRIPT_SOURCE",
    "LiveReader",
    "LogFormat",
    "MessageReader",
    "Source",
    "TurnBuilder",
    "choose",
    "content_text",
    "conversation_from_messages",
    "conversations_from_value",
    "detect",
    "detect_message",
    "format_names",
    "formats",
    "formats_help",
    "get_format",
    "id_stems",
    "last_answer",
    "load",
    "policy_domain",
    "read_confetti",
    "read_conversations",
    "read_tau2",
    "read_taubench",
    "read_transcript",
    "register_format",
    "run_domain",
    "check_text",
    "target_span",
    "tau2_id",
    "taubench_conversation",
    "taubench_id",
]
