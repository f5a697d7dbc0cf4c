"""The base of every record: ``kind`` and ``schema_version``, checked on every read."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

#: Layout version of every record kind defined here. A reader refuses a newer one.
SCHEMA_VERSION = 1


#: Control characters (Unicode category Cc: C0, DEL, C1) and the line and paragraph
#: separators: what may not hide in an id.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _no_control(value: str) -> str:
    """An id names files, pages and lines of messages: no control character (a NUL, an
    escape sequence, a line break) may hide in one."""
    if (m := _CONTROL.search(value)) is not None:
        raise ValueError(f"the id holds the control character {m.group()!r} at position "
                         f"{m.start()}; ids are printable text")
    return value


#: The same rule in JSON Schema, for the published schema of a submission line: no control
#: character anywhere (an unanchored pattern under "not": "$" would let a final line break by).
_NO_CONTROL_SCHEMA = {"not": {"pattern": "[\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]"}}

#: A record or span id: any printable text (checked wherever an id is read; the JSON schema
#: states it too, so that a line is valid exactly when the reader accepts it).
Id = Annotated[str, AfterValidator(_no_control),
               Field(json_schema_extra=_NO_CONTROL_SCHEMA)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False, populate_by_name=True)


class Record(_Model):
    """Base of the top-level records written one per line; checks kind and version."""

    KIND: ClassVar[str] = ""
    #: The newest layout version of this kind that this mtcabench reads.
    VERSION: ClassVar[int] = SCHEMA_VERSION

    kind: str = Field(default="", description="What this record is; fixed per record type.")
    schema_version: int = Field(
        default=SCHEMA_VERSION, description="Layout version of this record kind."
    )

    @model_validator(mode="before")
    @classmethod
    def _check_kind_and_version(cls, data: Any) -> Any:
        if isinstance(data, dict):
            kind = data.get("kind", cls.KIND)
            if kind != cls.KIND:
                raise ValueError(
                    f"this is a {kind!r} record, expected {cls.KIND!r}: is it the right file?"
                )
            version = data.get("schema_version", SCHEMA_VERSION)
            if not isinstance(version, int) or version > cls.VERSION or version < 1:
                raise ValueError(
                    f"schema_version {version!r} of {cls.KIND!r} records is not one this "
                    f"mtcabench reads (it reads 1 to {cls.VERSION}); upgrade mtcabench"
                )
            data = {**data, "kind": cls.KIND}
        return data

    @property
    def key(self) -> str:
        """The stable id of this record (its ``id`` or ``span_id``)."""
        return getattr(self, "id", None) or self.span_id
