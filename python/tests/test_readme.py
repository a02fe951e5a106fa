"""The README's Python example runs as written (in a scratch directory)."""

import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs(tmp_path, monkeypatch):
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^## Python\n.*?```python\n(.*?)```", text, flags=re.S | re.M)
    assert blocks, "README.md has no ```python block under '## Python'"
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(blocks[0], "README.md (Python example)", "exec"), scope)
    assert scope["I"].shape == (100, 10)
    assert os.path.isdir(tmp_path / "idx") and os.path.isdir(tmp_path / "idx-s")
