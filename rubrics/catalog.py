"""Every rubric version the service knows, addressable by name, version or sha256.

A version once seen stays addressable by its sha256 for the life of the
catalog, so a reward logged under it can be replayed after its file changed.
Resolving by name picks the highest version; by name and version, the most
recently added content of that version.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from arbiter.graders.registry import GraderRegistry
from arbiter.rubrics.errors import RubricError, RubricIssue, RubricNotFoundError
from arbiter.rubrics.loader import parse_rubric
from arbiter.rubrics.rubric import Rubric

__all__ = ["CatalogEntry", "RubricCatalog", "RubricRefusedError"]

logger = logging.getLogger("arbiter.rubrics.catalog")


class RubricRefusedError(Exception):
    """A valid rubric that ``scan``'s ``save`` refuses to publish, saying why.

    Unlike a store's failure, the file is not tried again until it changes.
    """


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One rubric version and the text it was parsed from."""

    rubric: Rubric
    text: str
    origin: str


class RubricCatalog:
    """Rubric versions by sha256, with name and version indexes. Thread-safe."""

    def __init__(self, registry: GraderRegistry) -> None:
        self._registry = registry
        self._by_sha: dict[str, CatalogEntry] = {}
        self._by_version: dict[tuple[str, int], str] = {}
        self._latest: dict[str, int] = {}
        self._file_state: dict[Path, tuple[float, int]] = {}
        self._file_errors: dict[Path, RubricError] = {}
        self._file_refusals: dict[Path, str] = {}
        self._lock = threading.Lock()

    def add_text(self, text: str, origin: str) -> tuple[CatalogEntry, bool]:
        """Parse, validate and add rubric text; return the entry and whether it was new.

        Raises:
            RubricError: the text is not a valid rubric (line-numbered issues).
        """
        rubric = parse_rubric(text, source=origin, registry=self._registry)
        return self.add(rubric, text, origin)

    def add(self, rubric: Rubric, text: str, origin: str) -> tuple[CatalogEntry, bool]:
        """Add a parsed rubric; return the entry and whether its sha256 was new."""
        with self._lock:
            existing = self._by_sha.get(rubric.sha256)
            if existing is not None:
                return existing, False
            entry = CatalogEntry(rubric=rubric, text=text, origin=origin)
            key = (rubric.name, rubric.version)
            previous = self._by_version.get(key)
            if previous is not None:
                logger.warning(
                    "rubric %s v%d changed without a version bump (%s -> %s); the old content "
                    "stays addressable by sha256",
                    rubric.name,
                    rubric.version,
                    previous[:12],
                    rubric.sha256[:12],
                )
            self._by_sha[rubric.sha256] = entry
            self._by_version[key] = rubric.sha256
            self._latest[rubric.name] = max(self._latest.get(rubric.name, 0), rubric.version)
            return entry, True

    def resolve(
        self, name: str, *, version: int | None = None, sha256: str | None = None
    ) -> Rubric:
        """Return the rubric called ``name`` (latest version unless pinned).

        Raises:
            RubricNotFoundError: nothing matches; the message lists what exists.
        """
        with self._lock:
            if sha256 is not None:
                entry = self._by_sha.get(sha256.lower())
                if entry is None or entry.rubric.name != name:
                    raise RubricNotFoundError(f"no rubric {name!r} with sha256 {sha256}")
                if version is not None and entry.rubric.version != version:
                    raise RubricNotFoundError(
                        f"sha256 {sha256[:12]} is {name!r} v{entry.rubric.version}, not v{version}"
                    )
                return entry.rubric
            if name not in self._latest:
                known = ", ".join(sorted(self._latest)) or "none"
                raise RubricNotFoundError(f"no rubric named {name!r} (known: {known})")
            wanted = version if version is not None else self._latest[name]
            sha = self._by_version.get((name, wanted))
            if sha is None:
                versions = sorted(v for (n, v) in self._by_version if n == name)
                raise RubricNotFoundError(
                    f"rubric {name!r} has no version {wanted} (have {versions})"
                )
            return self._by_sha[sha].rubric

    def by_sha256(self, sha256: str) -> CatalogEntry:
        """Return the entry with this sha256."""
        with self._lock:
            entry = self._by_sha.get(sha256.lower())
        if entry is None:
            raise RubricNotFoundError(f"no rubric with sha256 {sha256}")
        return entry

    def entries(self) -> list[CatalogEntry]:
        """Every known version, by name then version."""
        with self._lock:
            entries = list(self._by_sha.values())
        return sorted(entries, key=lambda e: (e.rubric.name, e.rubric.version, e.rubric.sha256))

    def is_current(self, entry: CatalogEntry) -> bool:
        """Whether ``entry`` is what its name and version resolve to now."""
        key = (entry.rubric.name, entry.rubric.version)
        with self._lock:
            return self._by_version.get(key) == entry.rubric.sha256

    def scan(
        self,
        directories: Iterable[Path],
        save: Callable[[CatalogEntry], object] | None = None,
    ) -> list[CatalogEntry]:
        """Load new or changed ``*.yaml`` files; return what was added.

        A file that fails validation, or cannot be read, is logged (with its
        line-numbered issues) and skipped; the versions it had before stay in
        place. ``save`` runs before a new version is published: if it raises,
        the version stays out and the file is tried again at the next scan;
        if it raises :class:`RubricRefusedError`, the version stays out (logged
        with the reason) until the file changes.

        The service calls this on an interval rather than on file events
        (``watchfiles``): the same interval must poll the store for versions
        other replicas saved, which no file watcher sees, and a stat per rubric
        file is all an unchanged folder costs.
        """
        added = []
        for directory in directories:
            if not directory.is_dir():
                continue
            for path in sorted(directory.glob("*.y*ml")):
                try:
                    stat = path.stat()
                except OSError:
                    continue
                state = (stat.st_mtime, stat.st_size)
                if self._file_state.get(path) == state:
                    continue
                self._file_state[path] = state
                self._file_refusals.pop(path, None)
                problem: RubricError | None = None
                try:
                    text = path.read_text(encoding="utf-8")
                    rubric = parse_rubric(text, source=str(path), registry=self._registry)
                except (OSError, UnicodeDecodeError) as e:
                    problem = RubricError(
                        [RubricIssue(str(path), None, None, "", f"unreadable: {e}")]
                    )
                except RubricError as e:
                    problem = e
                if problem is not None:
                    if str(self._file_errors.get(path)) != str(problem):
                        logger.error(
                            "rubric file %s is invalid and was not loaded:\n%s", path, problem
                        )
                    self._file_errors[path] = problem
                    continue
                self._file_errors.pop(path, None)
                entry = CatalogEntry(rubric=rubric, text=text, origin=str(path))
                if save is not None and not self.knows(rubric.sha256):
                    try:
                        save(entry)
                    except RubricRefusedError as e:
                        logger.error("rubric file %s was not published: %s", path, e)
                        self._file_refusals[path] = str(e)
                        continue
                    except Exception:  # the store's failure; the file is fine: retry it
                        logger.exception("could not store rubric file %s; will retry", path)
                        del self._file_state[path]
                        continue
                entry, new = self.add(rubric, text, str(path))
                if new:
                    added.append(entry)
        return added

    def knows(self, sha256: str) -> bool:
        """Whether a version with this sha256 is in the catalog."""
        with self._lock:
            return sha256 in self._by_sha

    def file_errors(self) -> dict[Path, RubricError]:
        """Rubric files that are currently invalid, with their issues."""
        return dict(self._file_errors)

    def file_refusals(self) -> dict[Path, str]:
        """Rubric files whose current content ``save`` refused to publish, with why."""
        return dict(self._file_refusals)
