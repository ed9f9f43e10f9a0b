# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""One compiled gpu program run from many threads at once (issue #18): every output
bit-identical to the same program's serial output for the same input, the pool of execution
contexts growing past one but never past max_concurrency, plans of several input shapes of
one dynamic model running side by side, device inputs written on the threads' own streams.
All on the device (marked gpu)."""

from __future__ import annotations

import threading
import time

import numpy as np
import onnx
import pytest

import graphkiln as gk
from concurrency_models import bert_feeds, bert_like, resnet_feeds, resnet_like
from gpu_testing import requires_gpu

THREADS, RUNS = 8, 20
MODELS = {"resnet_like": (resnet_like, resnet_feeds), "bert_like": (bert_like, bert_feeds)}


def _program(model: onnx.ModelProto, target="gpu", **options):
    program = gk.parse_onnx_buffer(model.SerializeToString(), default_dim=None)
    return program.compile(target, **options)


def _summary(program) -> dict:
    return program._executable.plan_summary()


class _ContextWatch:
    """Polls the plans' contexts_created while runs go on: the most seen (a host read under
    the executor's pool lock; plan_summary() would also ask the device about the JIT)."""

    def __init__(self, program):
        self.program, self.most, self._stop = program, 0, threading.Event()
        self._thread = threading.Thread(target=self._poll)

    def _poll(self):
        while not self._stop.is_set():
            plans = self.program._executable._plans.values()
            self.most = max([self.most] + [p.executor.contexts_created for p in plans])
            time.sleep(0.001)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.most = max(self.most, _summary(self.program).get("contexts", 0))


def _hammer(program, feeds_of, threads=THREADS, runs=RUNS) -> dict:
    """Runs `program` from `threads` threads at once (started together), `runs` runs each,
    run r of thread t on feeds_of(t * runs + r); returns {(t, r): outputs}."""
    results: dict = {}
    errors: list = []
    barrier = threading.Barrier(threads)

    def work(t):
        try:
            barrier.wait()
            for r in range(runs):
                results[t, r] = program.run(feeds_of(t * runs + r))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    return results


def _check_bit_identical(program, feeds_of, results: dict, runs=RUNS) -> None:
    wrong = []
    for (t, r), outputs in sorted(results.items()):
        expected = program.run(feeds_of(t * runs + r))  # serial: one run at a time
        for got, want in zip(outputs, expected):
            if not np.array_equal(got, want):
                wrong.append((t, r, float(np.nanmax(np.abs(got - want)))))
    assert not wrong, (
        f"{len(wrong)} of {len(results)} concurrent runs differ from the "
        f"serial outputs: {wrong[:5]}"
    )


@requires_gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_eight_threads_get_the_serial_outputs(name):
    build, feeds = MODELS[name]
    program = _program(build(seed=3, batch=2), max_concurrency=4)

    def feeds_of(i):
        return feeds(i, batch=2)  # a seeded random input per run

    with _ContextWatch(program) as watch:
        results = _hammer(program, feeds_of)
    _check_bit_identical(program, feeds_of, results)
    summary = _summary(program)
    assert 1 < summary["contexts"] <= 4, summary  # the pool grew, within its bound
    assert watch.most <= 4, watch.most
    assert summary["max_concurrency"] == 4
    # context_bytes: all contexts together, each at least an arena; the constants once on top
    assert summary["context_bytes"] >= summary["contexts"] * summary["arena_bytes"], summary
    assert summary["device_bytes"] > summary["context_bytes"], summary
    # contexts capture their graphs independently (one made late may not have yet)
    assert summary["graph"].startswith("replaying"), summary


@requires_gpu
def test_outputs_match_ref_too():
    model = bert_like(seed=4, batch=1)
    program = _program(model)
    ref = _program(model, "ref")
    results = _hammer(program, bert_feeds, threads=4, runs=5)
    for (t, r), (got,) in results.items():
        (want,) = ref.run(bert_feeds(t * 5 + r))
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


@requires_gpu
def test_one_context_serializes_the_runs():
    program = _program(resnet_like(seed=1, batch=1), max_concurrency=1)
    with _ContextWatch(program) as watch:
        results = _hammer(program, resnet_feeds, threads=4, runs=5)
    _check_bit_identical(program, resnet_feeds, results, runs=5)
    assert watch.most == 1 and _summary(program)["contexts"] == 1


@requires_gpu
def test_two_shapes_of_one_dynamic_model_run_concurrently():
    model = resnet_like(seed=5, batch="N")
    program = _program(model, max_concurrency=4)
    ref = _program(model, "ref")

    def feeds_of(i):
        return resnet_feeds(i, batch=1 + 2 * (i % 2))  # batch 1 and 3 interleaved

    results = _hammer(program, feeds_of, runs=10)
    _check_bit_identical(program, feeds_of, results, runs=10)
    assert _summary(program)["plans"] == 2  # each built once, however many threads asked
    for (t, r), (got,) in list(results.items())[:8]:
        (want,) = ref.run(feeds_of(t * 10 + r))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


@requires_gpu
def test_device_inputs_written_on_each_threads_own_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    program = _program(resnet_like(seed=6, batch=2), max_concurrency=4)
    executable = program._executable

    def feeds_of(i):
        return resnet_feeds(i, batch=2)

    class CaiOnly:  # __cuda_array_interface__ v3, naming the stream the tensor was written on
        def __init__(self, t, stream):
            self.t, self.shape = t, tuple(t.shape)
            cai = dict(t.__cuda_array_interface__)
            cai.update(version=3, stream=stream.cuda_stream)
            self.__cuda_array_interface__ = cai

    results, errors = {}, []
    barrier = threading.Barrier(4)

    def work(t):
        try:
            stream = torch.cuda.Stream()
            barrier.wait()
            for r in range(10):
                host = feeds_of(t * 10 + r)["x"]
                with torch.cuda.stream(stream):  # written on this thread's stream, not synced
                    x = torch.empty(host.shape, device="cuda")
                    if hasattr(torch.cuda, "_sleep"):
                        torch.cuda._sleep(1_000_000)  # a late producer: a run must wait for it
                    x.copy_(torch.from_numpy(host).pin_memory(), non_blocking=True)
                    x = x * 1.0  # a kernel on `stream` after the copy
                    results[t, r] = executable.run([CaiOnly(x, stream)])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    _check_bit_identical(program, feeds_of, results, runs=10)  # host inputs, serially
