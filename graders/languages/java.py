"""Java (OpenJDK 17): the candidate's class behind a dispatcher, the tests behind stubs.

One module, one job: Java's builds as data. The candidate's class, its dispatcher and
the stubbed tests are generated from one reading of the declaration, and their parts
must agree type for type.

The programs of a ``test_program`` task, all compiled with ``javac -proc:none``
(no annotation processor runs) into ``classes/``, and all using
``runtime/ArbiterBridge.java``, compiled once by :meth:`JavaLanguage.prepare`
into ``{cache}`` and put on the class path (the wire codec; a value is converted to a
declared type by reflection on its generic type: ``int``/``Integer``, ``long``,
``double``, ``float``, ``boolean``, ``char``, ``String``, ``List<T>`` and the
other collections, ``Map<K, V>``, ``Optional<T>``, arrays, and ``Object`` by
the value's tag):

* the **candidate's program**: the candidate's code (the prompt's imports put
  before it where it lacks them) and ``ArbiterDispatch``, the run's main class,
  which serves requests on descriptor 3: each names a method of the prompt's
  class (``Solution``), found by reflection by name and arity, its arguments
  converted to the method's generic parameter types. The candidate's own
  ``main``, static initialisers, ``System.exit``, shadowing classes
  (``Arrays``, ``Objects``, ``AssertionError``) all stay in that process;
* the **harness** (``Main.java``, named after the tests' public class): the
  prompt with its trailing open method replaced by a stub (its complete helper
  methods kept: they are the task's), its class closed, then the tests. The stub
  sends the call and converts the reply to its declared return type, found as
  ``new Object(){}.getClass().getEnclosingMethod().getGenericReturnType()``; a
  reply that does not fit, an exception reply, or the end of the stream halts
  the harness with status 3, which no ``catch`` in the tests can turn into a pass;
* the **standalone program** for ``stdin_stdout`` tasks: the candidate's code.

The JVM runs with a small fixed footprint (serial GC, C1 only, one compiler
thread, small code cache and class space), so its address space beyond the
heap (``-Xmx{memory_mb}m``) and its threads are known: see :attr:`limits`.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

from arbiter.graders.languages import c_family
from arbiter.graders.languages.base import (
    Build,
    Declared,
    Language,
    LanguageLimits,
    ProgramParts,
    Toolchain,
    UnsupportedTask,
    source_text,
    task_text,
)

__all__ = ["LANGUAGE", "JavaLanguage", "mask"]

log = logging.getLogger("arbiter.graders.languages.java")

RUNTIME = "ArbiterBridge.java"
_RUNTIME_PATH = Path(__file__).with_name("runtime") / RUNTIME
_RUNTIME_DIGEST = hashlib.sha256(_RUNTIME_PATH.read_bytes()).hexdigest()[:16]
#: Where :meth:`JavaLanguage.prepare` compiles the bridge once, named by its source's
#: digest (a changed bridge is compiled anew beside the old one).
BRIDGE_DIR = f"bridge-{_RUNTIME_DIGEST}"
#: The bridge's classes on a build's class path.
BRIDGE_CLASSES = "{cache}/" + BRIDGE_DIR
#: The candidate program's main class (generated).
DISPATCH = "ArbiterDispatch"
#: The directory every build compiles its classes into (the run's artifact).
CLASSES = "classes"

#: The JVM's footprint flags, for every run: serial GC, C1 only with one compiler
#: thread, bounded code cache and class space, no perf-data file in /tmp, no attach
#: listener, and the VM's own messages ("Terminating due to java.lang.OutOfMemoryError")
#: on stderr, not in a program's stdout. So bounded, the JVM needs about 480 MiB of
#: address space besides the heap and 13 threads (measured on OpenJDK 17 with ulimit -v
#: and /proc/PID/task); :attr:`JavaLanguage.limits` adds a margin.
JVM_FLAGS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:CICompilerCount=1",
    "-XX:ReservedCodeCacheSize=32m",
    "-XX:CompressedClassSpaceSize=64m",
    "-XX:MaxMetaspaceSize=256m",
    "-Xss8m",
    "-Xshare:auto",
    "-XX:-UsePerfData",
    "-XX:+DisableAttachMechanism",
    "-XX:+DisplayVMOutputToStderr",
)
#: A run's own flags: the heap at the task's memory, out of it means out of memory.
RUN_FLAGS = (*JVM_FLAGS, "-Xmx{memory_mb}m", "-XX:+ExitOnOutOfMemoryError")
#: Descriptor 3 is opened through java.io.FileDescriptor's private field.
BRIDGE_FLAGS = ("--add-opens", "java.base/java.io=ALL-UNNAMED")
#: javac is itself a JVM: the same footprint, a fixed heap.
JAVAC = (
    "javac",
    *(f"-J{flag}" for flag in JVM_FLAGS),
    "-J-Xmx768m",
    "-proc:none",
    "-encoding",
    "UTF-8",
    "-nowarn",
    "-Xlint:none",
    "-d",
    CLASSES,
)
#: javac's own classes, archived once by :meth:`JavaLanguage.prepare` (class data
#: sharing, a dynamic archive over the JDK's): each javac maps them where it would
#: load and verify them again, 0.47 s to 0.31 s of a small compile (measured). The
#: compiler and its output are the same either way: a JVM that cannot use the
#: archive (missing, or of another JDK) loads the classes itself, silently.
JAVAC_ARCHIVE = "javac.jsa"
#: A build's javac with the archive (``{cache}`` is the prepared directory).
JAVAC_SHARED = (
    JAVAC[0],
    f"-J-XX:SharedArchiveFile={{cache}}/{BRIDGE_DIR}/{JAVAC_ARCHIVE}",
    *JAVAC[1:],
)
#: glibc's per-thread malloc arenas reserve 64 MiB of address space each.
ENV = {"MALLOC_ARENA_MAX": "2"}
#: A JVM opens sockets on its own (libnet probes IPv4 and IPv6 when it loads,
#: which every NIO file channel does), and the sandbox kills a process that
#: asks for one: the preloaded shim answers the JVM's socket() with EACCES,
#: which it handles. Built once by ``prepare`` into the toolchain cache.
NOSOCKETS = "arbiter_nosockets.so"
BUILD_ENV = {**ENV, "LD_PRELOAD": "{cache}/" + NOSOCKETS}
_NOSOCKETS_SOURCE = Path(__file__).with_name("runtime") / "arbiter_nosockets.c"

# Types a declared method's parameters and result may use: what the bridge converts.
_SUPPORTED_TYPES = frozenset(
    {
        "int", "long", "short", "byte", "double", "float", "boolean", "char", "void",
        "Integer", "Long", "Short", "Byte", "Double", "Float", "Boolean", "Character",
        "String", "CharSequence", "Object", "Number", "BigInteger",
        "List", "ArrayList", "LinkedList", "Collection", "Iterable", "Set", "HashSet",
        "LinkedHashSet", "TreeSet", "SortedSet", "NavigableSet", "Queue", "Deque",
        "ArrayDeque", "Stack", "Vector",
        "Map", "HashMap", "LinkedHashMap", "TreeMap", "SortedMap", "NavigableMap", "Entry",
        "Optional", "OptionalInt", "OptionalLong", "OptionalDouble",
        "extends", "super",
    }
)  # fmt: skip
_QUALIFIED = re.compile(r"\b(?:java\.(?:util|lang|math)\.)")
_MODIFIERS = frozenset(
    {
        "public", "protected", "private", "static", "final", "synchronized", "abstract",
        "native", "strictfp", "default",
    }
)  # fmt: skip
_IDENT = r"[A-Za-z_$][\w$]*"


def mask(src: str) -> str:
    """``src`` with comments and literals blanked, offsets kept (``c_family.JAVA``)."""
    return c_family.mask(c_family.JAVA, src)


#: What names the class a brace opens: the text before it, since the last brace or ``;``,
#: holds no ``;``, ``{`` or ``}``, so the first such declaration in it is the one.
_TYPE_DECLARATION = re.compile(rf"\b(?:class|interface|enum|record)\s+({_IDENT})")


class _Scopes:
    """The braces open at rising positions of one masked text, read in one pass over it.

    A call per position from the start would be quadratic: a response repeating
    ``public class A{}`` asks at every one.
    """

    def __init__(self, masked: str) -> None:
        self.masked = masked
        self.stack: list[str | None] = []
        self.start = 0  # where the text since the last brace or semicolon begins
        self.read = 0  # how far the text has been read

    def at(self, stop: int) -> list[str | None]:
        """Return the braces open at ``stop``: a class's name, or None for a block."""
        if stop < self.read:
            raise ValueError("positions must be asked for in rising order")
        masked, stack = self.masked, self.stack
        for i in range(self.read, stop):
            c = masked[i]
            if c == "{":
                found = _TYPE_DECLARATION.search(masked, self.start, i)
                stack.append(found.group(1) if found else None)
                self.start = i + 1
            elif c == "}":
                if stack:
                    stack.pop()
                self.start = i + 1
            elif c == ";":
                self.start = i + 1
        self.read = max(self.read, stop)
        return list(stack)


def _scopes(masked: str, stop: int | None = None) -> list[str | None]:
    """The braces open at ``stop`` (default: the end): a class's name, or None for a block."""
    return _Scopes(masked).at(len(masked) if stop is None else stop)


def _split_top(text: str) -> list[str]:
    """Split ``text`` at the commas outside <>, (), []."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _strip_annotations(text: str) -> str:
    return re.sub(rf"@{_IDENT}(?:\.{_IDENT})*(?:\s*\([^()]*\))?", " ", text).strip()


def _param(text: str) -> tuple[str, str]:
    """One parameter's (name, type): annotations and ``final`` dropped."""
    words = _strip_annotations(text)
    words = re.sub(r"\bfinal\s+", "", words).strip()
    found = re.fullmatch(rf"(.+?)\s*({_IDENT})\s*((?:\[\s*\])*)", words, re.S)
    if not found or not found.group(1).strip():
        raise UnsupportedTask(f"cannot read the parameter {text!r}")
    return found.group(2), (found.group(1).strip() + found.group(3).replace(" ", "")).strip()


def _check_type(text: str, type_params: set[str], where: str) -> None:
    plain = _QUALIFIED.sub("", text).replace("Map.Entry", "Entry")
    for word in re.findall(_IDENT, plain):
        if word not in _SUPPORTED_TYPES and word not in type_params:
            raise UnsupportedTask(
                f"the {where} type {text.strip()!r} cannot cross the bridge ({word} is not "
                "a primitive, a box, String, Object, a collection, a map or an Optional)"
            )


class _Open:
    """The prompt's trailing open method: what it declares and where its header starts."""

    def __init__(self, declared: Declared, start: int, scopes: list[str | None]) -> None:
        self.declared = declared
        self.start = start
        self.scopes = scopes

    @property
    def class_name(self) -> str:
        """The binary name of the class the method is declared in (``Outer$Inner``)."""
        names = [s for s in self.scopes if s is not None]
        return "$".join(names)


_HEADER = re.compile(
    rf"""^(?P<mods>(?:(?:{"|".join(sorted(_MODIFIERS))})\s+|@{_IDENT}(?:\.{_IDENT})*(?:\s*\([^()]*\))?\s*)*)
        (?:<(?P<tparams>[^()]*)>\s*)?
        (?P<ret>[\w$.<>\[\]?,\s]+?)\s*
        \b(?P<name>{_IDENT})\s*\((?P<params>.*)\)\s*
        (?:throws\s+[\w$.,\s]+)?$""",
    re.S | re.X,
)


def _open_method(prompt: str) -> _Open:
    text = prompt.rstrip()
    masked = mask(text)
    if not masked.endswith("{"):
        raise UnsupportedTask("the prompt does not end with an open method declaration")
    brace = len(masked) - 1
    start = max(masked.rfind(c, 0, brace) for c in ";{}") + 1
    # The header starts at its first word after the previous statement or brace
    # (the doc comment before it is blanked in the masked text).
    while start < brace and masked[start].isspace():
        start += 1
    header_masked = masked[start:brace].strip()
    found = _HEADER.match(header_masked)
    if not found:
        raise UnsupportedTask("the prompt does not end with an open method declaration")
    name = found.group("name")
    if name in ("if", "for", "while", "switch", "catch", "synchronized", "try", "else"):
        raise UnsupportedTask("the prompt does not end with an open method declaration")
    scopes = _scopes(masked, brace)
    if not scopes or scopes[-1] is None:
        raise UnsupportedTask(f"the open method {name} is not declared in a class")
    tparams = {
        re.match(rf"\s*({_IDENT})", p).group(1)  # type: ignore[union-attr]
        for p in _split_top(found.group("tparams") or "")
    }
    returns = found.group("ret").strip()
    _check_type(returns, tparams, "return")
    params = tuple(_param(p) for p in _split_top(found.group("params")))
    for pname, ptype in params:
        _check_type(ptype.replace("...", ""), tparams, f"parameter {pname}'s")
    header = text[start:brace].strip()
    return _Open(Declared(name, header, params, returns), start, scopes)


def _public_class(masked: str) -> str | None:
    """The name of the top-level public class of a compilation unit, if it has one."""
    scopes = _Scopes(masked)
    for found in re.finditer(
        rf"\bpublic\s+(?:(?:final|abstract|static)\s+)*class\s+({_IDENT})", masked
    ):
        if not scopes.at(found.start()):
            return found.group(1)
    return None


def _main_class(masked: str) -> str | None:
    """The class whose ``static void main`` a compilation unit defines (top-level first)."""
    scopes = _Scopes(masked)
    for found in re.finditer(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(", masked):
        names = [s for s in scopes.at(found.start()) if s is not None]
        if names:
            return "$".join(names)
    return None


_IMPORT = re.compile(r"(?m)^[ \t]*import\s+(?:static\s+)?[\w$.]+(?:\.\*)?\s*;[ \t]*\n?")


def _imports(prompt: str) -> list[str]:
    masked = mask(prompt)
    return [prompt[m.start() : m.end()].strip() for m in _IMPORT.finditer(masked)]


#: A run's class path: its own classes, then the prepared bridge's.
_CLASS_PATH = f"{CLASSES}:{BRIDGE_CLASSES}"


def _stamped(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except OSError:
        return False


def _compile_bridge(toolchain: Toolchain, target: Path, stamp: str) -> None:
    """Compile runtime/ArbiterBridge.java into ``target`` (replacing what is there)."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".java-bridge-") as scratch:
        Path(scratch, RUNTIME).write_bytes(_RUNTIME_PATH.read_bytes())
        # The same javac archives the classes it loaded as it exits (JAVAC_ARCHIVE,
        # written under -d): without the archive javac only starts slower.
        archive = Path(scratch, CLASSES, JAVAC_ARCHIVE)
        argv = [
            toolchain.paths["javac"],
            f"-J-XX:ArchiveClassesAtExit={archive}",
            *JAVAC[1:],
            RUNTIME,
        ]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": scratch, "TMPDIR": scratch, **ENV}
        done = subprocess.run(
            argv, cwd=scratch, env=env, capture_output=True, timeout=300, check=False
        )
        if done.returncode != 0:
            text = (done.stderr + done.stdout).decode("utf-8", "replace")
            raise RuntimeError(f"the Java bridge does not compile: {text}")
        built = Path(scratch, CLASSES)
        if not archive.is_file():
            log.warning(
                "javac's classes were not archived (each compile loads them): %s",
                (done.stderr + done.stdout).decode("utf-8", "replace")[-2000:],
            )
        Path(built, "stamp").write_text(stamp, encoding="utf-8")
        for path in (built, *built.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        if target.exists():
            old = Path(scratch, "old")
            target.rename(old)
        built.rename(target)


def _build_nosockets(toolchain: Toolchain, cache_dir: Path) -> None:
    """Build the socket shim into ``cache_dir`` unless its source has not changed."""
    source = _NOSOCKETS_SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    stamp = cache_dir / (NOSOCKETS + ".sha256")
    target = cache_dir / NOSOCKETS
    if target.exists() and stamp.exists() and stamp.read_text() == digest:
        return
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".nosockets-") as scratch:
        Path(scratch, "shim.c").write_bytes(source)
        argv = [toolchain.paths["gcc"], "-O2", "-shared", "-fPIC", "-o", NOSOCKETS, "shim.c"]
        done = subprocess.run(
            argv, cwd=scratch, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=120
        )
        if done.returncode != 0:
            raise RuntimeError(f"the JVM's socket shim does not build: {done.stderr!r}")
        Path(scratch, NOSOCKETS).chmod(0o644)
        Path(scratch, NOSOCKETS).rename(target)
    stamp.write_text(digest)


def _java_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class JavaLanguage(Language):
    """Java 17: javac into ``classes/``, java with a bounded JVM; the bridge by reflection."""

    name: ClassVar[str] = "java"
    tags: ClassVar[tuple[str, ...]] = ("java",)
    #: gcc builds the socket shim the sandboxed JVM preloads (see ``NOSOCKETS``).
    tools: ClassVar[tuple[str, ...]] = ("javac", "java", "gcc")
    version_command: ClassVar[tuple[str, ...]] = ("java", "-version")
    #: The JDK's configuration (jvm.cfg, java.security) is linked from /etc; the JDK
    #: itself is under /usr/lib/jvm.
    extra_roots: ClassVar[tuple[str, ...]] = ("/etc/java-17-openjdk",)
    limits: ClassVar[LanguageLimits] = LanguageLimits(
        address_space_mb=640,
        threads=16,
        open_files=128,
        compile_cpu_s=60.0,
        compile_memory_mb=2048,
        compile_processes=32,
    )
    out_of_memory: ClassVar[tuple[re.Pattern[str], ...]] = (
        re.compile(r"java\.lang\.OutOfMemoryError"),
        re.compile(r"insufficient memory for the Java Runtime Environment"),
    )

    def find_toolchain(self) -> Toolchain | None:
        """The tools by their real paths (``/usr/bin/java`` links through /etc/alternatives)."""
        found = super().find_toolchain()
        if found is None:
            return None
        paths = {tool: os.path.realpath(path) for tool, path in found.paths.items()}
        home = str(Path(paths["java"]).parent.parent)
        roots = tuple(dict.fromkeys((*found.roots, home)))
        return Toolchain(paths=paths, version=found.version, roots=roots)

    # ---------------------------------------------------------------- reading code

    def defines(self, code: str, name: str) -> bool:
        """Whether ``code`` declares the method ``name`` with a body.

        A method without its class still stands without the prompt's text:
        :meth:`candidate` puts it in the prompt's class.
        """
        masked = mask(code)
        pattern = rf"[\w$>\]]\s+{re.escape(name)}\s*\([^;{{}}]*\)\s*(?:throws\s+[\w$.,\s]+)?\{{"
        return re.search(pattern, masked) is not None

    def declared(self, parts: ProgramParts) -> list[Declared]:
        """The prompt's trailing open method (its type must cross the bridge)."""
        return [_open_method(parts.prompt).declared]

    # ---------------------------------------------------------------- builds

    def prepare(self, toolchain: Toolchain, cache_dir: str) -> Toolchain:
        """Compile the bridge once into ``cache_dir``/``BRIDGE_DIR`` (a javac less per build).

        The directory is named by the bridge source's digest and stamped with the
        toolchain's version: another JDK compiles it anew. Builds read it as
        ``{cache}`` (javac's and java's class path), so ``cache_dir`` joins the roots.
        """
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        target = Path(cache_dir, BRIDGE_DIR)
        stamp = (
            f"{toolchain.paths.get('javac')}\n{toolchain.version}\n{' '.join(JAVAC)}\n"
            f"{JAVAC_ARCHIVE}\n"
        )
        with open(Path(cache_dir, ".java-bridge.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not _stamped(target / "stamp", stamp):
                _compile_bridge(toolchain, target, stamp)
            _build_nosockets(toolchain, Path(cache_dir))
        roots = tuple(dict.fromkeys((*toolchain.roots, str(Path(cache_dir).resolve()))))
        return Toolchain(paths=dict(toolchain.paths), version=toolchain.version, roots=roots)

    def _unit(self, code: str, default: str) -> str:
        """The file a compilation unit must be in: its public class's name."""
        public = _public_class(mask(code))
        return f"{public or default}.java"

    def candidate(self, parts: ProgramParts) -> Build:
        """The candidate's code (the prompt's imports added) and the dispatching main class."""
        task_text(parts.prompt)
        opened = _open_method(parts.prompt)
        code = source_text(parts.code)
        masked = mask(code)
        if not re.search(rf"\b(?:class|interface|enum|record)\s+{_IDENT}", masked):
            # Methods without a class: they go in the prompt's class, where the prompt
            # opens its method (the prompt's helpers before them), their imports first.
            spans = [(m.start(), m.end()) for m in _IMPORT.finditer(masked)]
            prefix = "\n".join(code[a:b].strip() for a, b in spans)
            body = code
            for a, b in reversed(spans):
                body = body[:a] + body[b:]
            closing = "}\n" * len(opened.scopes)
            code = (prefix + "\n" if prefix else "") + parts.prompt[: opened.start]
            code += body.strip("\n") + "\n" + closing
            masked = mask(code)
        # Blanks up to the line's start only: ``^\s*`` from every line start of a run of
        # empty lines reads the whole run again (quadratic in a response of newlines).
        if not re.search(r"(?m)^[^\S\n]*package\s", masked):
            present = {re.sub(r"\s+", "", line) for line in _imports(code)}
            missing = [i for i in _imports(parts.prompt) if re.sub(r"\s+", "", i) not in present]
            if missing:
                code = "\n".join(missing) + "\n" + code
        unit = self._unit(code, "Candidate")
        if unit in (f"{DISPATCH}.java", RUNTIME):
            unit = "Candidate.java"
        dispatcher = (
            f"public final class {DISPATCH} {{\n"
            f"    public static void main(String[] args) {{\n"
            f"        ArbiterBridge.serve({_java_string(opened.class_name)});\n"
            f"    }}\n"
            f"}}\n"
        )
        files = {unit: code, f"{DISPATCH}.java": dispatcher}
        return Build(
            files=files,
            compile=((*JAVAC_SHARED, "-cp", BRIDGE_CLASSES, f"{DISPATCH}.java", unit),),
            artifacts=(CLASSES,),
            run=("java", *RUN_FLAGS, *BRIDGE_FLAGS, "-cp", _CLASS_PATH, DISPATCH),
            env=dict(BUILD_ENV),
            flags=(BRIDGE_DIR,),
        )

    def stub(self, declared: Declared) -> str:
        """The method that stands in for the candidate's: the call goes over descriptor 3."""
        args = ", ".join(name for name, _ in declared.params)
        call = (
            f"ArbiterBridge.call({_java_string(declared.name)}, "
            f"new Object(){{}}.getClass().getEnclosingMethod(), new Object[]{{{args}}})"
        )
        body = f"{call};" if declared.returns == "void" else f"return {call};"
        return f"{declared.header} {{\n        {body}\n    }}\n"

    def harness(self, parts: ProgramParts) -> Build:
        """The prompt with a stub for its open method, its classes closed, then the tests."""
        task_text(parts.prompt, parts.tests, parts.setup_code)
        opened = _open_method(parts.prompt)
        prompt = parts.prompt[: opened.start]
        tests_masked = mask(parts.tests)
        tests_public = _public_class(tests_masked)
        if tests_public is not None:
            # One file holds the prompt's classes and the tests: only one may be public.
            masked = mask(prompt)
            scopes = _Scopes(masked)
            top = [
                found
                for found in re.finditer(
                    r"\bpublic\s+(?=(?:(?:final|abstract)\s+)*class\b)", masked
                )
                if not scopes.at(found.start())
            ]
            for found in reversed(top):
                prompt = prompt[: found.start()] + prompt[found.end() :]
        closing = "}\n" * len(opened.scopes)
        source = prompt + self.stub(opened.declared) + closing + "\n" + parts.tests
        main = _main_class(tests_masked) or _main_class(mask(source)) or "Main"
        unit = f"{tests_public or 'Main'}.java"
        return Build(
            files={unit: source},
            compile=((*JAVAC_SHARED, "-cp", BRIDGE_CLASSES, unit),),
            artifacts=(CLASSES,),
            run=("java", *RUN_FLAGS, *BRIDGE_FLAGS, "-cp", _CLASS_PATH, main),
            env=dict(BUILD_ENV),
            flags=(BRIDGE_DIR,),
        )

    def program(self, code: str) -> Build:
        """The code alone, run from the class that defines ``main``."""
        masked = mask(source_text(code))
        unit = self._unit(code, "Main")
        main = _main_class(masked) or "Main"
        return Build(
            files={unit: code},
            compile=((*JAVAC_SHARED, unit),),
            artifacts=(CLASSES,),
            run=("java", *RUN_FLAGS, "-cp", CLASSES, main),
            env=dict(BUILD_ENV),
        )

    def naive(self, parts: ProgramParts) -> Build:
        """The code and the tests in one file, ``Main`` run (HumanEvalPack's own way)."""
        source = parts.code.rstrip() + "\n\n" + parts.tests
        masked = mask(source)
        unit = f"{_public_class(mask(parts.tests)) or 'Main'}.java"
        main = _main_class(mask(parts.tests)) or _main_class(masked) or "Main"
        return Build(
            files={unit: source},
            compile=((*JAVAC, unit),),
            artifacts=(CLASSES,),
            run=("java", *RUN_FLAGS, "-cp", CLASSES, main),
            env=dict(BUILD_ENV),
        )


LANGUAGE = JavaLanguage()
