"""Errors of rubric files, each pointing at the file, line and column a person must edit.

Exceptions::

    ValueError
    └── RubricError             a rubric that cannot be used; ``issues`` lists every problem
    LookupError
    └── RubricNotFoundError     no rubric by that name, version or sha256
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RubricError", "RubricIssue", "RubricNotFoundError"]


@dataclass(frozen=True, slots=True)
class RubricIssue:
    """One problem in a rubric file.

    Attributes:
        source: the file (or another label such as ``<request>``).
        line: 1-based line, or ``None`` when the document has no positions.
        column: 1-based column, or ``None``.
        path: the key path, e.g. ``components.tests.config.max_turns``.
        message: what was expected and what was found.
    """

    source: str
    line: int | None
    column: int | None
    path: str
    message: str

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        path = self.path or "(document)"
        return f"{where}: {path}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        """Return the issue as JSON-ready data (the HTTP API sends these)."""
        return {
            "source": self.source,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


class RubricError(ValueError):
    """A rubric that cannot be used; every problem found is in ``issues``."""

    def __init__(self, issues: list[RubricIssue]) -> None:
        if not issues:
            raise ValueError("RubricError needs at least one issue")
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


class RubricNotFoundError(LookupError):
    """No rubric by that name, version or hash."""
