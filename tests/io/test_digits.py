"""Numbers read from files and options are ASCII digits of a sane length: "²".isdigit()
holds but int("²") fails, and int() refuses over 4,300 digits. Each place that reads a
number from text (a ConFETTI turn, an OTel index or start time, a conversation chosen by
position, a Label Studio turn or project id) is one line, exit 3, or no number at all."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import ascii_int
from mtcabench.review._annotations import _as_turn

runner = CliRunner()
SUPERSCRIPT, ARABIC, HUGE = "\u00b2", "\u0663", "9" * 5000


def test_ascii_int_reads_ascii_digits_only():
    assert ascii_int("0") == 0 and ascii_int("0042") == 42 and ascii_int("9" * 18) == int("9" * 18)
    for bad in (SUPERSCRIPT, ARABIC, HUGE, "9" * 19, "", " 1", "-1", "1.0", None, 3):
        assert ascii_int(bad) is None, bad
    assert ascii_int("1" * 30, 30) == int("1" * 30)


def test_a_label_studio_turn_in_other_digits_is_no_turn():
    assert _as_turn("3") == 3 and _as_turn(" 3 ") == 3
    assert _as_turn(SUPERSCRIPT) is None and _as_turn(HUGE) is None


def test_a_confetti_turn_number_in_other_digits_is_one_line(tmp_path):
    for k in (SUPERSCRIPT, HUGE):
        src = tmp_path / "c.json"
        src.write_text(json.dumps({"id": "c_0", "dialog_id": f"u-1_{k}", "question": [
            {"role": "user", "content": "Weather in Paris?", "content_type": "text"}],
            "function": []}) + "\n", encoding="utf-8")
        out = tmp_path / "out.jsonl"
        res = runner.invoke(app, ["ingest", "confetti", str(src), "--out", str(out)])
        assert res.exit_code == ExitCode.BAD_INPUT, res.output
        assert "is not <uuid>_<turn>" in res.output and "Traceback" not in res.output
        assert not out.exists()


def test_a_conversation_chosen_by_other_digits_is_one_line(tmp_path):
    log = tmp_path / "two.jsonl"
    turns = [{"index": 0, "role": "user", "content": "Hi, I am C-2044."},
             {"index": 1, "role": "assistant", "content": "Hello C-2044."}]
    log.write_text("".join(json.dumps({"id": f"c{i}", "source": "test", "domain": "d",
                                       "turns": turns}) + "\n" for i in range(2)))
    for pick in (SUPERSCRIPT, HUGE):
        res = runner.invoke(app, ["explain", str(log), "--conversation", pick, "--turn", "1",
                                  "--span", "C-2044", "--method", "recency",
                                  "--out", str(tmp_path / "why")])
        assert res.exit_code == ExitCode.BAD_INPUT, res.output
        assert "Traceback" not in res.output and res.output.startswith("error:"), res.output
