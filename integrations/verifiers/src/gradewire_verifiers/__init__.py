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

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_verifiers._rubric import MASKED_METRIC as MASKED_METRIC
    from gradewire_verifiers._rubric import RewardMasked as RewardMasked
    from gradewire_verifiers._rubric import Rubric as Rubric
    from gradewire_verifiers._thread import rollout_thread as rollout_thread

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
