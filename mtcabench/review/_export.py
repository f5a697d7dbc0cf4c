"""The shape of a Label Studio export, as far as `review pull` reads it, checked before use.

An export is the service's answer: a task list whose tasks hold annotations whose results
hold regions, relations and choices. Anything else there (a ``null`` result item,
``completed_by: [3]``, ``meta: "x"``, ``annotations: "nope"``, a task that is a number) is a
broken answer, refused as a whole with one line naming the task, the annotation and the
field (:class:`~mtcabench.errors.ServiceError`, exit 4), before anything is written. Fields
this tool does not read are let through unchecked, so a newer server's additions pass.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mtcabench.errors import ServiceError


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")


class ExportUser(_Part):
    """``completed_by`` as an object (some versions expand the user)."""

    id: int


class RegionValue(_Part):
    """A region's value: the paragraph (turn) it marks and its labels."""

    start: int | float | str | None = None  # the turn; read_annotation judges the number
    end: int | float | str | None = None
    paragraphlabels: list[str] = []


class ChoicesValue(_Part):
    choices: list[str] = []


class TextValue(_Part):
    text: list[str | None] | str | None = None


#: What the value of each result type this tool reads must look like.
_VALUES: dict[str, type[_Part]] = {"paragraphlabels": RegionValue, "choices": ChoicesValue,
                                   "textarea": TextValue}


class ExportResult(_Part):
    """One result item: a region, a relation, a choice or a text area."""

    @model_validator(mode="after")
    def _value_of_its_type(self) -> ExportResult:
        shape = _VALUES.get(self.type or "")
        if shape is not None:
            try:
                shape.model_validate(self.value or {})
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"])
                raise ValueError(f"its value.{field} is {repr(err.get('input'))[:40]}: "
                                 f"{err['msg'].lower()}") from None
        return self

    id: str | int | None = None
    type: str | None = None
    from_name: str | None = None
    to_name: str | None = None
    value: dict[str, Any] | None = None
    from_id: str | int | None = None
    to_id: str | int | None = None
    direction: str | None = None
    labels: list[str] | None = None


class ExportAnnotation(_Part):
    id: int | None = None
    completed_by: int | ExportUser | None = None
    was_cancelled: bool = False
    result: list[ExportResult] | None = None
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def reviewer_id(self) -> int | None:
        by = self.completed_by
        return by.id if isinstance(by, ExportUser) else by


class ExportTask(_Part):
    id: int | None = None
    data: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    annotations: list[ExportAnnotation] | None = None


def _where(raw: Any, loc: tuple) -> str:
    """``task 12, annotation 5, result[0]`` for a pydantic error location in a task."""
    parts = []
    task_id = raw.get("id") if isinstance(raw, dict) else None
    if len(loc) >= 2 and loc[0] == "annotations" and isinstance(loc[1], int):
        anns = raw.get("annotations") if isinstance(raw, dict) else None
        ann = anns[loc[1]] if isinstance(anns, list) and loc[1] < len(anns) else None
        ann_id = ann.get("id") if isinstance(ann, dict) else None
        parts.append(f"annotation {ann_id if ann_id is not None else f'#{loc[1] + 1}'}")
        loc = loc[2:]
    field = ""
    for x in loc:
        field += f"[{x}]" if isinstance(x, int) else (f".{x}" if field else str(x))
    if field:
        parts.append(field)
    return f"task {task_id}" + "".join(f", {p}" for p in parts)


def check_export(tasks: list[Any], url: str) -> list[ExportTask]:
    """The export's tasks, checked; one line naming the first broken part otherwise."""
    out = []
    for n, raw in enumerate(tasks, start=1):
        if not isinstance(raw, dict):
            raise ServiceError(f"Label Studio at {url} sent a broken export: item {n} of the "
                               f"task list is {type(raw).__name__} {str(raw)[:40]!r}, not a "
                               "task object; check the server's version and export again")
        try:
            out.append(ExportTask.model_validate(raw))
        except ValidationError as exc:
            err = exc.errors()[0]
            if err["type"] == "value_error":  # a result's value: the validator says what
                what = f"{_where(raw, err['loc'])}: {err['ctx']['error']}"
            else:
                what = (f"{_where(raw, err['loc'])} is {repr(err.get('input'))[:40]} "
                        f"({err['msg'].lower()})")
            raise ServiceError(f"Label Studio at {url} sent a broken export: {what}; check the "
                               "server's version and export again") from None
    return out
