"""Parse Python source into an AST, one conversion at a time per process.

CPython 3.11 keeps the counter that the AST converter uses to check its own
recursion in per-interpreter state, not per thread. When two threads build ASTs
at once (an allocation inside one conversion can run the garbage collector, and
a finalizer can hand the GIL to another thread), one resets the other's counter
and ``ast.parse`` raises ``SystemError: AST constructor recursion depth
mismatch`` for valid code (CPython gh-106905). Graders parse candidate code and
task tests from worker threads, so every parse in this process goes through the
one lock here. Only the standard library is imported: the sandbox's trusted side
uses it too.
"""

from __future__ import annotations

import ast
import threading

# Reentrant: a finalizer that runs during a conversion may itself parse.
_LOCK = threading.RLock()


def parse_module(source: str, filename: str = "<unknown>") -> ast.Module:
    """Return the module AST of ``source``; raise as ``ast.parse`` does."""
    with _LOCK:
        return ast.parse(source, filename, "exec")


def parse_expression(source: str, filename: str = "<unknown>") -> ast.Expression:
    """Return the expression AST of ``source``; raise as ``ast.parse`` does."""
    with _LOCK:
        return ast.parse(source, filename, "eval")
