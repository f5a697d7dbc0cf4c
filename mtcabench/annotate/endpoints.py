"""Choosing the endpoint: a given URL, OpenAI when a key is set, else the embedded server.

* ``--base-url`` given: that server (any OpenAI-compatible one); ``--model`` is needed.
* no URL, ``OPENAI_API_KEY`` set: OpenAI's API with ``json_schema`` structured output.
* neither: the embedded llama.cpp server with SmolLM2 (``json_object`` with a schema), started
  here and stopped on exit. This is what the demo runs on a machine with no key.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from mtcabench.annotate.client import OPENAI_BASE_URL, Endpoint, api_key_from_env
from mtcabench.annotate.schemas import RESPONSE_FORMATS
from mtcabench.errors import InputError

#: The model used on OpenAI's API when none is named (supports strict json_schema output).
DEFAULT_OPENAI_MODEL = "gpt-4o-2024-08-06"


@contextlib.contextmanager
def open_endpoint(base_url: str | None = None, model: str | None = None,
                  response_format: str | None = None, *, timeout_s: float = 300.0,
                  max_attempts: int = 6, backoff_s: float = 1.0,
                  server_log: str | None = None) -> Iterator[Endpoint]:
    """The endpoint to annotate with (starting the embedded server when needed)."""
    if response_format is not None and response_format not in RESPONSE_FORMATS:
        raise InputError(f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}, "
                         f"not {response_format!r}")
    key = api_key_from_env()
    common = dict(timeout_s=timeout_s, max_attempts=max_attempts, backoff_s=backoff_s)
    if base_url:
        if not base_url.startswith(("http://", "https://")):
            raise InputError(f"--base-url {base_url!r} is not an http(s) URL")
        if not model:
            raise InputError("--model is required with --base-url (the name the server serves)")
        yield Endpoint(base_url=base_url, model=model, api_key=key,
                       response_format=response_format or "json_schema", **common)
    elif key is not None:
        yield Endpoint(base_url=OPENAI_BASE_URL, model=model or DEFAULT_OPENAI_MODEL,
                       api_key=key, response_format=response_format or "json_schema", **common)
    else:
        from mtcabench.services.llm_server import LocalLLMServer

        with LocalLLMServer(log_path=server_log) as server:
            if model and model != server.model:
                raise InputError(f"the embedded server serves {server.model}, not {model!r}; "
                                 "give --base-url to use another model")
            yield Endpoint(base_url=server.base_url, model=server.model,
                           identity=server.identity, liveness=server.failure,
                           response_format=response_format or "json_object", **common)
