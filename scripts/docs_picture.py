"""The README's picture: a provenance graph the tool itself draws, written to
docs/provenance-graph.svg.

`mtcabench explain examples/refund_agent.json --span R-99120` with Tokengeist on the default
model (SmolLM2-135M-Instruct), drawn by the renderer of `mtcabench show` and the explain
pages. Rerun after a change to the renderer or the method:

    python scripts/docs_picture.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mtcabench.explainer import explain_conversation
from mtcabench.explainer._output import drawing
from mtcabench.render import to_svg
from mtcabench.transcripts import read_transcript, target_span

LOG = ROOT / "examples" / "refund_agent.json"
OUT = ROOT / "docs" / "provenance-graph.svg"


def main() -> None:
    conv = read_transcript(LOG)
    last = len(conv.turns) - 1
    explanation = explain_conversation(conv, [target_span(conv, last, "R-99120")],
                                       methods=["tokengeist"])
    svg = to_svg(drawing(explanation, 0, "tokengeist"))
    OUT.write_text(svg + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({len(svg):,} characters)")


if __name__ == "__main__":
    main()
