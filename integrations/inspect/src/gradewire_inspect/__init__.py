"""gradewire_inspect: any gradewire grader as an Inspect AI scorer, and Inspect logs as runs.

`scorer(grader)` grades each sample of an Inspect eval with a gradewire grader (a function
grader, a judge, a combination): the grade's value, reasoning and tree go in the `Score`,
an abstention is Inspect's unscored score, a failure a sample error, never a 0. Needs the
``inspect`` extra: ``pip install 'gradewire[inspect]'``.

`read_inspect_log(path)` reads an Inspect eval log (``.eval`` or ``.json``) as a gradewire
`EvalRun`, paired by sample id and epoch: ``gradewire compare`` takes two such logs, and
``gradewire eval`` grades a log's samples again.

Example:
    >>> from gradewire_inspect import scorer
    >>> Task(dataset=..., solver=generate(), scorer=scorer(grader))  # doctest: +SKIP
"""

from gradewire.core._lazy import attach

TYPE_CHECKING = False  # typing's, without importing typing: type checkers take it as true

# The public names, one line each: from <module> import <Name> as <Name> (gradewire.core._lazy).
if TYPE_CHECKING:
    from gradewire_inspect._log_source import read_inspect_log as read_inspect_log
    from gradewire_inspect._scorer import ABSTAINED as ABSTAINED
    from gradewire_inspect._scorer import scorer as scorer
    from gradewire_inspect._thread import state_thread as state_thread

if not TYPE_CHECKING:
    __getattr__, __dir__ = attach(__name__)
