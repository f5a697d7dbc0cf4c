"""The files the package reads at run time ship in the wheel and are found without a checkout."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import mtcabench
from mtcabench import resources
from mtcabench.annotate.phases import load_template
from mtcabench.ingest import read_taubench
from mtcabench.raw import load_manifest
from mtcabench.review._ui import instructions, label_config

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(mtcabench.__file__).parent


def test_every_resource_file_is_declared_as_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["mtcabench"]
    shipped = [p.relative_to(PACKAGE).as_posix()
               for p in (PACKAGE / "resources").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"]
    assert len(shipped) >= 6
    missing = [f for f in shipped if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


def test_resources_are_read_through_importlib_resources():
    assert load_template("propose").version == "propose-v1"
    assert load_template("verify").path.parent == resources.prompts_dir()
    assert "<View" in label_config() and instructions().strip()
    assert [f.name for f in load_manifest(resources.manifest_path())]
    assert len(list(read_taubench(resources.sample_path()))) == 3


def test_checkout_folders_link_to_the_package_data():
    # The layout's top-level folders are the same files, not copies that could drift.
    for link, target in (("prompts", "prompts"), ("annotation_ui", "annotation_ui"),
                         ("raw/sample", "raw/sample"), ("raw/manifest.json", "raw/manifest.json")):
        assert (ROOT / link).resolve() == (PACKAGE / "resources" / target).resolve(), link
