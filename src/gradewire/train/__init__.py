"""Training drivers: grader statistics at each training step, rewards for RL trainers.

`RewardLogger` drains graders' logs at every step of a training loop, adds what RL needs
(histograms, the share of zero-spread groups, the reward/length correlation, a combined
grader's totals), merges all ranks under torch.distributed, and logs to sinks.
`RewardMonitor` turns the reward-health signals (a gold reference's gap, length drift, a
combination's dominant part, unscored samples) into alerts, live or on a logged run.
`openrlhf_reward_func` makes a grader OpenRLHF's ``reward_func``. This folder brings
graders and sinks together, and may import every stage below the CLI; it never imports
torch (the distributed helpers find torch.distributed in `sys.modules`). Each name is
imported when first used.
"""

from typing import TYPE_CHECKING

from gradewire.core._lazy import attach

if TYPE_CHECKING:
    from gradewire.train._distributed import merge_log_states, merge_windows
    from gradewire.train._health_window import HealthSeries
    from gradewire.train._monitor import Alert, RewardHealthError, RewardMonitor
    from gradewire.train._openrlhf import OpenRLHFRewardFunc, openrlhf_reward_func
    from gradewire.train._reward_logger import RewardLogger
    from gradewire.train._window import StepWindow

__all__ = [
    "Alert",
    "HealthSeries",
    "OpenRLHFRewardFunc",
    "RewardHealthError",
    "RewardLogger",
    "RewardMonitor",
    "StepWindow",
    "merge_log_states",
    "merge_windows",
    "openrlhf_reward_func",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(
        __name__,
        {
            "._distributed": ["merge_log_states", "merge_windows"],
            "._health_window": ["HealthSeries"],
            "._monitor": ["Alert", "RewardHealthError", "RewardMonitor"],
            "._openrlhf": ["OpenRLHFRewardFunc", "openrlhf_reward_func"],
            "._reward_logger": ["RewardLogger"],
            "._window": ["StepWindow"],
        },
    )
