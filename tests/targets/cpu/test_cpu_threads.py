# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""GRAPHKILN_NUM_THREADS: an integer >= 1, else a ValueError naming it; more than the CPUs
this process may run on is lowered to that count with one ThreadCountWarning per process
(issue #17: 1000 on 2 cores made the example CNN 1,000x slower, silently)."""

import warnings

import numpy as np
import pytest

import graphkiln as gk
from graphkiln.cli.common import EXAMPLE_MODEL
from graphkiln.targets.cpu import threads
from graphkiln.targets.cpu.threads import ThreadCountWarning, num_threads


@pytest.fixture
def two_cpus(monkeypatch):
    """A machine of 2 CPUs (2 physical cores) that has not warned yet."""
    monkeypatch.setattr(threads, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads, "physical_cores", lambda: 2)
    monkeypatch.setattr(threads, "_warned", False)


def _warnings_of(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # Python's own once-per-location filter is off
        result = fn()
    return result, [w for w in caught if issubclass(w.category, ThreadCountWarning)]


def test_more_threads_than_cpus_is_lowered_with_one_warning(monkeypatch, two_cpus):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "1000")
    n, caught = _warnings_of(num_threads)
    assert n == 2 and len(caught) == 1
    message = str(caught[0].message)
    assert "GRAPHKILN_NUM_THREADS=1000" in message and "the 2 CPUs" in message
    assert "uses 2 threads" in message and issubclass(ThreadCountWarning, RuntimeWarning)
    n, caught = _warnings_of(num_threads)  # once per process
    assert n == 2 and caught == []
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "3")
    assert _warnings_of(num_threads) == (2, [])


@pytest.mark.parametrize("value", ["1", "2", " 2 "])
def test_counts_within_the_cpus_are_kept_silently(monkeypatch, two_cpus, value):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", value)
    assert _warnings_of(num_threads) == (int(value), [])


def test_unset_or_empty_is_the_physical_cores(monkeypatch, two_cpus):
    monkeypatch.delenv("GRAPHKILN_NUM_THREADS", raising=False)
    assert num_threads() == 2
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", "")
    assert num_threads() == 2


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "four", "2k"])
def test_a_value_that_is_not_an_integer_of_at_least_1_is_an_error(monkeypatch, two_cpus, value):
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", value)
    with pytest.raises(
        ValueError, match=f"GRAPHKILN_NUM_THREADS={value!r}: expected an integer >= 1"
    ):
        num_threads()
    with pytest.raises(ValueError, match="GRAPHKILN_NUM_THREADS"):
        gk.parse_onnx(EXAMPLE_MODEL).compile("cpu")


def test_compile_uses_the_lowered_count_and_matches_ref(monkeypatch):
    cpus = threads.usable_cpus()
    monkeypatch.setattr(threads, "_warned", False)
    monkeypatch.setenv("GRAPHKILN_NUM_THREADS", str(cpus + 1000))
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    with pytest.warns(ThreadCountWarning, match=f"={cpus + 1000} is more than the {cpus} CPUs"):
        program = gk.parse_onnx(EXAMPLE_MODEL).compile("cpu")
    assert program._executable.threads == cpus
    (got,) = program.run({"image": x})
    (want,) = gk.parse_onnx(EXAMPLE_MODEL).compile("ref").run({"image": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    _, caught = _warnings_of(lambda: gk.parse_onnx(EXAMPLE_MODEL).compile("cpu"))
    assert caught == []  # the second compile of the process says nothing
