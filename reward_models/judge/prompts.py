"""Judge prompts: the rubric templates in ``reward_models/templates`` filled with one response."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from arbiter.reward_models.errors import ConfigurationError
from arbiter.reward_models.judge.types import Criterion, Messages

__all__ = ["TEMPLATES", "load_template", "render_pairwise_prompt", "render_prompt"]

TEMPLATES = Path(__file__).parents[1] / "templates"


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


#: The judge's verdict tag in any spacing ("[RESULT]", "[ RESULT ]"); lower case is
#: no tag (the parser reads capitals), and code's ``arr[result]`` stays as it is.
_VERDICT_TAG = re.compile(r"\[(\s*RESULT\s*)\]")


def _defang(text: str) -> str:
    """Untrusted text as the judge reads it: it can neither close its fence nor give a verdict.

    The fence is broken up (the response cannot pose as the judge's instructions),
    and a verdict tag loses its brackets: a judge that quotes the response, or a
    persuadable one that copies the last tag it read, writes nothing the verdict
    parser takes for its answer.
    """
    text = text.replace("<<<", "< < <").replace(">>>", "> > >")
    return _VERDICT_TAG.sub(r"(\1)", text)


def _reference_block(template: str, reference: str | None, **fields: object) -> str:
    """Fill the template's ``_reference`` part, or nothing without a reference."""
    if reference is None:
        return ""
    return load_template(f"{template}_reference").format(reference=_defang(reference), **fields)


def _messages(template: str, user: str) -> Messages:
    """The template's ``_system`` part, where it has one, then the user turn."""
    messages: Messages = []
    with contextlib.suppress(ConfigurationError):
        messages.append({"role": "system", "content": load_template(f"{template}_system").strip()})
    messages.append({"role": "user", "content": user})
    return messages


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
    reference_block = _reference_block(template, reference, max_level=max_level)
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
    return _messages(template, user)


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
    reference_block = _reference_block(template, reference)
    user = load_template(template).format(
        instruction=_defang(instruction),
        response_a=_defang(response_a),
        response_b=_defang(response_b),
        reference_note=", a reference answer" if reference is not None else "",
        reference_block=reference_block,
        criterion=criterion,
        criterion_description=criterion_description,
    )
    return _messages(template, user)
