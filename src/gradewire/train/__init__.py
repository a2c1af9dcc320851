"""Training drivers: grader statistics at each training step, rewards for RL trainers.

`RewardLogger` drains graders' logs at every step of a training loop, adds what RL needs
(histograms, the share of zero-spread groups, the reward/length correlation, a combined
grader's totals), merges all ranks under torch.distributed, and logs to sinks.
`RewardMonitor` turns the reward-health signals (a gold reference's gap, length drift, a
combination's dominant part, unscored samples) into alerts, live or on a logged run.
`openrlhf_reward_func` makes a grader OpenRLHF's ``reward_func``. `FailurePolicy` is what
every reward adapter does with a sample that got no grade (fail fast, the value it
gets). This folder brings
graders and sinks together, and may import every stage below the CLI; it never imports
torch (the distributed helpers find torch.distributed in `sys.modules`). Each name is
imported when first used.
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire.train._distributed import merge_log_states as merge_log_states
    from gradewire.train._distributed import merge_windows as merge_windows
    from gradewire.train._failure_policy import FailurePolicy as FailurePolicy
    from gradewire.train._health_window import HealthSeries as HealthSeries
    from gradewire.train._monitor import Alert as Alert
    from gradewire.train._monitor import RewardHealthError as RewardHealthError
    from gradewire.train._monitor import RewardMonitor as RewardMonitor
    from gradewire.train._openrlhf import OpenRLHFRewardFunc as OpenRLHFRewardFunc
    from gradewire.train._openrlhf import openrlhf_reward_func as openrlhf_reward_func
    from gradewire.train._reward_logger import RewardLogger as RewardLogger
    from gradewire.train._window import StepWindow as StepWindow

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
