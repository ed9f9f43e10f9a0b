# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Every ONNX backend node case on `ref`, on `cpu` and on `gpu` (natively: no fallback; gpu
cases are marked gpu and skipped where no GPU is usable). A listed
expected failure that passes fails too (xfail strict), so expected_failures_<target>.txt
stays true."""

import pytest

from node_cases import all_cases, expected_failures, run_case

EXPECTED = expected_failures("ref")
EXPECTED_CPU = expected_failures("cpu")
EXPECTED_GPU = expected_failures("gpu")
CASES = all_cases()


def _gpu_missing() -> str | None:
    from graphkiln.device import check_gpu_compatibility

    verdict = check_gpu_compatibility()
    return None if verdict.ok else f"no usable GPU: {verdict.message.splitlines()[0]}"


def _param(name, expected=EXPECTED):
    if name in expected:
        return pytest.param(name, marks=pytest.mark.xfail(reason=expected[name], strict=True))
    return name


@pytest.mark.parametrize(
    "target, expected", [("ref", EXPECTED), ("cpu", EXPECTED_CPU), ("gpu", EXPECTED_GPU)]
)
def test_expected_failures_name_real_cases(target, expected):
    unknown = sorted(set(expected) - set(CASES))
    assert not unknown, f"expected_failures_{target}.txt names cases that do not exist: {unknown}"


@pytest.mark.parametrize("name", [_param(n) for n in sorted(CASES)])
def test_node_case_on_ref(name):
    run_case(CASES[name], "ref")


@pytest.mark.parametrize("name", [_param(n) for n in sorted(CASES)])
def test_node_case_on_ref_with_full_pipeline(name):
    """Every pass keeps results: the same cases pass with the full optimization pipeline."""
    run_case(CASES[name], "ref", optimize=True)


@pytest.mark.parametrize("name", [_param(n, EXPECTED_CPU) for n in sorted(CASES)])
def test_node_case_on_cpu(name):
    run_case(CASES[name], "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("name", [_param(n, EXPECTED_GPU) for n in sorted(CASES)])
def test_node_case_on_gpu(name):
    reason = _gpu_missing()
    if reason:
        pytest.skip(reason)
    run_case(CASES[name], "gpu")
