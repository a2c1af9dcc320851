"""gradewire_verifiers: a verifiers Rubric of gradewire graders.

`Rubric` scores verifiers rollouts with gradewire graders (weights, metric-only graders),
masks a reward a grader could not give instead of scoring it 0.0, and keeps every grader's
statistics (`Rubric.get_logs`). Needs the ``verifiers`` extra (verifiers 0.3, the last
release with the Rubric API): ``pip install 'gradewire[verifiers]'``.

Example:
    >>> from gradewire_verifiers import Rubric
    >>> rubric = Rubric([correct], metrics=[length])  # doctest: +SKIP
    >>> env = vf.SingleTurnEnv(dataset=data, rubric=rubric)  # doctest: +SKIP
"""

from gradewire_verifiers._rubric import MASKED_METRIC, RewardMasked, Rubric
from gradewire_verifiers._thread import rollout_thread

__all__ = ["MASKED_METRIC", "RewardMasked", "Rubric", "rollout_thread"]
