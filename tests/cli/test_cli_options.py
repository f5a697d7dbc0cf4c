"""The CLI's shared options: one spelling in every command, and defaults that agree with the stages."""

from __future__ import annotations

import inspect

from typer.main import get_command

from mtcabench.cli import app, options

# Long flag -> the short flag it always comes with.
SHORT = {"--out": "-o", "--benchmark": "-b", "--project": "-p"}


def _commands(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs is None:
        yield " ".join(path), cmd
        return
    for name, sub in sorted(subs.items()):
        yield from _commands(sub, (*path, name))


def test_shared_flags_are_spelled_the_same_in_every_command():
    seen = set()
    for name, cmd in _commands(get_command(app)):
        for param in cmd.params:
            for long, short in SHORT.items():
                if long in param.opts:
                    seen.add(long)
                    assert short in param.opts, f"{name}: {long} without {short}"
    assert seen == set(SHORT)


def test_defaults_agree_with_the_stages():
    import mtcabench.evaluate
    import mtcabench.review
    from mtcabench.demo import run_demo

    assert options.DEFAULT_PROJECT == mtcabench.review.DEFAULT_PROJECT
    demo_scorer = inspect.signature(run_demo).parameters["scorer"].default
    assert demo_scorer == mtcabench.evaluate.DEFAULT_SCORER
