"""Importing a peer package (peers venv): nothing is fetched, a missing package is one line."""

from __future__ import annotations

import sys

import pytest

from mtcabench.evaluate.attribution.peers._common import import_peer


@pytest.mark.parametrize(("module", "package"), [("context_cite", "context-cite==0.0.4"),
                                                 ("at2", "at2==0.0.1")])
def test_importing_a_peer_downloads_nothing(monkeypatch, module, package):
    # both packages call nltk.download("punkt_tab") at import; they are given our sentences
    import nltk

    calls = []

    def download(*args, **kwargs):
        calls.append(args)
        return False

    monkeypatch.setattr(nltk, "download", download)
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)  # restored after the test
    imported = import_peer(module, package)
    assert imported.__name__ == module and f"{module}.utils" in sys.modules
    assert calls == []
    assert nltk.download is download  # put back once the package has imported


def test_a_missing_peer_names_its_package_and_the_set_up():
    with pytest.raises(ValueError, match=r"needs the package nonesuch==1\.0 .*setup_peers\.sh"):
        import_peer("mtcabench_no_such_peer", "nonesuch==1.0")
