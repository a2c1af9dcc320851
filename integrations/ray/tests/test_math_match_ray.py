"""math_match inside a Ray actor: its timeout holds there too (no SIGALRM involved)."""

from __future__ import annotations

from typing import Any

import gradewire as gw


def test_math_match_in_a_ray_actor(ray_instance: Any) -> None:
    ray = ray_instance

    @ray.remote
    class Checker:
        def check(self, answer: str, expected: str, timeout: float) -> str:
            try:
                return str(gw.math_match(answer, expected, timeout=timeout))
            except gw.helpers.MathTimeoutError:
                return "timeout"
            except gw.helpers.MathParseError as exc:
                return f"unreadable {exc.side}"

    # Ray runs actor methods in a thread of its own: where Math-Verify's alarm fails.
    checker = Checker.options(max_concurrency=2).remote()  # type: ignore[attr-defined]
    calls = [
        ("$\\boxed{\\frac{1}{2}}$", "0.5", 5.0),
        ("$\\boxed{3}$", "0.5", 5.0),
        ("no answer", "0.5", 5.0),
        ("$9^{9^{9^{9}}}$", "5", 1.0),
        ("$\\sqrt{4}$", "2", 5.0),  # after the timeout: a new worker answers
    ]
    got = [ray.get(checker.check.remote(*call), timeout=120) for call in calls]
    assert got == ["1.0", "0.0", "unreadable answer", "timeout", "1.0"]
