"""Print the pinned version of a component, read from pyproject.toml (where pins are written).

``python scripts/pins.py torch`` -> ``2.13.0``. Used by scripts/setup.sh so that the versions
it installs are the ones the package declares: torch and llama-cpp-python from the optional
dependencies (``name==X``); Label Studio (which lives in its own virtual environment, not in
the package's dependencies) and uv from ``[tool.mtcabench.pins]``.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def pinned(name: str) -> str:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    pins = data.get("tool", {}).get("mtcabench", {}).get("pins", {})
    if name in pins:
        return pins[name]
    project = data["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    pattern = re.compile(rf"^{re.escape(name)}(\[[^\]]*\])?==([^;\s]+)")
    for req in requirements:
        match = pattern.match(req.strip())
        if match:
            return match.group(2)
    raise SystemExit(f"pins.py: {PYPROJECT} pins no exact version of {name!r} (write {name}==X)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/pins.py NAME")
    print(pinned(sys.argv[1]))
