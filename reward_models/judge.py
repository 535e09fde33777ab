"""LLM judges: rubric prompts, verdict parsing, and chat backends (HTTP or local model).

A judge is asked to grade one response against one criterion whose levels
1..N each carry a description and a value in [0, 1] (Prometheus-style
anchors). Its answer ends in ``[RESULT] k``. The verdict is read as follows:

* **Bound to the last match.** The response under judgement is untrusted text:
  it can contain ``[RESULT] 5`` or ``Score: 5``, and a judge that quotes it
  would carry that grade into its own answer. Only the *last* ``[RESULT] k``
  of the judge's answer counts — the one the template makes it write at the
  end — and ``Score: k`` is not a verdict at all. No match, or a level outside
  1..N, is a :class:`JudgeParseError`: no score, never a default.
* **Logprob-weighted expectation.** When the backend returns the top logprobs
  of the grade's token, the value is the expectation of the level values under
  the judge's distribution over the valid levels (renormalized over them):
  a judge torn between 3 and 4 gives a value between them, a smoother reward
  than the argmax.

:class:`JudgeClient` adds what a service needs around a backend: a
concurrency limit, a deadline, retries with exponential backoff (honouring
``Retry-After``) on retryable failures only, N votes with an aggregation, and
an LRU cache keyed by (model, prompt hash, sampling parameters, vote).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import math
import re
import statistics
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx

from reward_models.errors import (
    ConfigurationError,
    JudgeError,
    JudgeParseError,
    JudgeTimeoutError,
    JudgeUnavailableError,
)

__all__ = [
    "Criterion",
    "JudgeBackend",
    "JudgeClient",
    "JudgeReply",
    "JudgeResult",
    "Level",
    "LocalCausalLMBackend",
    "OpenAIChatBackend",
    "PairwiseResult",
    "Preference",
    "SamplingParams",
    "TokenLogprob",
    "Verdict",
    "load_template",
    "parse_preference",
    "parse_verdict",
    "render_pairwise_prompt",
    "render_prompt",
]

TEMPLATES = Path(__file__).parent / "templates"
RESULT_PATTERN = re.compile(r"\[RESULT\]\s*\(?(\d+)\)?")
PREFERENCE_PATTERN = re.compile(r"\[RESULT\]\s*\(?([AB])\)?(?![A-Za-z])")
Messages = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class Level:
    """One anchor of a criterion's scale."""

    score: int
    description: str
    value: float


@dataclass(frozen=True, slots=True)
class Criterion:
    """What the judge grades, with levels 1..N in order."""

    name: str
    description: str
    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        if [lv.score for lv in self.levels] != list(range(1, len(self.levels) + 1)):
            raise ConfigurationError(f"criterion {self.name!r}: levels must be 1..N in order")
        if not 2 <= len(self.levels) <= 9:
            raise ConfigurationError(f"criterion {self.name!r}: between 2 and 9 levels")
        if any(not 0.0 <= lv.value <= 1.0 for lv in self.levels):
            raise ConfigurationError(f"criterion {self.name!r}: level values must be in [0, 1]")

    def value_of(self, level: int) -> float:
        """Return the value of level ``level`` (1-based)."""
        return self.levels[level - 1].value


@dataclass(frozen=True, slots=True)
class SamplingParams:
    """How the judge samples; part of the cache key."""

    temperature: float = 0.0
    max_tokens: int = 512
    top_logprobs: int = 20
    seed: int | None = None
    #: The criterion's highest level; a backend that forces the grade token
    #: (a prefilled local model) picks among "1".."max_level".
    max_level: int | None = None


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token, its logprob, and the top alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class JudgeReply:
    """The judge's answer text and, when the backend gives them, its token logprobs."""

    text: str
    tokens: tuple[TokenLogprob, ...] | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """A parsed grade: the level written, and the value it is worth."""

    level: int
    value: float
    method: Literal["logprobs", "pattern"]
    distribution: dict[int, float] | None = None


@dataclass(frozen=True, slots=True)
class Preference:
    """A parsed pairwise verdict, with P(A) when logprobs gave it."""

    winner: Literal["A", "B"]
    p_a: float | None
    method: Literal["logprobs", "pattern"]


@dataclass(frozen=True, slots=True)
class PairwiseResult:
    """The candidate's value against a baseline over both presentation orders.

    ``value`` is 1.0 when the candidate wins in both orders, 0.0 when it loses in
    both, 0.5 (a tie) when the verdict flips with the order — position bias, not
    preference. With logprobs and a consistent verdict it is the mean win
    probability over the two orders.
    """

    value: float
    consistent: bool
    candidate_first: Preference
    candidate_second: Preference


@dataclass(frozen=True, slots=True)
class JudgeResult:
    """The aggregated value of one criterion over its votes."""

    value: float
    verdicts: tuple[Verdict, ...]
    cached: int = 0


# -- prompts ------------------------------------------------------------------------


def load_template(name: str) -> str:
    """Return the text of ``templates/<name>.txt``.

    Raises:
        ConfigurationError: no such template (names are plain words, no paths).
    """
    if not re.fullmatch(r"[a-z0-9_]+", name):
        raise ConfigurationError(f"template name {name!r} must be lowercase letters, digits, _")
    path = TEMPLATES / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in TEMPLATES.glob("*.txt"))
        raise ConfigurationError(f"no judge template {name!r} (known: {', '.join(known)})")
    return path.read_text(encoding="utf-8")


def _defang(text: str) -> str:
    # The response must not close its own fence and pose as judge instructions.
    return text.replace("<<<", "< < <").replace(">>>", "> > >")


def render_prompt(
    template: str,
    *,
    instruction: str,
    response: str,
    criterion: Criterion,
    reference: str | None = None,
) -> Messages:
    """Build the judge's chat messages from ``template`` (and its _system, _reference parts)."""
    max_level = len(criterion.levels)
    levels = "\n".join(f"Score {lv.score}: {lv.description}" for lv in criterion.levels)
    reference_block = ""
    if reference is not None:
        reference_block = load_template(f"{template}_reference").format(
            reference=_defang(reference), max_level=max_level
        )
    user = load_template(template).format(
        instruction=_defang(instruction),
        response=_defang(response),
        reference_note=", a reference answer" if reference is not None else "",
        reference_block=reference_block,
        criterion=criterion.name,
        criterion_description=criterion.description,
        levels=levels,
        max_level=max_level,
    )
    messages: Messages = []
    with contextlib.suppress(ConfigurationError):
        messages.append({"role": "system", "content": load_template(f"{template}_system").strip()})
    messages.append({"role": "user", "content": user})
    return messages


def render_pairwise_prompt(
    template: str,
    *,
    instruction: str,
    response_a: str,
    response_b: str,
    criterion: str,
    criterion_description: str,
    reference: str | None = None,
) -> Messages:
    """Build a pairwise judge's messages from ``template`` (and its _system, _reference parts)."""
    reference_block = ""
    if reference is not None:
        reference_block = load_template(f"{template}_reference").format(
            reference=_defang(reference)
        )
    user = load_template(template).format(
        instruction=_defang(instruction),
        response_a=_defang(response_a),
        response_b=_defang(response_b),
        reference_note=", a reference answer" if reference is not None else "",
        reference_block=reference_block,
        criterion=criterion,
        criterion_description=criterion_description,
    )
    messages: Messages = []
    with contextlib.suppress(ConfigurationError):
        messages.append({"role": "system", "content": load_template(f"{template}_system").strip()})
    messages.append({"role": "user", "content": user})
    return messages


# -- verdicts -----------------------------------------------------------------------


def parse_verdict(reply: JudgeReply, criterion: Criterion, *, use_logprobs: bool = True) -> Verdict:
    """Read the grade from the judge's answer: its last ``[RESULT] k`` (pure).

    Raises:
        JudgeParseError: no ``[RESULT] k`` in the answer, or ``k`` outside 1..N.
    """
    matches = list(RESULT_PATTERN.finditer(reply.text))
    if not matches:
        raise JudgeParseError(f"no '[RESULT] <1-{len(criterion.levels)}>' in the judge's answer")
    last = matches[-1]
    level = int(last.group(1))
    if not 1 <= level <= len(criterion.levels):
        raise JudgeParseError(f"the judge gave level {level}, outside 1..{len(criterion.levels)}")
    if use_logprobs and reply.tokens:
        distribution = _level_distribution(reply, last.start(1), last.end(1), criterion)
        if distribution is not None:
            value = math.fsum(p * criterion.value_of(k) for k, p in distribution.items())
            return Verdict(level, min(1.0, max(0.0, value)), "logprobs", distribution)
    return Verdict(level, criterion.value_of(level), "pattern")


def parse_preference(reply: JudgeReply, *, use_logprobs: bool = True) -> Preference:
    """Read a pairwise verdict: the last ``[RESULT] A`` or ``[RESULT] B`` (pure).

    Raises:
        JudgeParseError: no such verdict in the answer.
    """
    matches = list(PREFERENCE_PATTERN.finditer(reply.text))
    if not matches:
        raise JudgeParseError("no '[RESULT] A' or '[RESULT] B' in the judge's answer")
    last = matches[-1]
    winner: Literal["A", "B"] = "A" if last.group(1) == "A" else "B"
    if use_logprobs and reply.tokens:
        mass = _token_distribution(reply, last.start(1), last.end(1), {"A", "B"})
        if mass is not None and mass.get("A", 0.0) + mass.get("B", 0.0) > 0:
            p_a = mass.get("A", 0.0) / (mass.get("A", 0.0) + mass.get("B", 0.0))
            return Preference(winner, p_a, "logprobs")
    return Preference(winner, None, "pattern")


def _token_distribution(
    reply: JudgeReply, start: int, end: int, valid: set[str]
) -> dict[str, float] | None:
    assert reply.tokens is not None
    # Token texts must rebuild the answer for a character offset to name a token.
    if "".join(t.token for t in reply.tokens) != reply.text:
        return None
    offset = 0
    for token in reply.tokens:
        token_end = offset + len(token.token)
        if offset <= start < token_end:
            if token.token.strip() != reply.text[start:end]:
                return None  # the verdict shares its token with other text
            mass: dict[str, float] = {}
            # The sampled token itself counts when the top list left it out.
            for alternative, logprob in (*token.top, (token.token, token.logprob)):
                key = alternative.strip()
                if key in valid and math.isfinite(logprob):
                    mass.setdefault(key, math.exp(logprob))
            return mass
        offset = token_end
    return None


def _level_distribution(
    reply: JudgeReply, start: int, end: int, criterion: Criterion
) -> dict[int, float] | None:
    valid = {str(k) for k in range(1, len(criterion.levels) + 1)}
    mass = _token_distribution(reply, start, end, valid)
    total = math.fsum(mass.values()) if mass else 0.0
    if not mass or total <= 0:
        return None
    return {int(k): p / total for k, p in sorted(mass.items(), key=lambda kv: int(kv[0]))}


# -- backends -----------------------------------------------------------------------


class JudgeBackend(Protocol):
    """A chat model that answers a judge prompt."""

    @property
    def model(self) -> str:
        """Name the model (part of the cache key)."""
        ...

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer the messages.

        Raises:
            JudgeUnavailableError: retryable: unreachable, 429, 5xx.
            JudgeTimeoutError: no answer in time.
            JudgeError: any other refusal or a garbled answer.
        """
        ...


class JudgeUnavailableRetryAfter(JudgeUnavailableError):
    """Unavailable, with the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, retry_after_s: float | None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OpenAIChatBackend:
    """OpenAI-compatible ``/v1/chat/completions`` (vLLM, SGLang, any provider) over httpx."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Build the backend; ``transport`` lets tests answer in memory."""
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout_s = timeout_s
        self._transport = transport
        self._clients: dict[asyncio.AbstractEventLoop, httpx.AsyncClient] = {}

    @property
    def model(self) -> str:
        """Name the model."""
        return self._model

    def _client(self) -> httpx.AsyncClient:
        # An AsyncClient's connections belong to one event loop.
        loop = asyncio.get_running_loop()
        for old in [lp for lp in self._clients if lp.is_closed()]:
            del self._clients[old]
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                base_url=self._base_url,
                headers=self._headers,
                timeout=self._timeout_s,
                transport=self._transport,
            )
            self._clients[loop] = client
        return client

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Ask for a completion with the top logprobs of every generated token."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "logprobs": params.top_logprobs > 0,
        }
        if params.top_logprobs > 0:
            body["top_logprobs"] = params.top_logprobs
        if params.seed is not None:
            body["seed"] = params.seed
        try:
            response = await self._client().post("/v1/chat/completions", json=body)
        except httpx.TimeoutException as e:
            raise JudgeTimeoutError(f"judge {self._model} timed out: {e}") from e
        except httpx.TransportError as e:
            raise JudgeUnavailableError(
                f"judge at {self._base_url} unreachable: {type(e).__name__}: {e}"
            ) from e
        if response.status_code == 429 or response.status_code >= 500:
            retry_after = response.headers.get("retry-after")
            try:
                seconds = float(retry_after) if retry_after is not None else None
            except ValueError:
                seconds = None
            raise JudgeUnavailableRetryAfter(
                f"judge answered {response.status_code}: {response.text[:200]}", seconds
            )
        if response.status_code != 200:
            raise JudgeError(f"judge refused ({response.status_code}): {response.text[:200]}")
        return self._parse(response)

    def _parse(self, response: httpx.Response) -> JudgeReply:
        try:
            choice = response.json()["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("message content is not text")
            content = (choice.get("logprobs") or {}).get("content")
            tokens = None
            if content:
                tokens = tuple(
                    TokenLogprob(
                        token=str(t["token"]),
                        logprob=float(t["logprob"]),
                        top=tuple(
                            (str(a["token"]), float(a["logprob"]))
                            for a in t.get("top_logprobs") or ()
                        ),
                    )
                    for t in content
                )
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise JudgeError(f"the judge's answer is not a chat completion: {e!r}") from e
        return JudgeReply(text, tokens)

    async def aclose(self) -> None:
        """Close the HTTP clients of this event loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


class LocalCausalLMBackend:
    """A transformers causal LM as judge, run on its own thread.

    With ``prefill`` set (say ``"[RESULT] "``), the judge does not write
    feedback: the assistant turn is started with the prefill and one forward
    pass gives the distribution of the next token — the grade — whose logprobs
    feed the expectation. Without it, the model generates its answer greedily
    (or by sampling when ``temperature > 0``) with per-token top logprobs.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, name: str = "local", prefill: str | None = None
    ) -> None:
        """Wrap a loaded causal LM and its tokenizer (which needs a chat template)."""
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigurationError("the judge's tokenizer has no chat_template")
        self._model_obj = model.eval()
        self._tokenizer = tokenizer
        self._name = name
        self._prefill = prefill
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="judge-lm")

    @property
    def model(self) -> str:
        """Name the model."""
        return self._name

    async def complete(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer on the backend's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.complete_sync, messages, params)

    def _encode(self, messages: Messages) -> list[int]:
        text = self._tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        if self._prefill:
            text += self._prefill
        # The template renders BOS itself; the tokenizer must not add a second.
        ids: list[int] = self._tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def _top(self, logprobs: Any, k: int) -> tuple[tuple[str, float], ...]:
        values, indices = logprobs.topk(max(1, k))
        return tuple(
            (self._tokenizer.decode([int(i)]), float(v))
            for v, i in zip(values.tolist(), indices.tolist(), strict=True)
        )

    def complete_sync(self, messages: Messages, params: SamplingParams) -> JudgeReply:
        """Answer on the calling thread (what a local server or a test calls)."""
        import torch

        ids = torch.tensor([self._encode(messages)], device=self._model_obj.device)
        with torch.inference_mode():
            if self._prefill:
                logits = self._model_obj(input_ids=ids).logits[0, -1].float()
                logprobs = torch.log_softmax(logits, -1)
                best = int(logprobs.argmax())
                top = list(self._top(logprobs, params.top_logprobs))
                if params.max_level is not None:
                    vocab = self._tokenizer.get_vocab()
                    levels = [
                        vocab[str(k)] for k in range(1, params.max_level + 1) if str(k) in vocab
                    ]
                    if levels:
                        # The grade must be a level: the likeliest of "1".."max_level"; and
                        # every level's logprob is reported, in the top-k or not, so the
                        # expectation sees the whole distribution over levels.
                        best = max(levels, key=lambda i: float(logprobs[i]))
                        listed = {t for t, _ in top}
                        for i in levels:
                            name = self._tokenizer.decode([i])
                            if name not in listed:
                                top.append((name, float(logprobs[i])))
                token = self._tokenizer.decode([best])
                return JudgeReply(
                    self._prefill + token,
                    (
                        TokenLogprob(self._prefill, 0.0),
                        TokenLogprob(token, float(logprobs[best]), tuple(top)),
                    ),
                )
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self._model_obj.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=params.max_tokens,
                do_sample=params.temperature > 0,
                temperature=params.temperature if params.temperature > 0 else None,
                top_p=None,
                top_k=None,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=self._tokenizer.eos_token_id,
            )
        generated = out.sequences[0, ids.shape[1] :].tolist()
        tokens = []
        for position, token_id in enumerate(generated):
            logprobs = torch.log_softmax(out.scores[position][0].float(), -1)
            tokens.append(
                TokenLogprob(
                    self._tokenizer.decode([token_id]),
                    float(logprobs[token_id]),
                    self._top(logprobs, params.top_logprobs),
                )
            )
        return JudgeReply("".join(t.token for t in tokens), tuple(tokens))


# -- the client ---------------------------------------------------------------------


@dataclass(slots=True)
class _Cache:
    size: int
    entries: OrderedDict[str, JudgeReply] = field(default_factory=OrderedDict)
    hits: int = 0

    def get(self, key: str) -> JudgeReply | None:
        reply = self.entries.get(key)
        if reply is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return reply

    def put(self, key: str, reply: JudgeReply) -> None:
        self.entries[key] = reply
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)


class JudgeClient:
    """A backend with a concurrency limit, retries, votes and a cache."""

    def __init__(
        self,
        backend: JudgeBackend,
        *,
        max_concurrency: int = 8,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        cache_size: int = 4096,
    ) -> None:
        """Wrap a backend."""
        self.backend = backend
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self._cache = _Cache(cache_size)
        self._gates: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.calls = 0

    @property
    def cache_hits(self) -> int:
        """Return how many answers came from the cache."""
        return self._cache.hits

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            self._gates = {lp: g for lp, g in self._gates.items() if not lp.is_closed()}
            gate = self._gates[loop] = asyncio.Semaphore(self.max_concurrency)
        return gate

    def cache_key(self, messages: Messages, params: SamplingParams, vote: int) -> str:
        """Return the cache key of one vote: (model, prompt hash, sampling params, vote)."""
        prompt = hashlib.sha256(
            json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()
        ).hexdigest()
        return json.dumps([self.backend.model, prompt, dataclasses.astuple(params), vote])

    async def ask(
        self,
        messages: Messages,
        params: SamplingParams,
        *,
        vote: int = 0,
        deadline: float | None = None,
    ) -> tuple[JudgeReply, bool]:
        """Return one answer (and whether it was cached), retrying retryable failures.

        Raises:
            JudgeError: the typed failure of the last attempt.
        """
        key = self.cache_key(messages, params, vote)
        cached = self._cache.get(key)
        if cached is not None:
            return cached, True
        # A greedy judge gives the same answer every time; only sampling makes votes differ.
        seeded = (
            params
            if params.temperature == 0 or params.seed is None
            else dataclasses.replace(params, seed=params.seed + vote)
        )
        attempt = 0
        while True:
            try:
                async with self._gate():
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise JudgeTimeoutError("the deadline passed before the judge was asked")
                    self.calls += 1
                    try:
                        async with asyncio.timeout(remaining):
                            reply = await self.backend.complete(messages, seeded)
                    except TimeoutError:
                        raise JudgeTimeoutError(
                            "the judge did not answer before the deadline"
                        ) from None
                self._cache.put(key, reply)
                return reply, False
            except JudgeUnavailableError as e:
                if attempt >= self.max_retries:
                    raise
                delay = self.backoff_s * 2**attempt
                retry_after = getattr(e, "retry_after_s", None)
                if retry_after is not None:
                    delay = max(delay, retry_after)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    raise
                attempt += 1
                await asyncio.sleep(delay)

    async def judge(
        self,
        messages: Messages,
        criterion: Criterion,
        params: SamplingParams | None = None,
        *,
        votes: int = 1,
        aggregate: Literal["mean", "median"] = "mean",
        use_logprobs: bool = True,
        deadline: float | None = None,
    ) -> JudgeResult:
        """Grade with ``votes`` answers and aggregate their values.

        Raises:
            JudgeError: any vote failed (a partial set of votes is not a verdict).
        """
        params = dataclasses.replace(params or SamplingParams(), max_level=len(criterion.levels))
        answers = await asyncio.gather(
            *(self.ask(messages, params, vote=v, deadline=deadline) for v in range(votes))
        )
        verdicts = tuple(
            parse_verdict(reply, criterion, use_logprobs=use_logprobs) for reply, _ in answers
        )
        values = [v.value for v in verdicts]
        value = (
            statistics.median(values) if aggregate == "median" else math.fsum(values) / len(values)
        )
        return JudgeResult(value, verdicts, cached=sum(1 for _, hit in answers if hit))

    async def compare(
        self,
        candidate_first: Messages,
        candidate_second: Messages,
        params: SamplingParams | None = None,
        *,
        use_logprobs: bool = True,
        deadline: float | None = None,
    ) -> PairwiseResult:
        """Judge candidate vs baseline in both orders; a verdict that flips is a tie.

        Args:
            candidate_first: the prompt with the candidate as response A.
            candidate_second: the same with the candidate as response B.
            params: sampling parameters.
            use_logprobs: weight by P(A) when the backend gives logprobs.
            deadline: absolute ``time.monotonic()`` for both calls.

        Raises:
            JudgeError: either call failed or gave no verdict.
        """
        params = params or SamplingParams()
        (first, _), (second, _) = await asyncio.gather(
            self.ask(candidate_first, params, deadline=deadline),
            self.ask(candidate_second, params, deadline=deadline),
        )
        one = parse_preference(first, use_logprobs=use_logprobs)
        two = parse_preference(second, use_logprobs=use_logprobs)
        wins = (one.winner == "A", two.winner == "B")
        if wins[0] != wins[1]:
            return PairwiseResult(0.5, False, one, two)
        if one.p_a is not None and two.p_a is not None:
            return PairwiseResult((one.p_a + (1.0 - two.p_a)) / 2, True, one, two)
        return PairwiseResult(1.0 if wins[0] else 0.0, True, one, two)
