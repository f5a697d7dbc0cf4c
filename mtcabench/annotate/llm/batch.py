"""The OpenAI Batch API: write the requests to a file, submit, poll, collect into the cache.

A batch round is: every request the caller could not answer from the cache is written to
a JSON Lines file (``custom_id`` = the request's cache key, ``body`` = the exact chat body);
the file is uploaded (the SDK's Files API: ``POST /files``, purpose ``batch``), a batch is
created (Batches API: ``POST /batches``), polled (``GET /batches/{id}``) until it ends, and
its output and error files are read back (``GET /files/{id}/content``). Each answer goes into
the response cache under its ``custom_id``, so the caller's next pass writes the same records
an online run would. The batch id is saved before polling starts: a run killed while waiting
resumes polling the same batch instead of paying for it twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mtcabench.annotate.llm.accounting import Accounting
from mtcabench.annotate.llm.cache import ResponseCache
from mtcabench.annotate.llm.policy import RequestFailed
from mtcabench.annotate.llm.providers import OPENAI_BATCH_URL
from mtcabench.annotate.llm.wire import Answer, ChatRequest
from mtcabench.errors import InputError, ServiceError
from mtcabench.io import JSONError, atomic_write, loads, parse_json, split_lines

if TYPE_CHECKING:
    from mtcabench.annotate.llm.client import ApiClient

#: The Batch API's price, as a share of the online price (its answers take up to 24 h).
BATCH_DISCOUNT = 0.5
#: Seconds between status polls of a batch (``--batch-poll``).
POLL_S = 30.0
#: How long a batch may take before we stop waiting (its window is 24 h).
MAX_WAIT_S = 26 * 3600.0
#: The API's limits per batch file (requests, bytes); we stay under both.
MAX_REQUESTS = 50_000
MAX_BYTES = 190 * 1024 * 1024
TERMINAL = ("completed", "failed", "expired", "cancelled")


class BatchCollector:
    """Collects missed requests into batch input files (split at the API's limits)."""

    def __init__(self, folder: str | Path, prefix: str = "batch", url: str = OPENAI_BATCH_URL):
        self.folder = Path(folder)
        self.prefix = prefix
        self.url = url  # the chat URL the batch lines name (Azure's has no /v1)
        self.files: list[Path] = []
        self.keys: set[str] = set()
        self._fh = None
        self._lines = 0
        self._bytes = 0

    def add(self, request: ChatRequest) -> None:
        if request.key in self.keys:  # the same request from two places: pay for it once
            return
        line = json.dumps({"custom_id": request.key, "method": "POST", "url": self.url,
                           "body": request.body}, ensure_ascii=False) + "\n"
        data = line.encode("utf-8")
        if self._fh is None or self._lines >= MAX_REQUESTS or self._bytes + len(data) > MAX_BYTES:
            self._open_next()
        self._fh.write(data)
        self._lines += 1
        self._bytes += len(data)
        self.keys.add(request.key)

    def _open_next(self) -> None:
        self.close()
        path = self.folder / f"{self.prefix}-input-{len(self.files) + 1}.jsonl"
        self._fh = path.open("wb")
        self.files.append(path)
        self._lines = self._bytes = 0

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def discard(self) -> None:
        """Remove the input files (a round that could not be submitted leaves none behind)."""
        self.close()
        for path in self.files:
            path.unlink(missing_ok=True)
        self.files.clear()

    def __len__(self) -> int:
        return len(self.keys)


@dataclass
class BatchResult:
    """What one batch brought back."""

    batch_id: str
    status: str
    answered: int = 0
    errors: dict[str, str] = field(default_factory=dict)  # custom_id -> reason

    def as_dict(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for r in self.errors.values():
            reasons[r] = reasons.get(r, 0) + 1
        return {"batch_id": self.batch_id, "status": self.status, "answered": self.answered,
                "errors_by_reason": reasons}


class BatchState:
    """The batches submitted and not yet collected (a small JSON file), for resuming."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def pending(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        data = parse_json(self.path.read_bytes(), self.path)
        if not isinstance(data, dict) or not isinstance(data.get("pending", []), list):
            raise InputError.at(self.path, "not a batch state file (a JSON object with a "
                                "'pending' list); delete it to start the batches afresh")
        return data.get("pending", [])

    def _save(self, pending: list[dict[str, Any]]) -> None:
        with atomic_write(self.path) as fh:
            json.dump({"pending": pending}, fh, indent=1)

    def add(self, entry: dict[str, Any]) -> None:
        self._save([*self.pending(), entry])

    def remove(self, batch_id: str) -> None:
        self._save([e for e in self.pending() if e["batch_id"] != batch_id])


class BatchRunner:
    """Submits, polls and collects batches through one endpoint."""

    def __init__(self, client: ApiClient, cache: ResponseCache, accounting: Accounting,
                 state: BatchState, *, poll_s: float = POLL_S, max_wait_s: float = MAX_WAIT_S,
                 log: Callable[[str], None] = lambda msg: None,
                 sleep: Callable[[float], None] = time.sleep):
        self.client = client
        self.cache = cache
        self.accounting = accounting
        self.state = state
        self.poll_s = poll_s
        self.max_wait_s = max_wait_s
        self.log = log
        self.sleep = sleep

    def _request(self, call: Any, *, what: str, parse: Any = None, whole: bool = True) -> Any:
        """One SDK call with retries; its JSON body (redacted) unless ``parse`` says else."""
        try:
            return self.client.request(call, what=what, parse=parse or self.client.json,
                                       whole=whole)
        except RequestFailed as exc:
            raise ServiceError(f"{what} failed after every retry ({exc}); submitted batches "
                               f"are saved in {self.state.path}, rerun to resume") from None

    def submit(self, path: Path, n_requests: int) -> str:
        """Upload one input file and create its batch; the id is saved before returning."""
        url = self.client.endpoint.batch_url
        upload = self._request(
            lambda sdk, h: sdk.files.with_raw_response.create(
                file=(path.name, path.read_bytes(), "application/jsonl"), purpose="batch",
                extra_headers=h),
            what="batch file upload", parse=lambda r: self.client.json(r)["id"], whole=False)
        batch = self._request(
            lambda sdk, h: sdk.batches.with_raw_response.create(
                input_file_id=upload, endpoint=url, completion_window="24h",
                metadata={"source": "mtcabench annotate"}, extra_headers=h),
            what="batch creation", parse=lambda r: self.client.json(r)["id"])
        self.state.add({"batch_id": batch, "input_file_id": upload, "requests": n_requests,
                        "input": str(path), "submitted_at": time.time()})
        self.log(f"batch {batch}: submitted {n_requests} requests (file {upload})")
        return batch

    def wait_and_collect(self, batch_id: str) -> BatchResult:
        """Poll until the batch ends, then read its output and error files into the cache."""
        started = time.monotonic()
        while True:
            info = self._request(
                lambda sdk, h: sdk.batches.with_raw_response.retrieve(batch_id, extra_headers=h),
                what=f"batch {batch_id} status")
            status = info.get("status", "?")
            counts = info.get("request_counts") or {}
            self.log(f"batch {batch_id}: {status} ({counts.get('completed', 0)}/"
                     f"{counts.get('total', '?')} done, {counts.get('failed', 0)} failed)")
            if status in TERMINAL:
                break
            if time.monotonic() - started > self.max_wait_s:
                raise ServiceError(f"batch {batch_id} still {status} after "
                                   f"{self.max_wait_s / 3600:.0f} h; rerun later to collect it")
            self.sleep(self.poll_s)
        result = BatchResult(batch_id=batch_id, status=status)
        if info.get("output_file_id"):
            self._read_output(info["output_file_id"], result)
        if info.get("error_file_id"):
            self._read_output(info["error_file_id"], result)
        if status != "completed" and not result.answered:
            errors = (info.get("errors") or {}).get("data") or []
            detail = "; ".join(str(e.get("message", e)) for e in errors[:3]) or status
            self.state.remove(batch_id)
            raise ServiceError(f"batch {batch_id} ended {status} with no answers: {detail}")
        self.state.remove(batch_id)
        self.accounting.clear_reservations()
        return result

    def _read_output(self, file_id: str, result: BatchResult) -> None:
        text = self._request(
            lambda sdk, h: sdk.files.with_raw_response.content(file_id, extra_headers=h),
            what="batch results", parse=lambda r: self.client.redactor.text(r.text),
            whole=False)
        for line in split_lines(text):
            if not line.strip():
                continue
            try:
                item = loads(line)
                key = item["custom_id"]
            except (JSONError, KeyError, TypeError):
                result.errors[f"line-{len(result.errors)}"] = "unreadable result line"
                continue
            response = item.get("response") or {}
            error = item.get("error")
            if error or response.get("status_code") != 200:
                reason = (error or {}).get("code") or f"http-{response.get('status_code')}"
                result.errors[key] = str(reason)
                self.accounting.failed(f"batch:{reason}")
                continue
            try:
                answer = Answer.from_completion(response["body"])
            except (KeyError, IndexError, TypeError):
                result.errors[key] = "unreadable completion"
                self.accounting.failed("batch:bad-response")
                continue
            self.cache.put(key, answer)
            self.accounting.answered(answer.prompt_tokens, answer.completion_tokens)
            result.answered += 1
