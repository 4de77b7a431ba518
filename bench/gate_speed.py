"""Time TEST_WEAKENED and TEST_HARNESS_CHANGED on generated test files of growing size.

    .venv/bin/python bench/gate_speed.py            # 100, 1,000 and 5,000 tests per file

Each size is a Python test module and a JS test file with that many tests, changed in one test
(an early return, a changed expected value), judged from texts in memory: what the gates cost on
top of reading the files. Prints CPU and wall seconds per size, best of three.
"""

from __future__ import annotations

import sys
import time

from bosun.core.changes import FileChange
from bosun.core.contract import TaskContract
from bosun.gates.context import GateInputs
from bosun.gates.testharness import check_test_harness
from bosun.gates.tests_weakened import check_tests_weakened


def texts(n: int) -> tuple[dict[str, str], dict[str, str]]:
    py = "import pytest\nfrom calc import add\n" + "".join(
        f"\n\ndef test_{i}():\n    x = add({i}, 1)\n    assert x == {i + 1}\n    assert add(x, 0) == x\n"
        for i in range(n)
    )
    js = "".join(f'it("adds {i}", () => {{\n  expect(add({i}, 1)).toBe({i + 1});\n}});\n' for i in range(n))
    base = {"tests/test_big.py": py, "web/big.test.js": js}
    new = {
        "tests/test_big.py": py.replace("def test_7():\n", "def test_7():\n    return\n"),
        "web/big.test.js": js.replace("toBe(8)", "toBe(9)"),
    }
    return base, new


def once(n: int) -> tuple[float, float]:
    from bosun.gates import jstests, pyfacts

    pyfacts.read_file.cache_clear()
    jstests.read_tests.cache_clear()
    base, new = texts(n)
    ctx = GateInputs(
        task=TaskContract(title="bench", prompt="bench"),
        changes=[FileChange(path, "M") for path in base],
        diff=b"",
        locked=[],
        base_line_count=lambda p: None,
        base_text=base.get,
        new_text=new.get,
        verification_passed=True,
    )
    cpu, wall = time.process_time(), time.perf_counter()
    assert not check_tests_weakened(ctx).ok
    check_test_harness(ctx)
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> int:
    for n in (100, 1000, 5000):
        cpu, wall = min(once(n) for _ in range(3))
        lines = sum(len(t.splitlines()) for t in texts(n)[0].values())
        print(f"{n:>5} tests per file ({lines:>6} lines in two files): cpu {cpu:.2f} s, wall {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
