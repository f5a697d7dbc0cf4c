"""`release verify` and `release publish` on folders a tool or a person changed (issue 12).

A symbolic link leading out of the release folder is refused (verify would otherwise read,
and publish upload, whatever it points at); a hidden file is refused, never skipped in
silence; the two hidden entries a Hub download adds are named as ignored.
"""

from __future__ import annotations

import os
import shutil

import pytest
from typer.testing import CliRunner

from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.release import build_release, plan_publish, verify_checksums

runner = CliRunner()
DATA = "data/spans/taubench.parquet"


@pytest.fixture()
def built(sample_inputs):
    return build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                         out=sample_inputs["out"])


def verify(folder):
    return runner.invoke(app, ["release", "verify", str(folder)])


def dry_run(folder):
    return runner.invoke(app, ["release", "publish", str(folder), "--repo-id", "o/n",
                               "--dry-run"])


def test_a_data_file_linked_out_of_the_folder_is_refused(built, tmp_path):
    outside = tmp_path / "elsewhere.parquet"
    shutil.copyfile(built.folder / DATA, outside)  # the very same bytes
    (built.folder / DATA).unlink()
    (built.folder / DATA).symlink_to(outside)
    problems = verify_checksums(built.folder)
    assert any(DATA in p and "symbolic link" in p and "outside" in p for p in problems), problems
    res = verify(built.folder)
    assert res.exit_code == ExitCode.INVALID and DATA in res.output, res.output
    with pytest.raises(InputError, match="symbolic link"):
        plan_publish(built.folder, "o/n")


def test_a_data_folder_linked_out_of_the_folder_is_refused(built, tmp_path):
    shutil.copytree(built.folder / "data", tmp_path / "data")
    shutil.rmtree(built.folder / "data")
    (built.folder / "data").symlink_to(tmp_path / "data", target_is_directory=True)
    problems = verify_checksums(built.folder)
    assert any("data" in p and "outside" in p for p in problems), problems
    assert verify(built.folder).exit_code == ExitCode.INVALID


def test_a_link_inside_the_folder_is_fine(built):
    copy = built.folder / "data" / "spans" / "copy.parquet"
    os.symlink("taubench.parquet", copy)
    problems = verify_checksums(built.folder)
    assert problems == ["data/spans/copy.parquet: not listed in CHECKSUMS.sha256"]


def test_a_hidden_file_is_refused_not_skipped(built):
    (built.folder / ".notes.txt").write_text("private")
    (built.folder / "data" / ".DS_Store").write_bytes(b"\0")
    problems = verify_checksums(built.folder)
    assert any(".notes.txt" in p and "hidden" in p for p in problems), problems
    assert any("data/.DS_Store" in p for p in problems), problems
    res = verify(built.folder)
    assert res.exit_code == ExitCode.INVALID and ".notes.txt" in res.output
    res = dry_run(built.folder)
    assert res.exit_code == ExitCode.BAD_INPUT and ".notes.txt" in res.output, res.output


def test_what_a_hub_download_adds_is_named_as_ignored(built):
    (built.folder / ".gitattributes").write_text("*.parquet filter=lfs\n")
    (built.folder / ".cache" / "huggingface").mkdir(parents=True)
    (built.folder / ".cache" / "huggingface" / "x.metadata").write_text("x")
    assert verify_checksums(built.folder) == []
    res = verify(built.folder)
    assert res.exit_code == 0, res.output
    assert "intact" in res.output and "ignored" in res.output and ".gitattributes" in res.output
    res = dry_run(built.folder)
    assert res.exit_code == 0, res.output
    assert "not uploaded" in res.output and ".gitattributes" in res.output
    plan = plan_publish(built.folder, "o/n")
    assert ".gitattributes" not in {f.path_in_repo for f in plan.files}
    assert plan.ignored == [".cache/huggingface", ".gitattributes"]
