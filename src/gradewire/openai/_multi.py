"""multi: sub-graders by name, combined by a ``calculate_output`` formula."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from gradewire.core._grade import Grade
from gradewire.core._grader import BaseGrader, LogValue
from gradewire.core._log_state import LogState
from gradewire.core._thread import StringThread
from gradewire.openai._base import OpenAIGrader
from gradewire.openai._errors import ERROR_KINDS
from gradewire.openai._formula import Formula

__all__ = ["Multi"]


class Multi(OpenAIGrader):
    """OpenAI's ``multi``: every sub-grader runs, then the formula gives the reward.

    The sub-grades are the children of the grade (each keyed by its name in ``graders``);
    a sub-grader that fails fails the sample with its own error kind, as OpenAI reports
    it. `get_logs` gives this grader's figures, then each sub-grader's under ``<name>/``.
    """

    def __init__(
        self,
        grader_key: str,
        config: Mapping[str, Any],
        graders: Mapping[str, OpenAIGrader],
        *,
        where: str,
    ) -> None:
        super().__init__(grader_key, config)
        self.graders: dict[str, OpenAIGrader] = dict(graders)
        self.formula = Formula(
            config["calculate_output"], self.graders, f"{where}.calculate_output"
        )
        kinds = {kind for grader in self.graders.values() for kind in grader.shown_error_kinds}
        self.shown_error_kinds = tuple(
            k for k in ERROR_KINDS if k in kinds or k == "formula_parse_error"
        )

    def _sub_graders(self) -> Sequence[BaseGrader[Any]]:
        return tuple(getattr(self, "graders", {}).values())

    async def grade(self, sample: StringThread) -> Grade:
        """Grade with every sub-grader concurrently, then evaluate the formula."""
        outcomes = await asyncio.gather(*(g._attempt(sample) for g in self.graders.values()))
        children: list[Grade] = []
        for outcome in outcomes:
            if not isinstance(outcome, Grade):
                raise outcome
            children.append(outcome)
        values = {grade.grader_key: grade.value for grade in children}
        value = self.formula.evaluate(values)
        reasoning = f"{self.formula.source} with " + ", ".join(
            f"{name}={score:g}" for name, score in values.items()
        )
        return self.scored(
            value,
            sample,
            reasoning=reasoning,
            children=tuple(children),
            info={"sub_rewards": values},
        )

    def log_state(self, *, clear: bool = False) -> LogState:
        """This grader's state merged with every sub-grader's, under ``<name>/``."""
        state = self._own_log_state()
        for name, grader in self.graders.items():
            state = state.merge(grader.log_state().prefixed(name))
        if clear:
            self.clear_logs()
        return state

    def get_logs(self, clear: bool = False, log_all_samples: bool = False) -> dict[str, LogValue]:
        """This grader's logs, then each sub-grader's under ``<name>/``."""
        logs = super().get_logs(clear=False, log_all_samples=log_all_samples)
        for name, grader in self.graders.items():
            for key, value in grader.get_logs(log_all_samples=log_all_samples).items():
                logs[f"{name}/{key}"] = value
        if clear:
            self.clear_logs()
        return logs

    def clear_logs(self) -> None:
        """Forget this grader's records and every sub-grader's."""
        super().clear_logs()
        for grader in getattr(self, "graders", {}).values():
            grader.clear_logs()
