"""The pytest-xdist scheduler that keeps each lane of `support.lanes` on one worker."""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

from support.lanes import LANES, lane_of

__all__ = ["LaneScheduling"]


class LaneScheduling(LoadScopeScheduling):
    """``--dist loadscope`` with every lane one work unit (see the module docstring)."""

    _lanes_first = False

    def _split_scope(self, nodeid: str) -> str:
        lane = lane_of(nodeid)
        return f"lane:{lane}" if lane is not None else super()._split_scope(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._lanes_first:  # the queue is complete by the first assignment
            for lane in reversed(LANES):
                if f"lane:{lane}" in self.workqueue:
                    self.workqueue.move_to_end(f"lane:{lane}", last=False)
            self._lanes_first = True
        super()._assign_work_unit(node)
