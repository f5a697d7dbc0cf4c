"""The labeling interface of a review project: its configuration, names and instructions.

The files are package data (``mtcabench/resources/annotation_ui/``, linked from the checkout's
``annotation_ui/``) so that reviewers' leads can read and adjust them without Python and an
installed wheel has them; this module loads them and names the tags and labels the task
builder and the annotation reader share.
"""

from __future__ import annotations

from pathlib import Path

from mtcabench.errors import InputError
from mtcabench.resources import annotation_ui_dir

UI_DIR = annotation_ui_dir()
CONFIG_FILE = UI_DIR / "provenance.xml"
INSTRUCTIONS_FILE = UI_DIR / "instructions.html"

# Tag names of provenance.xml (from_name / to_name in results).
DIALOGUE = "dialogue"
NODES = "nodes"
DEPENDENCY_TYPE = "dependency_type"
VERDICT = "verdict"
#: A claim's kind: choices listed in the task's data (``$claim_kinds``), empty for a value
#: span, so that only a claim's task shows them.
CLAIM_KIND = "claim_kind"
COMMENT = "comment"

# Region labels.
TARGET = "Target"
INTERMEDIATE = "Intermediate"
SOURCE = "Source"
HALLUCINATED_SOURCE = "Hallucinated source"
NODE_LABELS = (TARGET, INTERMEDIATE, SOURCE, HALLUCINATED_SOURCE)

# Relation labels: informative for the reviewer; an edge's kind is read from the turns.
DEPENDS_ON = "depends on"
ANSWERS_CALL = "answers call"

#: Verdict choice shown to the reviewer -> model.Verdict value.
VERDICTS = {"accept": "accept", "accept with edits": "accept_with_edits", "reject": "reject"}

#: Default project title.
DEFAULT_PROJECT = "mtcabench review"


def _read(path: Path) -> str:
    if not path.is_file():
        raise InputError(f"{path}: the review interface file is missing; reinstall mtcabench "
                         "(or restore mtcabench/resources/annotation_ui/ in a checkout)")
    return path.read_text(encoding="utf-8")


def label_config() -> str:
    """The Label Studio labeling configuration (XML)."""
    return _read(CONFIG_FILE)


def instructions() -> str:
    """The reviewer instructions (HTML, shown by Label Studio before labeling)."""
    return _read(INSTRUCTIONS_FILE)
