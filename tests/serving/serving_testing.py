# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""What the serving tests share: the models they serve (written as ONNX files), their
seeded random inputs, the reference outputs (Program.run on the same inputs) and a
`graphkiln serve` subprocess on 127.0.0.1 that is always stopped."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from concurrency_models import bert_like, resnet_like  # noqa: E402

import graphkiln  # noqa: E402


def gather_model() -> onnx.ModelProto:
    """y = table[idx]: idx i64[N] -> y f32[N, 3]; an index outside 0..3 is a kernel error."""
    rng = np.random.default_rng(7)
    table = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "idx"], ["y"], axis=0)],
        "gather",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, ["N"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [table],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def write_models(folder: Path) -> dict[str, Path]:
    """cnn (resnet_like, x f32[N,3,16,16] -> logits f32[N,10]), bert (bert_like, seq 16),
    gather: {name: path}."""
    models = {
        "cnn": resnet_like(seed=3, size=16),
        "bert": bert_like(seed=4),
        "gather": gather_model(),
    }
    paths = {}
    for name, model in models.items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(model, str(paths[name]))
    return paths


def cnn_input(seed: int, batch: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((batch, 3, 16, 16)).astype(np.float32)


def bert_inputs(seed: int, batch: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, 16), np.int64)
    mask[:, 16 - 1 - seed % 8 :] = 0
    return {"input_ids": rng.integers(0, 100, (batch, 16), dtype=np.int64), "attention_mask": mask}


class Reference:
    """Program.run on the same model, compiled for the server's target (and ref)."""

    def __init__(self, path: Path, target: str = "cpu"):
        self.prog = graphkiln.parse_onnx(str(path)).compile(target)
        self.ref = graphkiln.parse_onnx(str(path)).compile("ref")

    def run(self, feeds: dict) -> list:
        return self.prog.run(feeds)


def assert_outputs(got: list, want: list, *, exact: bool = False) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if exact:
            np.testing.assert_array_equal(g, w)
        else:  # batched runs may sum in another order than a batch-1 run
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


class Server:
    """`python -m graphkiln serve ARGS --port 0` in a subprocess; `url` once it listens."""

    def __init__(self, args: list[str], env: dict | None = None, timeout: float = 60.0):
        cmd = [
            sys.executable,
            "-m",
            "graphkiln",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *args,
        ]
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.lines: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(
                    f"the server exited ({self.proc.wait()}):\n" + "".join(self.lines)
                )
            self.lines.append(line)
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if found:
                self.url = found.group(1)
                break
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the server did not start:\n" + "".join(self.lines))
        self.port = int(self.url.rsplit(":", 1)[1])
        self.wait_ready(deadline)

    def wait_ready(self, deadline: float) -> None:
        import httpx

        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/v2/health/ready", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("the server never became ready")

    def output(self) -> str:
        """What the server printed (all of it once it has stopped)."""
        return "".join(self.lines)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait (SIGKILL after `timeout`); the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rest, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rest, _ = self.proc.communicate()
        self.lines.append(rest or "")
        return self.proc.returncode
