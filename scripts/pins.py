"""Print the pinned version of a component, read from pyproject.toml (where pins are written).

``python scripts/pins.py torch`` -> ``2.13.0``. Used by scripts/setup.sh and scripts/lock.sh:
the versions chosen by hand are written in ``[tool.mtcabench.pins]`` (torch, llama-cpp-python,
Label Studio, uv), each inside the range the package declares (the metadata says what works,
the pins what CI installs); a dependency declared as ``name==X`` counts as a pin too.

``python scripts/pins.py --check-lock`` checks that scripts/locks/project.txt (what setup.sh
installs) holds every dependency pyproject.toml declares, at its pinned version where one is
pinned: a dependency added without rerunning scripts/lock.sh would otherwise be missing from
every fresh environment while a developer's older one still has it.
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


LOCK = PYPROJECT.parent / "scripts" / "locks" / "project.txt"
#: Extras locked in a file of their own (their own virtual environment), not in project.txt.
OWN_LOCKS = {"peers": PYPROJECT.parent / "scripts" / "locks" / "peers.txt"}
# Installed by setup.sh outside the lock (its pinned CPU wheel), see scripts/lock.sh.
NOT_LOCKED = {"torch"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_problems() -> list[str]:
    """What the locks lack or pin differently from pyproject.toml (empty: in step)."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    declared = [("dependencies", r) for r in project.get("dependencies", [])]
    extras = project.get("optional-dependencies", {})
    for extra, reqs in extras.items():
        if extra not in OWN_LOCKS:
            declared += [(f"[{extra}]", r) for r in reqs]
    problems = _problems(declared, LOCK)
    problems += _pin_problems(LOCK)
    for extra, lock in OWN_LOCKS.items():
        if extra in extras:
            problems += _problems([(f"[{extra}]", r) for r in extras[extra]], lock)
    return problems


def _pin_problems(lock: Path) -> list[str]:
    """Pins of [tool.mtcabench.pins] that the lock holds at another version."""
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    pins = data.get("tool", {}).get("mtcabench", {}).get("pins", {})
    locked = _locked(lock) if lock.is_file() else {}
    return [f"{name} is pinned to {version} in [tool.mtcabench.pins] but locked at "
            f"{locked[_normal(name)]}" for name, version in pins.items()
            if _normal(name) in locked and locked[_normal(name)] != version]


def _locked(lock: Path) -> dict[str, str]:
    locked = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+)", line)
        if match:
            locked[_normal(match.group(1))] = match.group(3)
    return locked


def _problems(declared: list[tuple[str, str]], lock: Path) -> list[str]:
    if not lock.is_file():
        return [f"{lock.name} is missing"]
    locked = _locked(lock)
    problems = []
    for where, req in declared:
        match = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*(==\s*([^;\s,]+))?", req)
        if not match:
            continue
        name = _normal(match.group(1))
        if name in NOT_LOCKED or name == "mtcabench":
            continue
        if name not in locked:
            problems.append(f"{match.group(1)} (declared in {where}) is not in {lock.name}")
        elif match.group(4) and locked[name] != match.group(4):
            problems.append(f"{match.group(1)} is pinned to {match.group(4)} in {where} "
                            f"but locked at {locked[name]}")
    return problems


if __name__ == "__main__":
    if sys.argv[1:] == ["--check-lock"]:
        problems = lock_problems()
        if problems:
            raise SystemExit(f"{LOCK.relative_to(PYPROJECT.parent)} is out of step with "
                             f"pyproject.toml: {'; '.join(problems)}. Run scripts/lock.sh "
                             "and commit the lock files with the change.")
        sys.exit(0)
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/pins.py NAME | --check-lock")
    print(pinned(sys.argv[1]))
