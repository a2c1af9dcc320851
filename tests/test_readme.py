"""The README's code runs as shown, and its printed results are the ones it claims."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "the README lost its code examples"
    namespace: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    printed = out.getvalue().splitlines()
    assert printed[0] == "[1.0, 0.0]"
    assert "'correct/score/abstained_count': 1" in printed[1]
    assert "'score/mean': 0.5" in printed[1]
