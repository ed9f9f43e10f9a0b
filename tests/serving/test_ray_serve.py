# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""graphkiln.serving.ray on a local Ray (2 CPUs, 2 replicas of one CPU each): the protocol
through Ray's proxy (metadata, errors, inference equal to Program.run), and one replica
killed mid-load: Ray replaces it, every request is answered right in the end (those that
fail while it dies are retried by the client, as a client must), none is answered wrong.
Runs whenever ray[serve] is installed (the test extra installs it); about 30 s."""

import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.serve")
httpx = pytest.importorskip("httpx")

import graphkiln  # noqa: E402
from serving_testing import Reference, assert_outputs, cnn_input, write_models  # noqa: E402

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replicas() -> set[str]:
    return {
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["name"].startswith("SERVE_REPLICA::graphkiln#")
    }


@pytest.fixture(scope="module")
def ray_server(tmp_path_factory, request):
    from graphkiln.serving import ray as ray_serving

    paths = write_models(tmp_path_factory.mktemp("ray_models"))
    # the replicas import graphkiln from wherever this process did
    package_dir = str(Path(graphkiln.__file__).resolve().parents[1])
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package_dir, saved) if p)
    ray.init(
        num_cpus=2, include_dashboard=False, object_store_memory=150 * 2**20, log_to_driver=False
    )
    try:
        port = _free_port()
        ray_serving.start(
            [("cnn", str(paths["cnn"])), ("gather", str(paths["gather"]))],
            host="127.0.0.1",
            port=port,
            replicas=2,
            max_batch=8,
            max_delay_s=0.005,
            cpus_per_replica=1,
        )
        yield f"http://127.0.0.1:{port}", paths
    finally:
        try:
            ray_serving.stop()
        finally:
            ray.shutdown()
            if saved is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = saved


def _body(x):
    return {
        "inputs": [
            {"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}
        ]
    }


def _logits(r):
    out = r.json()["outputs"][0]
    return np.array(out["data"], np.float32).reshape(out["shape"])


def test_protocol_through_ray(ray_server):
    url, paths = ray_server
    ref = Reference(paths["cnn"])
    with httpx.Client(base_url=url, timeout=60) as c:
        assert c.get("/v2/health/ready").status_code == 200
        assert c.get("/v2/models/cnn").json()["inputs"] == [
            {"name": "x", "datatype": "FP32", "shape": [-1, 3, 16, 16]}
        ]
        r = c.get("/v2/models/nope")
        assert r.status_code == 404 and "unknown model 'nope'" in r.json()["error"]
        r = c.post("/v2/models/cnn/infer", content=b"{")
        assert r.status_code == 400 and "malformed JSON" in r.json()["error"]
        x = cnn_input(seed=70, batch=2)
        r = c.post("/v2/models/cnn/infer", json=_body(x))
        assert r.status_code == 200, r.text
        assert_outputs([_logits(r)], ref.run({"x": x}))
        r = c.post(
            "/v2/models/gather/infer",
            json={"inputs": [{"name": "idx", "datatype": "INT64", "shape": [1], "data": [9]}]},
        )
        assert r.status_code == 500 and "Gather" in r.json()["error"]


def test_survives_a_replica_killed_mid_load(ray_server):
    url, paths = ray_server
    ref = Reference(paths["cnn"])
    inputs = [cnn_input(seed=300 + i) for i in range(16)]
    expected = [ref.run({"x": x})[0] for x in inputs]
    before = _replicas()
    assert len(before) == 2
    answered = []  # (input index, attempts) of each request answered 200
    failures = []  # what the failed attempts got (retried)
    wrong = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(worker):
        with httpx.Client(base_url=url, timeout=30) as c:
            n = 0
            while not stop.is_set():
                i = (worker * 7 + n) % len(inputs)
                n += 1
                for attempt in range(1, 21):
                    try:
                        r = c.post("/v2/models/cnn/infer", json=_body(inputs[i]))
                    except httpx.TransportError as exc:
                        with lock:
                            failures.append(type(exc).__name__)
                        time.sleep(0.1)
                        continue
                    if r.status_code == 200:
                        got = _logits(r)
                        ok = np.allclose(got, expected[i], rtol=1e-4, atol=1e-5)
                        with lock:
                            (answered if ok else wrong).append((i, attempt))
                        break
                    assert r.status_code >= 500, r.text  # a 4xx would be our bug, not Ray's
                    with lock:
                        failures.append(r.status_code)
                    time.sleep(0.1)
                else:
                    with lock:
                        wrong.append((i, "no answer after 20 attempts"))

    with ThreadPoolExecutor(6) as pool:
        workers = [pool.submit(client, w) for w in range(6)]
        deadline = time.monotonic() + 30
        while len(answered) < 30 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = sorted(before)[0]
        ray.kill(ray.get_actor(victim, namespace="serve"), no_restart=True)
        killed_at = len(answered)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # Ray starts a replacement; load goes on
            now = _replicas()
            if len(now) == 2 and victim not in now and len(answered) > killed_at + 60:
                break
            time.sleep(0.2)
        stop.set()
        for w in workers:
            w.result()
    after = _replicas()
    assert victim not in after and len(after) == 2, (before, after)
    assert wrong == []
    assert len(answered) > killed_at + 60, (len(answered), killed_at, failures[:10])
