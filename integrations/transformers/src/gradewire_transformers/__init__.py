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

from gradewire_transformers._callback import FAMILIES_TAG, WANDB_STEP_METRIC, GradewireCallback
from gradewire_transformers._reward import TrlReward, trl_reward

__all__ = ["FAMILIES_TAG", "WANDB_STEP_METRIC", "GradewireCallback", "TrlReward", "trl_reward"]
