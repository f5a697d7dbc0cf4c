"""The one registry shape: explicit registration, one rule for duplicates, lazy built-ins."""

from __future__ import annotations

import sys

import pytest

from mtcabench.errors import InputError
from mtcabench.registry import Registry


class _Toy:
    name = "toy"


def test_the_same_entry_twice_is_harmless_a_different_one_is_an_error():
    reg: Registry[type] = Registry("toy kind")
    assert reg.register(_Toy) is _Toy
    reg.register(_Toy)
    assert reg.names() == ["toy"]

    class Other:
        name = "toy"

    with pytest.raises(ValueError, match="toy kind 'toy' registered twice"):
        reg.register(Other)


def test_unknown_names_are_one_line_listing_the_known_ones():
    reg: Registry[type] = Registry("scorer", lazy={"b": "nowhere.at.all"})
    reg.register(_Toy)
    with pytest.raises(InputError, match="unknown scorer 'x'; choose one of b, toy"):
        reg.get("x")
    assert "b" in reg and "x" not in reg and len(reg) == 2


def test_built_in_entries_are_imported_on_first_use_only(tmp_path, monkeypatch):
    (tmp_path / "lazy_toy_module.py").write_text(
        "from tests_registry_target import REG\n"
        "class Lazy:\n    name = 'lazy'\n"
        "REG.register(Lazy)\n")
    target = type(sys)("tests_registry_target")
    reg: Registry[type] = Registry("thing", lazy={"lazy": "lazy_toy_module"})
    target.REG = reg
    monkeypatch.setitem(sys.modules, "tests_registry_target", target)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert reg.names() == ["lazy"] and "lazy_toy_module" not in sys.modules
    assert reg.get("lazy").__name__ == "Lazy"
    assert set(reg.load_all()) == {"lazy"}
    monkeypatch.delitem(sys.modules, "lazy_toy_module")


def test_a_built_in_name_is_taken_before_its_module_is_imported(tmp_path, monkeypatch):
    """Registering under a lazy built-in's name before the built-in was imported shadowed it
    (the built-in's own registration then failed, or never ran)."""
    (tmp_path / "lazy_toy_builtin.py").write_text(
        "from tests_registry_target2 import REG\n"
        "class Lazy:\n    name = 'lazy'\n"
        "REG.register(Lazy)\n")
    target = type(sys)("tests_registry_target2")
    reg: Registry[type] = Registry("thing", lazy={"lazy": "lazy_toy_builtin",
                                                  "gone": "no_such_module_anywhere"})
    target.REG = reg
    monkeypatch.setitem(sys.modules, "tests_registry_target2", target)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Shadow:
        name = "lazy"

    with pytest.raises(ValueError, match="thing 'lazy' registered twice"):
        reg.register(Shadow)
    assert reg.get("lazy").__name__ == "Lazy"
    with pytest.raises(ValueError, match="thing 'gone' is a built-in's name"):
        reg.register(Shadow, "gone")
    assert "gone" not in reg._entries
    monkeypatch.delitem(sys.modules, "lazy_toy_builtin")
