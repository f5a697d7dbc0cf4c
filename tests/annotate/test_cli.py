"""`mtcabench annotate propose|verify|run` through the CLI: both phases, and every bad input."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import iter_json_lines

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def records(path):
    return {obj["id"]: obj for _, obj in iter_json_lines(path)}


def test_propose_then_verify_matches_run(fake_openai, tiny_path, tmp_path):
    common = ["--base-url", fake_openai.base_url, "--model", "fake", "--no-progress"]
    res = invoke("annotate", "propose", tiny_path, "-o", tmp_path / "p.jsonl", *common)
    assert res.exit_code == 0, res.output
    assert "spans proposed (llm)" in res.output and "6 (6 kept, 0 rejected)" in res.output
    res = invoke("annotate", "verify", tiny_path, tmp_path / "p.jsonl", "-o",
                 tmp_path / "c.jsonl", *common)
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "c-summary.json").read_text())["cache_hits"] == 0
    res = invoke("annotate", "run", tiny_path, "-o", tmp_path / "run", "--annotators", "llm",
                 "--cache", tmp_path / "annotate-cache.sqlite", *common)
    assert res.exit_code == 0, res.output
    # Same cache: the run sent nothing, and wrote the same records.
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["requests_sent"] == 0 and summary["cache_hits"] == 9
    def strip(recs):
        return {k: {**v, "created_at": None} for k, v in recs.items()}
    assert strip(records(tmp_path / "c.jsonl")) == strip(records(tmp_path / "run" /
                                                                 "candidates.jsonl"))
    assert strip(records(tmp_path / "p.jsonl")) == strip(records(tmp_path / "run" /
                                                                 "proposals.jsonl"))


def test_lineage_only_run(tiny_path, tmp_path):
    res = invoke("annotate", "run", tiny_path, "-o", tmp_path / "o", "--annotators", "lineage",
                 "--no-progress")
    assert res.exit_code == 0, res.output
    assert "candidates" in res.output and "lineage 9" in res.output


@pytest.mark.parametrize("extra,message", [
    (["--annotators", "lineage,gpt"], "--annotators takes"),
    (["--main", "both"], "--main must be one of"),
    (["--base-url", "http://127.0.0.1:9/v1"], "--model is required with --base-url"),
    (["--base-url", "ftp://x", "--model", "m"], "is not an http(s) URL"),
    (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--response-format", "xml"],
     "--response-format must be one of"),
    (["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--max-turn-chars", "5000",
      "--max-prompt-chars", "1000"], "request settings"),
    (["--max-cost", "1"], "needs prices"),
    (["--provider", "embedded", "--model", "gpt-9"], "the embedded server serves the packaged "
     "models smollm2-135m-instruct, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b (or a .gguf file), "
     "not 'gpt-9'"),
])
def test_bad_options_give_one_clear_line(tiny_path, tmp_path, extra, message):
    res = invoke("annotate", "run", tiny_path, "-o", tmp_path / "o", *extra)
    assert res.exit_code in (ExitCode.BAD_INPUT, ExitCode.USAGE), res.output
    assert message in res.output and "Traceback" not in res.output


def test_bad_files_name_file_line_and_record(tiny_path, tmp_path):
    res = invoke("annotate", "run", tmp_path / "missing.jsonl", "-o", tmp_path / "o",
                 "--annotators", "lineage")
    assert res.exit_code == ExitCode.BAD_INPUT and "missing.jsonl: no such file" in res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text(tiny_path.read_text().splitlines()[0] + "\n{not json\n")
    res = invoke("annotate", "run", bad, "-o", tmp_path / "o2", "--annotators", "lineage")
    assert res.exit_code == ExitCode.BAD_INPUT and "bad.jsonl:2: malformed JSON" in res.output
    # Conversations given where proposals are expected.
    res = invoke("annotate", "verify", tiny_path, tiny_path, "-o", tmp_path / "c.jsonl",
                 "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert res.exit_code == ExitCode.BAD_INPUT
    assert "is a 'conversation' record, expected 'proposal'" in res.output


def test_verify_refuses_proposals_of_another_conversation_file(fake_openai, tiny_path, tmp_path):
    common = ["--base-url", fake_openai.base_url, "--model", "fake", "--no-progress"]
    assert invoke("annotate", "propose", tiny_path, "-o", tmp_path / "p.jsonl",
                  *common).exit_code == 0
    other = tmp_path / "other.jsonl"
    other.write_text(tiny_path.read_text().splitlines()[1] + "\n")  # tiny/b only
    res = invoke("annotate", "verify", other, tmp_path / "p.jsonl", "-o", tmp_path / "c.jsonl",
                 *common)
    assert res.exit_code == ExitCode.BAD_INPUT
    # Answers arrive in any order with 4 in flight: the first proposal of tiny/a or tiny/c.
    assert re.search(r"other\.jsonl: no conversation 'tiny/[ac]', which a proposal refers to",
                     res.output)
