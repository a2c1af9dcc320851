"""gradewire on Ray: grade Ray Datasets, and veRL rewards with exact statistics across actors.

- `grade_dataset`: any graders over a ``ray.data.Dataset`` on an actor pool; per-row
  columns back in the dataset, each grader's figures merged exactly on the driver.
- `verl_compute_score`: a grader as veRL's ``custom_reward_function``; every sample's
  statistics go to a named Ray actor, which the trainer drains once a step
  (`drain_reward_stats`, or `install_verl_hook` for veRL's own ``Tracking``).
- ``gradewire eval DATA --engine ray`` grades an eval data set on Ray.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_ray._channel import DEFAULT_CHANNEL as DEFAULT_CHANNEL
    from gradewire_ray._channel import drain_reward_stats as drain_reward_stats
    from gradewire_ray._dataset import GradedDataset as GradedDataset
    from gradewire_ray._dataset import grade_dataset as grade_dataset
    from gradewire_ray._verl import VAL_SPLITS as VAL_SPLITS
    from gradewire_ray._verl import VerlReward as VerlReward
    from gradewire_ray._verl import verl_compute_score as verl_compute_score
    from gradewire_ray._verl_tracking import install_verl_hook as install_verl_hook

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
