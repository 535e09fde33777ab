"""Verifiable final answers: extraction, hedging, equivalence, and the workers that check them.

Importing this package loads nothing: the service imports the grader
(``grader``) when a rubric names ``answer``, and only the workers import the
symbolic checkers (``equivalence``).
"""

__all__ = ["check", "equivalence", "extraction", "grader", "pool"]
