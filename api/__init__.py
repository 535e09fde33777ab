"""The HTTP service (FastAPI).

The app and its routes, the grading pipeline, auth, admission, drift watching
and the review queue's sampling; see ``docs/architecture.md``.
"""
