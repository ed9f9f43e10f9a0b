# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graceful shutdown: SIGTERM while requests wait in a batch still answers every one of
them (right), then the server exits 0 and stops listening."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from serving_testing import Reference, Server, assert_outputs, cnn_input, write_models  # noqa: E402


def test_sigterm_drains_requests_in_flight(tmp_path):
    paths = write_models(tmp_path)
    ref = Reference(paths["cnn"])
    # requests wait up to 1.5 s for their batch: SIGTERM lands while all are in flight
    srv = Server(
        [str(paths["cnn"]), "--max-batch", "64", "--max-delay-ms", "1500"],
        env={"GRAPHKILN_NUM_THREADS": "1"},
    )
    sent = threading.Barrier(13)
    try:

        def call(seed):
            x = cnn_input(seed)
            with httpx.Client(base_url=srv.url, timeout=60) as c:
                c.get("/v2/health/live")  # connected before the signal
                sent.wait()
                r = c.post(
                    "/v2/models/cnn/infer",
                    json={
                        "inputs": [
                            {
                                "name": "x",
                                "datatype": "FP32",
                                "shape": list(x.shape),
                                "data": x.ravel().tolist(),
                            }
                        ]
                    },
                )
            return x, r

        with ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(call, 200 + i) for i in range(12)]
            sent.wait()
            time.sleep(0.4)
            assert all(not f.done() for f in futures), "the requests did not wait in a batch"
            code = srv.stop()
            answers = [f.result() for f in futures]
    finally:
        srv.stop()
    assert code == 0, srv.output()
    assert "graphkiln serve: stopped" in srv.output()
    for x, r in answers:
        assert r.status_code == 200, r.text
        got = np.array(r.json()["outputs"][0]["data"], np.float32).reshape(1, 10)
        assert_outputs([got], ref.run({"x": x}))
    with pytest.raises(httpx.TransportError):
        httpx.get(srv.url + "/v2/health/live", timeout=5)
