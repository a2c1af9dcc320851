"""gradewire_inspect: any gradewire grader as an Inspect AI scorer.

`scorer(grader)` grades each sample of an Inspect eval with a gradewire grader (a function
grader, a judge, a combination): the grade's value, reasoning and tree go in the `Score`,
an abstention is Inspect's unscored score, a failure a sample error, never a 0. Needs the
``inspect`` extra: ``pip install 'gradewire[inspect]'``.

Example:
    >>> from gradewire_inspect import scorer
    >>> Task(dataset=..., solver=generate(), scorer=scorer(grader))  # doctest: +SKIP
"""

from gradewire_inspect._scorer import ABSTAINED, scorer
from gradewire_inspect._thread import state_thread

__all__ = ["ABSTAINED", "scorer", "state_thread"]
