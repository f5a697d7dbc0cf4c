"""Showing an explanation: a tree in the terminal, ``explain.json`` and one HTML page per
span and method, drawn by the renderer (:mod:`mtcabench.render`) that draws ``mtcabench
show``'s pages, with no gold graph.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from pathlib import Path

from rich.text import Text
from rich.tree import Tree

from mtcabench.errors import InputError
from mtcabench.evaluate import get_methods
from mtcabench.explainer._explain import Explanation
from mtcabench.io import all_or_nothing, atomic_write, check_output_path
from mtcabench.model import Edge, EdgeKind, Role, TargetSpan
from mtcabench.render import Drawing, Graph, to_html
from mtcabench.terminal import plain

#: Name of the graphs file written into ``--out``.
JSON_NAME = "explain.json"
_ROLE_STYLE = {Role.SYSTEM: "magenta", Role.USER: "blue", Role.ASSISTANT: "bold", Role.TOOL: "yellow"}


def excerpt(text: str, limit: int = 60) -> str:
    """One line of at most ``limit`` characters."""
    flat = re.sub(r"\s+", " ", plain(text)).strip()  # a transcript's text: no control codes
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


#: The shortest text shared by an evidence and its child that a quote is centred on.
MIN_FOCUS = 3


def quote(text: str, focus: str, limit: int = 72) -> str:
    """``text`` on one line in at most ``limit`` characters; when it is longer, the window
    is centred on the longest piece it shares with ``focus`` (the value the child took from
    it), so that the quote shows the value, not the text's first characters."""
    flat = re.sub(r"\s+", " ", plain(text)).strip()
    if len(flat) <= limit:
        return flat
    match = SequenceMatcher(None, flat, re.sub(r"\s+", " ", plain(focus)),
                            autojunk=False).find_longest_match()
    if match.size < MIN_FOCUS:
        return flat[: limit - 1] + "\u2026"
    size = min(match.size, limit - 2)
    a = max(0, min(match.a - (limit - 2 - size) // 2, len(flat) - (limit - 2)))
    b = a + limit - 2
    return ("\u2026" if a > 0 else "") + flat[a:b] + ("\u2026" if b < len(flat) else "")


def _label(explanation: Explanation, turn: int, edge: Edge, focus: str) -> Text:
    """The parent's role and the edge's score, then its best evidence quoted (where in the
    parent the child's content came from; ``focus``: the child's text, see :func:`quote`),
    else the parent's first characters."""
    t = explanation.conversation.turns[turn]
    how = f"{edge.score:.2f}" if edge.kind is EdgeKind.CONTENT else "issued the call"
    head = ((f"turn {turn} {t.role.value}", _ROLE_STYLE[t.role]), "  ", (how, "cyan"), "  ")
    if edge.sentences:
        best = edge.sentences[0]
        return Text.assemble(*head, ("\u201c" + quote(t.text[best.start:best.end], focus)
                                     + "\u201d", "green"))
    return Text.assemble(*head, excerpt(t.text, 48))


def window_note(window) -> str:
    """One line saying how a span past the model's context was attributed."""
    turns = ", ".join(f"{w.turn} ({'left out' if w.left_out else 'shortened'}: "
                      f"{w.tokens_left_out} of {w.tokens} tokens)" for w in window.turns)
    return (f"in a context window: the span's turn ends at token {window.end_token}, past the "
            f"{window.limit}-token limit; earlier turns {turns}")


def render_tree(explanation: Explanation, k: int, method: str) -> Tree:
    """Target ``k``'s graph by ``method`` as a tree: each turn under the turn that depends on
    it, with the edge's score; a turn reached again is marked, not repeated."""
    target = explanation.targets[k]
    graph = explanation.graphs[method][k]
    conv = explanation.conversation
    root = Tree(Text.assemble((f"turn {target.turn} assistant", "bold"), "  ",
                              (plain(method), "dim"), "  \u201c", excerpt(target.text, 48), "\u201d"))
    out: dict[int, list[Edge]] = {}
    for e in graph.edges:
        out.setdefault(e.child, []).append(e)
    for edges in out.values():
        edges.sort(key=lambda e: (e.kind is not EdgeKind.CONTENT, -(e.score or 0), e.parent))
    window = explanation.windows.get(k)
    if window is not None and get_methods([method])[method].uses_model:
        root.add(Text(window_note(window), style="dim"))
    if not graph.edges:
        root.add(Text("no earlier turn passed the threshold: nothing traced", style="dim"))
    seen = {target.turn}

    def grow(node: Tree, turn: int) -> None:
        for e in out.get(turn, []):
            focus = target.text if turn == target.turn else conv.turns[turn].text
            label = _label(explanation, e.parent, e, focus)
            if e.parent in seen:
                node.add(label.append("  (traced above)", style="dim"))
                continue
            seen.add(e.parent)
            grow(node.add(label), e.parent)

    grow(root, target.turn)
    return root


def render_trees(explanation: Explanation) -> list[Tree]:
    """One tree per target and method."""
    return [render_tree(explanation, k, m)
            for k in range(len(explanation.targets)) for m in explanation.graphs]


def drawing(explanation: Explanation, k: int, method: str) -> Drawing:
    """What the renderer draws for target ``k`` by ``method``: the transcript up to the
    target and the traced graph, with no gold graph."""
    graph = explanation.graphs[method][k]
    label = method if explanation.scorer is None else f"{method} ({explanation.scorer})"
    structural = frozenset(e.pair for e in graph.edges if e.kind is EdgeKind.STRUCTURAL)
    return Drawing(explanation.span_id(k), explanation.conversation, explanation.targets[k],
                   [Graph(label, graph.edges, structural=structural)])


def page_name(target: TargetSpan, method: str) -> str:
    """The HTML page of a target and method: ``turn<T>_<start>-<end>.<method>.html``."""
    return f"turn{target.turn}_{target.start}-{target.end}.{method}.html"


def output_paths(targets: Sequence[TargetSpan], methods: Iterable[str], out: str | Path) -> list[Path]:
    """The files :func:`write_explanation` writes into ``out``: explain.json, then the pages
    (known before anything runs, so that a command can check them first)."""
    out = Path(out)
    methods = list(methods)
    return [out / JSON_NAME] + [out / page_name(t, m) for t in targets for m in methods]


def check_output_folder(out: str | Path, paths: Iterable[Path] = ()) -> None:
    """Refuse (InputError) an output folder that exists and is not a folder, or one of its
    ``paths`` (:func:`output_paths`) that cannot be written as a file (a folder, a link):
    what a command checks before it runs anything, so that a model is not run for nothing."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder; choose another --out")
    if out.is_dir():
        for path in paths:
            check_output_path(path)


def write_explanation(explanation: Explanation, out: str | Path) -> list[Path]:
    """Write ``explain.json`` and one HTML page per target and method into folder ``out``."""
    out = Path(out)
    check_output_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = output_paths(explanation.targets, explanation.graphs, out)
    with all_or_nothing():  # explain.json and its pages appear together, or none of them
        with atomic_write(paths[0]) as fh:
            fh.write(json.dumps(explanation.to_json(), indent=1, ensure_ascii=False) + "\n")
        pages = iter(paths[1:])
        for k in range(len(explanation.targets)):
            for m in explanation.graphs:
                with atomic_write(next(pages)) as fh:
                    fh.write(to_html(drawing(explanation, k, m)))
    return paths
