"""Property tests (Hypothesis, fast profile): valid sample records of every source reader,
mutated byte by byte and field by field, either reconcile or fail in one line with exit 2;
never a traceback, a hang or the planted marker in output. scripts/fuzz.py runs the long profile."""

import pytest
from fuzz_readers import HOLDS, mutations, run_case
from hypothesis import HealthCheck, given, settings

FAST = settings(
    max_examples=8, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@pytest.mark.slow  # over ~2 s: not in the fast loop
@pytest.mark.timeout(120)
@pytest.mark.parametrize("reader", ["cochrane", "devaraj", "msd", "plaba"])
def test_mutated_records_reconcile_or_exit_2(reader, capfd):
    @FAST
    @given(mutations(reader))
    def check(files):
        assert run_case(reader, files, capfd) in HOLDS

    check()
