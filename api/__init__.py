"""The HTTP service (FastAPI).

The app and its routes, the grading pipeline, auth, admission, drift watching
and the review queue's sampling; see ``docs/architecture.md``.
"""

#: The public modules: this package re-exports nothing, so importing it stays cheap.
__all__ = [
    "admission",
    "app",
    "auth",
    "body",
    "deps",
    "drift_watch",
    "errors",
    "grading",
    "idempotency",
    "logs",
    "metrics",
    "middleware",
    "openrlhf",
    "regressions",
    "review_sampler",
    "review_view",
    "routes",
    "rubric_registration",
    "rubric_sync",
    "runs",
    "schemas",
    "service",
    "settings",
]
