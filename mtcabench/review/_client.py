"""The connection to a Label Studio server: settings, one clear error, request counting.

The URL and API key come from flags or ``LABEL_STUDIO_URL`` / ``LABEL_STUDIO_API_KEY``.
The key is held as a :class:`pydantic.SecretStr`, unwrapped only to build the client, and
registered with :mod:`mtcabench.redact`: a server echoing it (in a JSON body, an error page's
title) cannot get it into a message, a log or a file.
"""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from label_studio_sdk import LabelStudio
from label_studio_sdk.core.api_error import ApiError
from pydantic import SecretStr

from mtcabench.errors import InputError, ServiceError
from mtcabench.redact import clip, register_secret

URL_ENV = "LABEL_STUDIO_URL"
KEY_ENV = "LABEL_STUDIO_API_KEY"

T = TypeVar("T")


@dataclass(frozen=True)
class Connection:
    """Where the Label Studio server is and the key to use (the key never prints)."""

    url: str
    api_key: SecretStr

    @classmethod
    def resolve(cls, url: str | None = None, api_key: str | None = None) -> Connection | None:
        """From the arguments, else the environment; None when neither gives both."""
        url = url or os.environ.get(URL_ENV) or None
        key = api_key or os.environ.get(KEY_ENV) or None
        if url and not url.startswith(("http://", "https://")):
            raise InputError(f"Label Studio URL {url!r} must start with http:// or https:// "
                             f"(--url or {URL_ENV})")
        register_secret(key)  # a key given by flag is redacted like the environment's
        if url and key:
            return cls(url=url.rstrip("/"), api_key=SecretStr(key))
        return None

    @classmethod
    def require(cls, url: str | None = None, api_key: str | None = None) -> Connection:
        """Like :meth:`resolve`, but a missing URL or key is an error naming the variable."""
        conn = cls.resolve(url, api_key)
        if conn is None:
            missing = [name for name, flag, value in
                       ((URL_ENV, "--url", url), (KEY_ENV, "--api-key", api_key))
                       if not (value or os.environ.get(name))]
            raise InputError(
                "Label Studio is not configured: set " + " and ".join(missing)
                + " (or pass --url / --api-key); `mtcabench review serve` starts a local server"
            )
        return conn


class ReviewClient:
    """A Label Studio SDK client whose failures become one :class:`ServiceError` line.

    ``requests`` counts the HTTP requests sent, for the benchmark and the summaries.
    """

    def __init__(self, connection: Connection, *, timeout: float = 300.0,
                 liveness: Callable[[], str | None] | None = None):
        self.url = connection.url
        self.requests = 0
        #: For a server we started: why its process is gone (None while it runs).
        self.liveness = liveness
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=10.0),
            event_hooks={"request": [self._count]},
            follow_redirects=True,
        )
        self.sdk = LabelStudio(
            base_url=connection.url,
            api_key=connection.api_key.get_secret_value(),
            httpx_client=self._http,
            max_retries=0,  # a refused key or a dead server should fail at once, not thrice
        )

    def _count(self, request: httpx.Request) -> None:
        self.requests += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ReviewClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one SDK call; connection failures and error answers become ServiceError."""
        try:
            return fn(*args, **kwargs)
        except httpx.TimeoutException:
            raise ServiceError(
                f"Label Studio at {self.url} did not answer in time ({what}); is it overloaded?"
            ) from None
        except httpx.HTTPError as exc:
            self._raise_if_dead()
            raise ServiceError(
                f"cannot reach Label Studio at {self.url} ({what}: {type(exc).__name__}); "
                f"is the server running and {URL_ENV} (or --url) right?"
            ) from None
        except ApiError as exc:
            raise self._api_error(what, exc) from None

    def _raise_if_dead(self, grace_s: float = 2.0) -> None:
        """A dropped connection to our own server that died is reported as its death."""
        if self.liveness is None:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            why = self.liveness()
            if why is not None:
                raise ServiceError(why)
            time.sleep(0.1)

    def _api_error(self, what: str, exc: ApiError) -> ServiceError:
        code = exc.status_code
        if code in (401, 403):
            return ServiceError(
                f"Label Studio at {self.url} refused the API key (HTTP {code}, {what}); check "
                f"{KEY_ENV} (or --api-key): it is the legacy token under Account & Settings"
            )
        if code is None:  # the SDK raises ApiError without a status for some client errors
            return ServiceError(f"Label Studio client error ({what}): {summarize_body(exc.body)}")
        body = exc.body if isinstance(exc.body, str) else repr(exc.body)
        if _looks_like_html(body, exc.headers):
            # A proxy's error page or another web site: its title, never the page.
            title = _html_title(body)
            return ServiceError(
                f"Label Studio at {self.url} answered HTTP {code} to {what} with a web page"
                + (f" ({title!r})" if title else "") + ", not Label Studio's API: is the URL "
                f"right ({URL_ENV} or --url), and the server up?")
        return ServiceError(f"Label Studio at {self.url} answered HTTP {code} to {what}: "
                            f"{summarize_body(body)}")

    def check(self) -> dict:
        """Who the key belongs to; fails with ServiceError if the server or the key is wrong."""
        user = self.call("checking the API key", self.sdk.users.whoami)
        return user.model_dump() if hasattr(user, "model_dump") else dict(user)

    def raw_get(self, what: str, path: str, **params: Any) -> Any:
        """GET a JSON endpoint the SDK does not cover well; errors as in :meth:`call`."""
        def get() -> Any:
            r = self._http.get(f"{self.url}{path}", params=params,
                               headers={"Authorization": self._auth_header()})
            if r.status_code >= 400:
                raise ApiError(status_code=r.status_code, body=r.text, headers=dict(r.headers))
            try:
                return r.json()
            except ValueError:  # a page, not JSON: reported like an error answer
                raise ApiError(status_code=r.status_code, body=r.text,
                               headers=dict(r.headers)) from None
        return self.call(what, get)

    def _auth_header(self) -> str:
        return self.sdk._client_wrapper.get_headers().get("Authorization", "")


def _looks_like_html(body: str, headers: dict[str, str] | None) -> bool:
    ctype = next((v for k, v in (headers or {}).items() if k.lower() == "content-type"), "")
    head = body.lstrip()[:200].lower()
    return "html" in ctype.lower() or head.startswith(("<!doctype", "<html", "<head", "<body"))


def _html_title(body: str) -> str:
    m = re.search(r"<title[^>]*>(.*?)</title>", body, re.IGNORECASE | re.DOTALL)
    return clip(" ".join(html.unescape(m.group(1)).split()), 80) if m else ""


def summarize_body(body: Any, limit: int = 200) -> str:
    """An error body as one short line: whitespace collapsed, redacted, then cut at ``limit``
    characters (redacted first, so that a cut never leaves part of a key)."""
    return clip(" ".join((body if isinstance(body, str) else repr(body)).split()), limit)
