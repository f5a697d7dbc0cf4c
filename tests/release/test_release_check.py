"""One check of a release folder for verify, publish and the loader (issue 37).

A folder that contradicts its release.json or its checksum file is refused in one line by
all three (never a traceback of ``datasets``); release.json and the checksum file are not
read through a link out of the folder or from a FIFO; the loader reads the files release.json
names, not those a card names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest
from typer.testing import CliRunner

from mtcabench.benchmark import check_release, load_release
from mtcabench.cli import app
from mtcabench.errors import ExitCode, InputError
from mtcabench.release import build_release, plan_publish

runner = CliRunner()
SPANS = "data/spans/taubench.parquet"
CONVS = "data/conversations/taubench.parquet"


@pytest.fixture()
def built(sample_inputs):
    return build_release("0.1.0", sample_inputs["reviewed"], sample_inputs["conversations"],
                         out=sample_inputs["out"])


def relist(folder, rel):
    """Give ``rel`` its new checksum in CHECKSUMS.sha256, as a person covering an edit would."""
    sums = folder / "CHECKSUMS.sha256"
    digest = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
    lines = [f"{digest}  {rel}" if line.endswith(f"  {rel}") else line
             for line in sums.read_text().splitlines()]
    sums.write_text("\n".join(lines) + "\n")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(res, code):
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output and res.exception is None or \
        isinstance(res.exception, SystemExit), res.output


def test_a_zero_byte_data_file_the_checksums_list_is_refused_by_all_three(built, sample_inputs,
                                                                       tmp_path):
    (built.folder / SPANS).write_bytes(b"")
    relist(built.folder, SPANS)
    _, problems = check_release(built.folder)
    assert any(p.startswith(f"{SPANS}: not a readable Parquet file (0 bytes") for p in problems), \
        problems
    res = invoke("release", "verify", built.folder)
    one_line_error(res, ExitCode.INVALID)
    assert SPANS in res.output and "Parquet" in res.output
    with pytest.raises(InputError, match=re.escape(SPANS) + ".*0 bytes"):
        plan_publish(built.folder, "o/n")
    with pytest.raises(InputError, match=re.escape(SPANS) + ".*not a readable Parquet"):
        load_release(built.folder, cache_dir=sample_inputs["cache"])
    sub = tmp_path / "s.jsonl"
    sub.write_text('{"span_id": "x", "edges": []}\n')
    res = invoke("score", sub, "--benchmark", built.folder, "--no-plot", "--resamples", "0")
    one_line_error(res, ExitCode.BAD_INPUT)
    assert SPANS in res.output and "DatasetGenerationError" not in res.output


def test_rows_release_json_does_not_give_are_refused(built, sample_inputs):
    manifest = json.loads((built.folder / "release.json").read_text())
    for c in manifest["configs"]:
        if c["name"] == "spans":
            c["rows"] = 303
    (built.folder / "release.json").write_text(json.dumps(manifest))
    relist(built.folder, "release.json")
    _, problems = check_release(built.folder)
    assert problems == ["release.json: config 'spans' has 303 rows, but its files hold 7; the "
                        "data files are not the ones it was built with: download or rebuild "
                        "the release"]


def test_the_loader_reads_the_files_release_json_names_not_the_cards(built, sample_inputs):
    # A card naming another file (here a copy holding the same rows, elsewhere in the folder)
    # is refused by its checksum, by the loader as by verify; and the loader never reads what
    # the card names, so a card cannot make it read rows no checksum covers.
    other = "data/spans/other.parquet"
    shutil.copyfile(built.folder / SPANS, built.folder / other)
    card = built.folder / "README.md"
    card.write_text(card.read_text().replace(f"    - {SPANS}\n", f"    - {other}\n"))
    with pytest.raises(InputError) as err:
        load_release(built.folder, cache_dir=sample_inputs["cache"])
    assert "README.md: sha256 differs" in err.value.message
    assert f"{other}: not listed" in err.value.message
    assert "NonMatchingSplitsSizesError" not in err.value.message


def test_the_loader_does_not_use_the_cards_configs(built, sample_inputs, monkeypatch):
    import datasets

    seen = []
    real = datasets.load_dataset

    def spy(path, *args, **kwargs):
        seen.append((path, args, kwargs.get("data_files")))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(datasets, "load_dataset", spy)
    bench = load_release(built.folder, cache_dir=sample_inputs["cache"])
    assert len(bench.spans) == 7
    assert [(p, a) for p, a, _ in seen] == [("parquet", ()), ("parquet", ())]
    assert [f["test"] for _, _, f in seen] == [[str(built.folder / SPANS)],
                                               [str(built.folder / CONVS)]]


@pytest.mark.parametrize("name", ["release.json", "CHECKSUMS.sha256"])
def test_release_json_and_checksums_are_not_read_through_a_link_out(built, sample_inputs,
                                                                    tmp_path, name):
    outside = tmp_path / f"outside-{name}"
    outside.write_text("SECRET-LINE-ONE\nSECRET-LINE-TWO\n")
    (built.folder / name).unlink()
    (built.folder / name).symlink_to(outside)
    manifest, problems = check_release(built.folder)
    assert manifest is None
    assert any(p.startswith(f"{name}: a symbolic link to") for p in problems), problems
    for res in (invoke("release", "verify", built.folder),
                invoke("release", "publish", built.folder, "--repo-id", "o/n", "--dry-run")):
        assert res.exit_code in (ExitCode.INVALID, ExitCode.BAD_INPUT), res.output
        assert name in res.output and "SECRET-LINE" not in res.output, res.output
    with pytest.raises(InputError, match=f"{re.escape(name)}: a symbolic link"):
        load_release(built.folder, cache_dir=sample_inputs["cache"])


def test_a_fifo_in_the_folder_is_named_and_never_opened(built):
    os.mkfifo(built.folder / "data" / "pipe.parquet")
    _, problems = check_release(built.folder)  # returns: the FIFO is not opened
    assert problems == ["data/pipe.parquet: a named pipe (FIFO), not a file; a release holds "
                        "regular files only (it is not read): remove it or rebuild the release"]
    res = invoke("release", "verify", built.folder)
    assert res.exit_code == ExitCode.INVALID and "FIFO" in res.output


def test_a_fifo_as_the_checksum_file_is_not_read(built):
    (built.folder / "CHECKSUMS.sha256").unlink()
    os.mkfifo(built.folder / "CHECKSUMS.sha256")
    manifest, problems = check_release(built.folder)
    assert manifest is None and problems[0].startswith("CHECKSUMS.sha256: a named pipe")


@pytest.mark.parametrize("bad", ["../elsewhere.parquet", "/etc/hostname",
                                 "data/../../elsewhere.parquet"])
def test_paths_out_of_the_folder_in_release_json_are_named_for_what_they_are(built, bad):
    manifest = json.loads((built.folder / "release.json").read_text())
    manifest["configs"][0]["files"] = [bad]
    (built.folder / "release.json").write_text(json.dumps(manifest))
    relist(built.folder, "release.json")
    _, problems = check_release(built.folder)
    assert any(p.startswith(f"release.json names {bad}: not a path inside the release folder")
               for p in problems), problems
    assert not any("symbolic link" in p for p in problems), problems


def test_paths_out_of_the_folder_in_the_checksum_file_are_named(built):
    with (built.folder / "CHECKSUMS.sha256").open("a") as fh:
        fh.write(f"{'0' * 64}  ../outside.txt\n")
    _, problems = check_release(built.folder)
    assert problems == ["CHECKSUMS.sha256 lists ../outside.txt: not a path inside the release "
                        "folder (absolute, or with '..', '.' or an empty part); a release names "
                        "its files relative to its folder: rebuild it"]
