"""The annotation transport: requests to an OpenAI-compatible endpoint, and their answers.

It imports nothing from the rest of :mod:`mtcabench.annotate`: a request
(:class:`~.wire.ChatRequest`) is an opaque chat body with its cache key and sizes, and an
answer (:class:`~.wire.Answer`) is what a completion said. Its parts, one module each:

* :mod:`.providers`: the endpoint, and the provider registry that opens one (a given URL,
  Azure OpenAI, OpenAI, the embedded llama.cpp server);
* :mod:`.client`: the openai SDK client with our retries (:mod:`.policy`), a whole-request
  deadline (:mod:`.deadline`) and one redaction of secrets (:mod:`.redact`);
* :mod:`.executor`: cache first, then the endpoint, a bounded number in flight;
* :mod:`.cache`: every answer paid for, in SQLite;
* :mod:`.batch`: the OpenAI Batch API through the SDK's Files and Batches APIs;
* :mod:`.accounting`: counters and the budget guard.

The SDK itself is imported only by :mod:`.client` (and the providers' client factories), so
reading the defaults here costs no SDK import.
"""

from mtcabench.annotate.llm.accounting import Accounting, Budget, Prices
from mtcabench.annotate.llm.cache import ResponseCache
from mtcabench.annotate.llm.executor import NotAnswered, Outcome, RequestExecutor
from mtcabench.annotate.llm.policy import RequestFailed, RetryPolicy
from mtcabench.annotate.llm.providers import (
    PROVIDERS,
    RESPONSE_FORMATS,
    Endpoint,
    EndpointRequest,
    Provider,
    open_endpoint,
    provider_names,
    register_provider,
    unregister_provider,
)
from mtcabench.annotate.llm.redact import Redactor
from mtcabench.annotate.llm.wire import Answer, ChatRequest, request_key

__all__ = [
    "PROVIDERS",
    "RESPONSE_FORMATS",
    "Accounting",
    "Answer",
    "Budget",
    "ChatRequest",
    "Endpoint",
    "EndpointRequest",
    "NotAnswered",
    "Outcome",
    "Prices",
    "Provider",
    "Redactor",
    "RequestExecutor",
    "RequestFailed",
    "ResponseCache",
    "RetryPolicy",
    "open_endpoint",
    "provider_names",
    "register_provider",
    "request_key",
    "unregister_provider",
]
