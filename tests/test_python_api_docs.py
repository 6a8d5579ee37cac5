"""docs/python-api.md's examples run as written: every ```python block is extracted and
executed in a fresh namespace in a temporary folder (each asserts its own physics: a tracking
error bound, a quadruped's weight carried by its feet, a box lifted by a gripper)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).parent.parent / "docs" / "python-api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_doc_has_its_examples():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_python_api_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = compile(BLOCKS[index], f"{DOC}:python block {index}", "exec")
    exec(code, {"__name__": f"python_api_doc_{index}"})
