"""The API key travels in the Authorization header only: never in outputs, cache or logs."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.annotate_data import good_propose_table, good_verify
from tests.support.annotate_fakes import FakeOpenAI, script_responder


def cli(args: list[str], key: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "OPENAI_API_KEY": key, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "mtcabench", *args], env=env, cwd=cwd,
                          capture_output=True, timeout=300)


@pytest.mark.slow
def test_api_key_never_appears_in_outputs_cache_or_logs(tiny_path, tmp_path):
    key = f"sk-mtca-{secrets.token_hex(16)}"
    out = tmp_path / "out"
    (tmp_path / "p").mkdir()
    runs = []
    with FakeOpenAI(script_responder(good_propose_table(), default_verify=good_verify),
                    api_key=key) as fake:
        fake.faults.extend(["429", "500"])  # retries are logged: they must not leak it either
        common = ["--base-url", fake.base_url, "--model", "fake", "--no-progress",
                  "--backoff", "0.01"]
        runs.append(cli(["annotate", "run", str(tiny_path), "-o", str(out), *common], key,
                        tmp_path))
        runs.append(cli(["annotate", "run", str(tiny_path), "-o", str(tmp_path / "batch"),
                         "--annotators", "llm", "--batch", "--batch-poll", "0.01", *common],
                        key, tmp_path))
        runs.append(cli(["annotate", "propose", str(tiny_path), "-o",
                         str(tmp_path / "p" / "p.jsonl"), *common], "sk-wrong-" + key, tmp_path))
        auth = {r.headers.get("Authorization") for r in fake.requests}
    assert runs[0].returncode == 0, runs[0].stderr.decode()
    assert runs[1].returncode == 0, runs[1].stderr.decode()
    assert runs[2].returncode == 4 and b"HTTP 401" in runs[2].stderr
    # The key was really sent (in the header), so its absence below means something.
    assert f"Bearer {key}" in auth
    assert (out / "candidates.jsonl").stat().st_size > 0
    assert (out / "annotate-cache.sqlite").exists()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) >= 8
    secret = key.encode()
    for path in files:
        assert secret not in path.read_bytes(), f"the API key leaked into {path}"
    for r in runs:
        assert secret not in r.stdout and secret not in r.stderr
