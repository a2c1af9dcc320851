"""The plots of the report and the compare page: the core's inline SVG plots.

They live in the core, since a `Histogram` and the notebook views below the eval stage
draw them too; this module is where the reporting stage takes them from.
"""

from __future__ import annotations

from gradewire.core._svg import histogram, intervals

__all__ = ["histogram", "intervals"]
