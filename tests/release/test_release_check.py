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
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert len([x for x in res.output.splitlines() if x.startswith("error:")]) == 1, res.output


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
    assert "NonMatchingSplitsSizesError" not in err.value.message
    # the copy no checksum covers is never read by the loader; verify names it
    assert f"{other}: not listed" in invoke("release", "verify", built.folder).output


def test_a_card_naming_other_files_is_refused_even_with_its_checksum_rewritten(built,
                                                                             sample_inputs):
    # The case: the card names other files and the checksum file was made to match.
    # datasets (and the Hub) would read what the card names: verify refuses the contradiction.
    other = "data/spans/other.parquet"
    shutil.copyfile(built.folder / SPANS, built.folder / other)
    card = built.folder / "README.md"
    card.write_text(card.read_text().replace(f"    - {SPANS}\n", f"    - {other}\n", 1))
    relist(built.folder, "README.md")
    with (built.folder / "CHECKSUMS.sha256").open("a") as fh:
        fh.write(f"{hashlib.sha256((built.folder / other).read_bytes()).hexdigest()}  {other}\n")
    _, problems = check_release(built.folder)
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"README.md: config 'spans' names {other}; release.json names "
                                  f"{SPANS}; the card is not the one built with this release")
    res = invoke("release", "verify", built.folder)
    assert res.exit_code == ExitCode.INVALID and "README.md: config 'spans'" in res.output
    with pytest.raises(InputError, match="README.md: config 'spans'"):
        load_release(built.folder, cache_dir=sample_inputs["cache"])


def test_a_card_without_a_yaml_header_or_with_a_broken_one_is_named(built):
    card = built.folder / "README.md"
    text = card.read_text()
    card.write_text("# MTCABench\n")
    relist(built.folder, "README.md")
    assert check_release(built.folder)[1] == [
        "README.md: no YAML header, so no configs; `datasets` and the Hub read a release's "
        "configs from it: rebuild the release"]
    card.write_text(text.replace("configs:\n", "configs: [\n", 1))
    relist(built.folder, "README.md")
    problems = check_release(built.folder)[1]
    assert len(problems) == 1 and problems[0].startswith("README.md: its YAML header does not "
                                                         "parse"), problems


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


# ------------------------------------------------------------------ credentials in metadata

KEY = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7" * 2


def _with_metadata(reviews, tmp_path, metadata):
    convs = reviews.sample_conversations()
    s1 = convs[reviews.S1]
    convs[reviews.S1] = s1.model_copy(update={"metadata": {**s1.metadata, **metadata}})
    path = tmp_path / "conversations-old.jsonl"
    from mtcabench.io import write_records

    write_records(path, convs.values())
    return path


@pytest.mark.parametrize("metadata, field", [
    ({"info": {"api_key": "abc123-not-a-shape"}}, "metadata.info.api_key"),
    ({"info": {"llm_args": {"headers": ["Authorization: Bearer abcdefghijklmnop"]}}},
     "metadata.info.llm_args.headers[0]"),
    ({"info": {"note": KEY}}, "metadata.info.note"),
    ({"HF_TOKEN": "x"}, "metadata.HF_TOKEN"),
    ({"endpoint": "https://user:hunter2hunter2@llm.example/v1"}, "metadata.endpoint"),
])
def test_build_refuses_a_credential_in_a_released_conversations_metadata(
        sample_inputs, reviews, tmp_path, metadata, field):
    convs = _with_metadata(reviews, tmp_path, metadata)
    res = invoke("release", "build", "--version", "1.0.0", "--reviewed",
                 sample_inputs["reviewed"], "--conversations", convs,
                 "--out", sample_inputs["out"])
    assert res.exit_code == ExitCode.INVALID, res.output
    assert f"{reviews.S1}: [no-credentials] {field} looks like a credential" in res.output
    assert KEY not in res.output and "hunter2" not in res.output
    assert not sample_inputs["out"].exists()


def test_counts_and_ordinary_metadata_are_no_credentials(sample_inputs, reviews, tmp_path):
    convs = _with_metadata(reviews, tmp_path, {"max_tokens": 512, "token_count": 9,
                                               "reward": 1.0, "origin": {"file": "a.json"}})
    built = build_release("1.0.0", sample_inputs["reviewed"], convs, out=sample_inputs["out"])
    assert built.folder.is_dir()


def test_publish_refuses_a_release_holding_a_credential_dry_run_included(
        sample_inputs, reviews, tmp_path, monkeypatch):
    # A folder built before the check (here: the check bypassed) still holds the field.
    import mtcabench.release._build as build_module

    monkeypatch.setattr(build_module, "credential_violations", lambda convs: [])
    convs = _with_metadata(reviews, tmp_path, {"info": {"password": "pw", "note": KEY}})
    built = build_release("1.0.0", sample_inputs["reviewed"], convs, out=sample_inputs["out"])
    assert check_release(built.folder)[1] == []  # intact as built: only the data is refused
    res = invoke("release", "publish", built.folder, "--repo-id", "o/n", "--dry-run")
    assert res.exit_code == ExitCode.BAD_INPUT, res.output
    out = " ".join(res.output.split())
    assert f"{CONVS} (record {reviews.S1}): conversation metadata.info.note, " \
        "metadata.info.password look like a credential" in out, out
    assert KEY not in res.output and "would upload" not in res.output


def test_publish_names_a_conversations_table_without_metadata(built):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # An older layout (or another tool's table), its checksums rewritten to match.
    pq.write_table(pa.table({"id": ["c1"]}), built.folder / CONVS)
    relist(built.folder, CONVS)
    manifest = json.loads((built.folder / "release.json").read_text())
    for c in manifest["configs"]:
        if c["table"] == "conversations":
            c["rows"] = 1
    (built.folder / "release.json").write_text(json.dumps(manifest))
    relist(built.folder, "release.json")
    with pytest.raises(InputError, match=re.escape(CONVS) + ": not a conversations table"):
        plan_publish(built.folder, "o/n")


def test_a_page_written_beside_the_data_is_read_by_no_one_and_named_by_verify(built):
    """`mtcabench view --out RELEASE/view` (docs/scoring.md): the loader, which reads only the
    files release.json names, loads the release as before; verify and publish, which speak for
    the whole folder, name the files the checksums do not list."""
    before = load_release(built.folder)
    (built.folder / "view").mkdir()
    (built.folder / "view" / "index.html").write_text("<!doctype html>")
    after = load_release(built.folder)
    assert [s.id for s in after.spans] == [s.id for s in before.spans]
    _, problems = check_release(built.folder)
    assert problems == ["view/index.html: not listed in CHECKSUMS.sha256"]
    assert check_release(built.folder, extra_files=True)[1] == []
    one_line_error(invoke("release", "verify", built.folder), ExitCode.INVALID)
    # a listed data file changed is still refused by the loader
    (built.folder / SPANS).write_bytes((built.folder / SPANS).read_bytes() + b"x")
    with pytest.raises(InputError, match="sha256 differs"):
        load_release(built.folder)
