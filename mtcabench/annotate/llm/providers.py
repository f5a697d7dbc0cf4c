"""Where requests go: the endpoint, and a small registry of providers that open one.

A provider turns what the user gave (``--base-url``, ``--model``, environment variables) into
an :class:`Endpoint`, and builds the openai SDK client for it. When no provider is named, the
first that applies wins, by ``priority``:

* ``base-url`` (10): ``--base-url`` given: that OpenAI-compatible server; ``--model`` needed.
* ``azure`` (20): ``AZURE_OPENAI_ENDPOINT`` set: Azure OpenAI (``AZURE_OPENAI_API_KEY``,
  ``OPENAI_API_VERSION``; ``--model`` names the deployment).
* ``openai`` (30): ``OPENAI_API_KEY`` set: OpenAI's API (or ``OPENAI_BASE_URL``).
* ``embedded`` (100): neither: the embedded llama.cpp server, started here and stopped on
  exit, with SmolLM2 or the packaged model ``--model`` names (``qwen2.5-coder-0.5b``,
  ``qwen2.5-coder-1.5b``: mtcabench.services.models). This is what the demo runs on a
  machine with no key.

A new OpenAI-compatible provider is one subclass of :class:`Provider` plus
:func:`register_provider` (docs/annotate.md shows one).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import SecretStr

from mtcabench.errors import InputError
from mtcabench.redact import redact
from mtcabench.registry import Registry

#: The structured-output flavours a server may take: OpenAI's ``json_schema`` or llama.cpp's
#: ``json_object`` with the schema inside (grammar-constrained decoding).
RESPONSE_FORMATS = ("json_schema", "json_object")
#: Requests in flight by default, on an endpoint that serves requests in parallel.
DEFAULT_CONCURRENCY = 4
OPENAI_BASE_URL = "https://api.openai.com/v1"
API_KEY_ENV = "OPENAI_API_KEY"
#: The model used on OpenAI's API when none is named (supports strict json_schema output).
DEFAULT_OPENAI_MODEL = "gpt-4o-2024-08-06"
#: The Batch API's request URL on OpenAI (Azure's has no ``/v1``).
OPENAI_BATCH_URL = "/v1/chat/completions"

SdkFactory = Callable[["Endpoint", Any, Any], Any]


def secret_from_env(name: str) -> SecretStr | None:
    """The value of environment variable ``name`` as a secret, or None when unset or blank."""
    value = os.environ.get(name, "").strip()
    return SecretStr(value) if value else None


def api_key_from_env() -> SecretStr | None:
    """The API key from ``OPENAI_API_KEY``, or None."""
    return secret_from_env(API_KEY_ENV)


def openai_sdk(endpoint: Endpoint, http_client: Any, timeout: Any) -> Any:
    """The openai SDK client of a plain OpenAI-compatible endpoint.

    ``max_retries=0``: retries are ours (tenacity, honouring Retry-After), so that every
    attempt is counted and the embedded server's death is noticed between attempts.
    """
    import openai  # imported here: a second of start-up that only runs sending requests pay

    # The SDK refuses to start without a key; a keyless server (llama.cpp, a local vLLM)
    # gets a placeholder, and the client omits the Authorization header it would make.
    key = endpoint.api_key.get_secret_value() if endpoint.api_key else "no-key"
    return openai.OpenAI(api_key=key, base_url=endpoint.base_url, http_client=http_client,
                         timeout=timeout, max_retries=0)


@dataclass(frozen=True)
class Endpoint:
    """Where requests go, how the server takes structured output, and how to talk to it."""

    base_url: str
    model: str
    #: Identity of the endpoint in cache keys (the base URL unless the server is the embedded
    #: one, whose port changes from run to run while its answers do not).
    identity: str = ""
    api_key: SecretStr | None = field(default=None, repr=False)
    response_format: str = "json_schema"
    #: Requests in flight by default (1 for a server that answers one at a time).
    concurrency: int = DEFAULT_CONCURRENCY
    #: A small local model with a short context: callers should send compact prompts.
    compact: bool = False
    batch_url: str = OPENAI_BATCH_URL
    #: Named in the message of a 401/403: where the key came from.
    key_env: str = API_KEY_ENV
    #: The end of the message when the endpoint cannot be reached.
    unreachable_hint: str = "is the server running? Check --base-url"
    #: For a server we started ourselves: says why its process is gone (None while it runs),
    #: so that a dropped connection to our own crashed child is reported as that crash.
    liveness: Callable[[], str | None] | None = field(default=None, repr=False, compare=False)
    #: Builds the SDK client (default: ``openai.OpenAI``; Azure's provider gives its own).
    sdk: SdkFactory = field(default=openai_sdk, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        if not self.identity:  # shown and stored: never with a password the URL holds
            object.__setattr__(self, "identity", redact(self.base_url, self.secrets()))

    def secrets(self) -> list[str]:
        """What must never be stored or shown (the key, and a password written into the
        base URL as ``user:password@``), for redaction."""
        out = [self.api_key.get_secret_value()] if self.api_key else []
        with contextlib.suppress(ValueError):
            password = urllib.parse.urlsplit(self.base_url).password
            if password:
                out += [password, urllib.parse.unquote(password)]
        return out


@dataclass(frozen=True)
class EndpointRequest:
    """What the user asked for; a provider fills in the rest."""

    base_url: str | None = None
    model: str | None = None
    response_format: str | None = None  # default: the provider's
    server_log: str | None = None  # where the embedded server logs (default: a temp file)


class Provider(ABC):
    """One way of reaching an OpenAI-compatible endpoint."""

    name: ClassVar[str]
    #: One line for ``--help`` and the docs.
    summary: ClassVar[str]
    #: Lower is tried first when no provider is named.
    priority: ClassVar[int]

    @abstractmethod
    def applies(self, want: EndpointRequest) -> bool:
        """Whether this provider is the one meant when none is named."""

    @abstractmethod
    def open(self, want: EndpointRequest) -> contextlib.AbstractContextManager[Endpoint]:
        """The endpoint (a server started for it is stopped when the context ends)."""


#: Providers by name (``--provider``); the built-in ones are defined below.
PROVIDERS: Registry[type[Provider]] = Registry("provider")


def register_provider(cls: type[Provider]) -> type[Provider]:
    """Add a provider (usable as a class decorator); the registry's one rule: the same class
    again is harmless, another class under a taken name is an error."""
    return PROVIDERS.register(cls)


def unregister_provider(name: str) -> None:
    PROVIDERS.unregister(name)


def _by_priority() -> list[type[Provider]]:
    return sorted(PROVIDERS.load_all().values(), key=lambda c: c.priority)


def provider_names() -> list[str]:
    """The registered providers, in the order they are tried."""
    return [c.name for c in _by_priority()]


def choose_provider(want: EndpointRequest, name: str | None = None) -> Provider:
    """The named provider, else the first that applies."""
    if name:
        if name not in PROVIDERS:
            raise InputError(f"--provider must be one of {', '.join(provider_names())}, "
                             f"not {name!r}")
        return PROVIDERS.get(name)()
    for cls in _by_priority():
        provider = cls()
        if provider.applies(want):
            return provider
    raise InputError("no provider applies; give --base-url")  # pragma: no cover - embedded


def open_endpoint(want: EndpointRequest, provider: str | None = None
                  ) -> contextlib.AbstractContextManager[Endpoint]:
    """The endpoint to annotate with (starting the embedded server when it is the one)."""
    if want.response_format is not None and want.response_format not in RESPONSE_FORMATS:
        raise InputError(f"--response-format must be one of {', '.join(RESPONSE_FORMATS)}, "
                         f"not {want.response_format!r}")
    return choose_provider(want, provider).open(want)


def _check_url(url: str, what: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise InputError(f"{what} {url!r} is not an http(s) URL")


@register_provider
class BaseUrlProvider(Provider):
    name = "base-url"
    summary = "the server --base-url names (vLLM, llama.cpp, OpenAI, ...); needs --model"
    priority = 10

    def applies(self, want: EndpointRequest) -> bool:
        return bool(want.base_url)

    @contextlib.contextmanager
    def open(self, want: EndpointRequest) -> Iterator[Endpoint]:
        if not want.base_url:
            raise InputError("--provider base-url needs --base-url")
        _check_url(want.base_url, "--base-url")
        if not want.model:
            raise InputError("--model is required with --base-url (the name the server serves)")
        yield Endpoint(base_url=want.base_url, model=want.model, api_key=api_key_from_env(),
                       response_format=want.response_format or "json_schema")


@register_provider
class AzureProvider(Provider):
    name = "azure"
    summary = ("Azure OpenAI at AZURE_OPENAI_ENDPOINT (key AZURE_OPENAI_API_KEY, "
               "OPENAI_API_VERSION); --model names the deployment")
    priority = 20
    ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
    KEY_ENV = "AZURE_OPENAI_API_KEY"
    VERSION_ENV = "OPENAI_API_VERSION"

    def applies(self, want: EndpointRequest) -> bool:
        return bool(os.environ.get(self.ENDPOINT_ENV, "").strip())

    @contextlib.contextmanager
    def open(self, want: EndpointRequest) -> Iterator[Endpoint]:
        url = (want.base_url or os.environ.get(self.ENDPOINT_ENV, "")).strip()
        version = os.environ.get(self.VERSION_ENV, "").strip()
        key = secret_from_env(self.KEY_ENV)
        for value, what in ((url, self.ENDPOINT_ENV), (key, self.KEY_ENV),
                            (version, self.VERSION_ENV)):
            if not value:
                raise InputError(f"Azure OpenAI needs {what} to be set")
        _check_url(url, self.ENDPOINT_ENV)
        if not want.model:
            raise InputError("--model is required with Azure OpenAI (the deployment name)")
        yield Endpoint(base_url=url, model=want.model, api_key=key,
                       identity=f"azure:{url.rstrip('/')}?api-version={version}",
                       response_format=want.response_format or "json_schema",
                       batch_url="/chat/completions", key_env=self.KEY_ENV,
                       unreachable_hint=f"check {self.ENDPOINT_ENV}",
                       sdk=lambda ep, http, timeout: _azure_sdk(ep, http, timeout, version))


def _azure_sdk(endpoint: Endpoint, http_client: Any, timeout: Any, version: str) -> Any:
    import openai

    return openai.AzureOpenAI(azure_endpoint=endpoint.base_url, api_version=version,
                              api_key=endpoint.api_key.get_secret_value(),
                              http_client=http_client, timeout=timeout, max_retries=0)


@register_provider
class OpenAIProvider(Provider):
    name = "openai"
    summary = (f"OpenAI's API when {API_KEY_ENV} is set (at OPENAI_BASE_URL if set); model "
               f"{DEFAULT_OPENAI_MODEL} unless --model")
    priority = 30

    def applies(self, want: EndpointRequest) -> bool:
        return api_key_from_env() is not None

    @contextlib.contextmanager
    def open(self, want: EndpointRequest) -> Iterator[Endpoint]:
        key = api_key_from_env()
        if key is None:
            raise InputError(f"OpenAI's API needs {API_KEY_ENV} to be set")
        url = os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_BASE_URL
        _check_url(url, "OPENAI_BASE_URL")
        yield Endpoint(base_url=url, model=want.model or DEFAULT_OPENAI_MODEL, api_key=key,
                       response_format=want.response_format or "json_schema",
                       unreachable_hint="check the network (and OPENAI_BASE_URL if set)")


@register_provider
class EmbeddedProvider(Provider):
    name = "embedded"
    summary = ("the embedded llama.cpp server, started for the run: SmolLM2-135M, or the "
               "packaged model --model names")
    priority = 100
    #: llama-cpp-python's server answers one request at a time: more in flight would only
    #: queue there, and a queued request can time out while it waits.
    concurrency = 1

    def applies(self, want: EndpointRequest) -> bool:
        return True

    @staticmethod
    def model(name: str | None) -> str | None:
        """What the server is started with for ``--model``: a packaged model (its name, an
        alias, or the GGUF file name it is served under, as records name it) or a GGUF file
        that exists; None (the server's default) when no model is named or the name is the
        file name of ``MTCABENCH_LLM_MODEL``'s GGUF. Any other name is one InputError
        listing the packaged models, before anything starts."""
        from mtcabench.services.llm_server import MODEL_ENV
        from mtcabench.services.models import lookup, model_names

        if not name:
            return None
        if lookup(name) is not None or (name.endswith(".gguf") and os.path.isfile(name)):
            return name
        default = os.environ.get(MODEL_ENV, "").strip()
        if default and name == os.path.basename(default):
            return None
        raise InputError(f"the embedded server serves the packaged models "
                         f"{', '.join(model_names())} (or a .gguf file), not {name!r}; give "
                         "--base-url to use another server's model")

    @contextlib.contextmanager
    def open(self, want: EndpointRequest) -> Iterator[Endpoint]:
        from mtcabench.services.llm_server import LocalLLMServer

        model = self.model(want.model)
        with LocalLLMServer(model, log_path=want.server_log) as server:
            yield Endpoint(base_url=server.base_url, model=server.model,
                           identity=server.identity, liveness=server.failure,
                           response_format=want.response_format or "json_object",
                           concurrency=self.concurrency, compact=True,
                           unreachable_hint="the embedded server did not answer")
