# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Every ONNX backend node case on `ref`. A listed expected failure that passes fails too
(xfail strict), so expected_failures_ref.txt stays true."""

import pytest

from node_cases import all_cases, expected_failures, run_case

EXPECTED = expected_failures("ref")
CASES = all_cases()


def _param(name):
    if name in EXPECTED:
        return pytest.param(name, marks=pytest.mark.xfail(reason=EXPECTED[name], strict=True))
    return name


def test_expected_failures_name_real_cases():
    unknown = sorted(set(EXPECTED) - set(CASES))
    assert not unknown, f"expected_failures_ref.txt names cases that do not exist: {unknown}"


@pytest.mark.parametrize("name", [_param(n) for n in sorted(CASES)])
def test_node_case_on_ref(name):
    run_case(CASES[name], "ref")


@pytest.mark.parametrize("name", [_param(n) for n in sorted(CASES)])
def test_node_case_on_ref_with_full_pipeline(name):
    """Every pass keeps results: the same cases pass with the full optimization pipeline."""
    run_case(CASES[name], "ref", optimize=True)
