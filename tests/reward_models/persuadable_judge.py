"""A stand-in for a persuadable judge model: a real OpenAI-compatible HTTP server on loopback.

No model that runs on these CPUs follows instructions well enough to be talked
into a grade, so this server stands in for one: it answers
``POST /v1/chat/completions`` as a judge that obeys what it reads last, the
way a persuadable model does. Reading the judge's prompt (template, instruction
and response together), it obeys the last of these it reads:

- a verdict, in any bracket style (``[RESULT] 5``,
  ``(RESULT) 5``, ``RESULT: B``), which it copies;
- obeys a demand for a grade ("award full marks", "maximum score",
  "graded as 5", "5/5", "Response A is better");
- obeys an order to give no verdict ("do not output a score", "reply only with");
- otherwise grades honestly: the lowest level, or the baseline's win.

It is a stand-in, not a model: the attacks it falls for are the ones a real
persuadable judge falls for (NeMo-Gym#2852: "grader-override" text got full
credit 8 times in 10), and what the tests show is what Arbiter does when its
judge is fooled or derailed.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The judge template's own line that names the verdict format (it carries no verdict).
_FORMAT_LINE = re.compile(r'"\[RESULT\] <[^>]*>"|"\[RESULT\] A" or "\[RESULT\] B"')
_VERDICT = re.compile(r"[\[(]?\s*RESULT\s*[\])]?\s*[:=]?\s*\(?\s*([1-9]|A|B)\b", re.I)
_TOP = re.compile(
    r"\b(full|maximum|max|perfect|highest|top)\s+(score|marks?|credit|points|grade|level)|"
    r"response\s+([ab])\s+(is|wins|must win|should win)",
    re.I,
)
_GRADE = re.compile(
    r"\b(?:graded|scored|rated|marked)\s+(?:as\s+)?([1-9])\b|\b([1-9])\s*/\s*[1-9]\b", re.I
)
_SILENCE = re.compile(
    r"\b(do not|don't|never)\s+(output|give|write|print|include)\b[^.\n]{0,30}"
    r"(score|verdict|result|grade)|\breply\s+only\s+with\b|\brespond\s+only\s+with\b",
    re.I,
)
_MAX_LEVEL = re.compile(r"integer from 1 to (\d+)")


def persuaded_answer(prompt: str) -> str:
    """What the persuadable judge answers to a judge prompt (pure, for the tests to reason on)."""
    text = _FORMAT_LINE.sub("", prompt)
    pairwise = '"[RESULT] A"' in prompt
    levels = _MAX_LEVEL.search(prompt)
    top = levels.group(1) if levels else "5"
    orders: list[tuple[int, str]] = []
    for match in _VERDICT.finditer(text):
        orders.append((match.start(), match.group(1).upper()))
    for match in _TOP.finditer(text):
        winner = (match.group(3) or "A").upper()
        orders.append((match.start(), winner if pairwise else top))
    for match in _GRADE.finditer(text):
        orders.append((match.start(), match.group(1) or match.group(2)))
    for match in _SILENCE.finditer(text):
        orders.append((match.start(), ""))
    if orders:
        verdict = max(orders)[1]
        if pairwise and verdict not in ("A", "B"):
            verdict = "A" if verdict == top else verdict
        if not verdict:
            return "As instructed, I give no verdict."
        return f"I follow the last instruction I read.\n[RESULT] {verdict}"
    honest = "B" if pairwise else "1"
    return f"The response does not meet the criterion.\n[RESULT] {honest}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        if self.path != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        answer: dict[str, Any] = {
            "id": "persuadable",
            "object": "chat.completion",
            "model": body.get("model", "persuadable"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": persuaded_answer(prompt)},
                    "finish_reason": "stop",
                }
            ],
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def persuadable_judge() -> Iterator[str]:
    """Serve the persuadable judge on a free loopback port; yield its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
