"""gradewire_transformers: graders as TRL rewards, and their statistics at the Trainer's steps.

`trl_reward` turns any gradewire grader into a reward function for TRL's GRPOTrainer and
RLOOTrainer; `GradewireCallback` logs every grader's full statistics at the trainer's
logging steps, exact over the window and merged across ranks, into the trainer's own W&B
and MLflow runs. Needs the ``trl`` extra: ``pip install 'gradewire[trl]'``.

Example:
    >>> from gradewire_transformers import GradewireCallback, trl_reward
    >>> reward = trl_reward(grader)  # doctest: +SKIP
    >>> callback = GradewireCallback(reward)  # doctest: +SKIP
    >>> GRPOTrainer(..., reward_funcs=[reward], callbacks=[callback])  # doctest: +SKIP
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_transformers._callback import FAMILIES_TAG as FAMILIES_TAG
    from gradewire_transformers._callback import WANDB_STEP_METRIC as WANDB_STEP_METRIC
    from gradewire_transformers._callback import GradewireCallback as GradewireCallback
    from gradewire_transformers._reward import TrlReward as TrlReward
    from gradewire_transformers._reward import trl_reward as trl_reward

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
