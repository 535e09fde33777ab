"""One router per resource."""

#: The public modules: this package re-exports nothing, so importing it stays cheap.
__all__ = [
    "drift",
    "health",
    "keys",
    "regressions",
    "repositories",
    "review",
    "rewards",
    "rubrics",
    "runs",
]
