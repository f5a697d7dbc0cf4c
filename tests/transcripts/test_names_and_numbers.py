"""Names and numbers a reader takes from a file or an option, held to the one name rule and
bounded before any writer sees them (issue 48): each case one clear line, nothing written."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode
from mtcabench.io import read_records
from mtcabench.model import Conversation
from tests.support.tau2_runs import airline, write

runner = CliRunner()


def error_line(res) -> str:
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    assert "Traceback" not in res.output, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.output
    return errors[0]


def _sim(run):
    return run["simulations"][0]


#: tau2 files that ingested and then failed in a writer, or that named a domain or agent the
#: release cannot use: the one line each now ends in.
CASES = {
    "trial 2^63": (lambda r: _sim(r).update(trial=2**63),
                   ["simulation 0 (task 7)", "'trial' is 9223372036854775808, more than "
                    "2,147,483,647"]),
    "trial 10^20": (lambda r: _sim(r).update(trial=10**20), ["'trial' is 1000000000000000000"
                                                             "00, more than"]),
    "domain with a final line break": (
        lambda r: r["info"]["environment_info"].update(domain_name="telecom\n"),
        ["info.environment_info.domain_name", "control character"]),
    "domain with the conversations suffix": (
        lambda r: r["info"]["environment_info"].update(domain_name="airline-conversations"),
        ["info.environment_info.domain_name", "ends in '-conversations'"]),
    "agent named unknown": (lambda r: r["info"]["agent_info"].update(llm="unknown"),
                            ["info.agent_info.llm", "name no agent"]),
    "agent an endpoint with a password": (
        lambda r: r["info"]["agent_info"].update(llm="http://admin:SECRET@host:8000/v1#gpt-4.1"),
        ["info.agent_info.llm", "endpoint URL"]),
    "agent with a table bar": (lambda r: r["info"]["agent_info"].update(llm="gpt|4o"),
                               ["info.agent_info.llm", "holds '|'"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_tau2_file_is_refused_in_one_line(tmp_path, case):
    change, expected = CASES[case]
    run = airline()
    change(run)
    src = write(tmp_path / "run.json", run)
    out = tmp_path / "c.jsonl"
    line = error_line(runner.invoke(app, ["ingest", "tau2", str(src), "--out", str(out)]))
    for part in [str(src), *expected]:
        assert part in line, (part, line)
    assert "SECRET" not in line
    assert not out.exists()


def test_names_are_normalised_before_they_go_into_ids(tmp_path):
    run = airline(model=" gpt-test ")
    run["info"]["environment_info"]["domain_name"] = "Airline "
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "tau2", str(write(tmp_path / "r.json", run)),
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    [conv] = read_records(out, Conversation)
    assert (conv.domain, conv.agent_model) == ("airline", "gpt-test")
    assert conv.id == "tau2/airline/gpt-test/llm_agent/task-7/trial-0"


@pytest.mark.parametrize("command", ["transcripts", "taubench"])
@pytest.mark.parametrize("domain, says", [("airline\n", "control character"),
                                          ("airline-conversations", "-conversations"),
                                          ("", "is empty")])
def test_a_domain_option_is_checked_before_any_file_is_read(tmp_path, sample_path, command,
                                                           domain, says):
    out = tmp_path / "c.jsonl"
    line = error_line(runner.invoke(app, ["ingest", command, str(sample_path), "--out",
                                          str(out), "--domain", domain]))
    assert line.startswith("error: --domain: the domain") and says in line, line
    assert not out.exists()


def test_a_domain_option_is_normalised(tmp_path, sample_path):
    out = tmp_path / "c.jsonl"
    res = runner.invoke(app, ["ingest", "transcripts", str(sample_path), "--out", str(out),
                              "--domain", " Airline ", "--source", "Runs"])
    assert res.exit_code == 0, res.output
    convs = list(read_records(out, Conversation))
    assert {(c.domain, c.source) for c in convs} == {("airline", "runs")}


def test_a_taubench_trial_of_many_digits_is_refused_before_int(tmp_path):
    run = {"task_id": 3, "trial": "9" * 5000, "traj": [{"role": "user", "content": "hi"}]}
    src = tmp_path / "gpt-4o-airline.json"
    src.write_text(json.dumps([run]))
    line = error_line(runner.invoke(app, ["ingest", "taubench", str(src), "--out",
                                          str(tmp_path / "c.jsonl")]))
    assert "(task 3, trial 9999999999999999999999999999999999999...)" in line
    assert "'trial' is 9999999999999999999999999999999999999..." in line
    assert "more than 2,147,483,647" in line


def test_a_number_too_long_for_any_reader_is_named_as_such(tmp_path):
    src = tmp_path / "run.json"
    src.write_text('{"info": {}, "tasks": [{"id": ' + "7" * 5000 + "}], \"simulations\": []}")
    line = error_line(runner.invoke(app, ["ingest", "tau2", str(src), "--out",
                                          str(tmp_path / "c.jsonl")]))
    assert "malformed" not in line
    assert "a number of 5,000 digits at line 1 column 31" in line
    assert "write it as a string" in line


def test_transcripts_names_what_is_wrong_in_a_tau2_file_as_ingest_tau2_does(tmp_path):
    run = airline()
    run["simulations"] = {"sim-1": run["simulations"][0]}
    src = write(tmp_path / "run.json", run)
    lines = [error_line(runner.invoke(app, ["ingest", cmd, str(src), "--out",
                                            str(tmp_path / "c.jsonl")]))
             for cmd in ("tau2", "transcripts")]
    assert lines[0] == lines[1]
    assert "'simulations' is not a list of runs" in lines[0]
