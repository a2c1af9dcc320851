"""gradewire on Ray: grade Ray Datasets, and veRL rewards with exact statistics across actors.

- `grade_dataset`: any graders over a ``ray.data.Dataset`` on an actor pool; per-row
  columns back in the dataset, each grader's figures merged exactly on the driver.
- `verl_compute_score`: a grader as veRL's ``custom_reward_function``; every sample's
  statistics go to a named Ray actor, which the trainer drains once a step
  (`drain_reward_stats`, or `install_verl_hook` for veRL's own ``Tracking``).
- ``gradewire eval DATA --engine ray`` grades an eval data set on Ray.
"""

from gradewire_ray._channel import DEFAULT_CHANNEL, drain_reward_stats
from gradewire_ray._dataset import GradedDataset, grade_dataset
from gradewire_ray._verl import VAL_SPLITS, VerlReward, verl_compute_score
from gradewire_ray._verl_tracking import install_verl_hook

__all__ = [
    "DEFAULT_CHANNEL",
    "VAL_SPLITS",
    "GradedDataset",
    "VerlReward",
    "drain_reward_stats",
    "grade_dataset",
    "install_verl_hook",
    "verl_compute_score",
]
