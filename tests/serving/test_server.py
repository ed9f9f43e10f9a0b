# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""`graphkiln serve` in a subprocess on 127.0.0.1, talked to with httpx and with
tritonclient.http: every endpoint, the JSON and binary tensor forms, dynamic batching of
concurrent requests (mixed shapes and models), every kind of bad input (4xx in the
protocol's {"error": ...} form, the server serving on), a kernel error (500 for that
request only) and the Prometheus metrics. Every answer is compared with Program.run on the
same seeded random inputs."""

import gzip
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from serving_testing import (  # noqa: E402
    Reference,
    Server,
    assert_outputs,
    bert_inputs,
    cnn_input,
    write_models,
)

MAX_BODY_MB = 1


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("serving_models"))


@pytest.fixture(scope="module")
def refs(models):
    return {name: Reference(path) for name, path in models.items()}


@pytest.fixture(scope="module")
def server(models):
    srv = Server(
        [f"{n}={p}" for n, p in models.items()]
        + [
            "--target",
            "cpu",
            "--max-batch",
            "8",
            "--max-delay-ms",
            "20",
            "--instances",
            "2",
            "--max-body-mb",
            str(MAX_BODY_MB),
        ],
        env={"GRAPHKILN_NUM_THREADS": "1"},
    )
    yield srv
    code = srv.stop()
    assert code == 0, srv.output()


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def json_request(feeds: dict, **extra) -> dict:
    datatypes = {
        np.dtype(np.float32): "FP32",
        np.dtype(np.int64): "INT64",
        np.dtype(np.float64): "FP64",
    }
    return {
        "inputs": [
            {
                "name": n,
                "datatype": datatypes[v.dtype],
                "shape": list(v.shape),
                "data": v.reshape(-1).tolist(),
            }
            for n, v in feeds.items()
        ],
        **extra,
    }


def decode_json_outputs(body: dict) -> list:
    dtypes = {"FP32": np.float32, "INT64": np.int64}
    return [np.array(o["data"], dtypes[o["datatype"]]).reshape(o["shape"]) for o in body["outputs"]]


def binary_request(feeds: dict, datatypes: dict) -> tuple[bytes, dict]:
    head = {
        "inputs": [
            {
                "name": n,
                "datatype": datatypes[n],
                "shape": list(v.shape),
                "parameters": {"binary_data_size": v.nbytes},
            }
            for n, v in feeds.items()
        ],
        "parameters": {"binary_data_output": True},
    }
    text = json.dumps(head).encode()
    body = text + b"".join(np.ascontiguousarray(v).tobytes() for v in feeds.values())
    return body, {
        "Inference-Header-Content-Length": str(len(text)),
        "Content-Type": "application/octet-stream",
    }


def decode_binary_outputs(response) -> list:
    n = int(response.headers["inference-header-content-length"])
    head, at, out = json.loads(response.content[:n]), n, []
    for o in head["outputs"]:
        size = o["parameters"]["binary_data_size"]
        dtype = {"FP32": np.float32, "INT64": np.int64}[o["datatype"]]
        out.append(np.frombuffer(response.content[at : at + size], dtype).reshape(o["shape"]))
        at += size
    assert at == len(response.content)
    return out


# -- endpoints ------------------------------------------------------------------------------
def test_health_and_server_metadata(client):
    assert client.get("/v2/health/live").json() == {"live": True}
    assert client.get("/v2/health/ready").json() == {"ready": True}
    meta = client.get("/v2").json()
    assert meta["name"] == "graphkiln" and "binary_tensor_data" in meta["extensions"]
    index = client.post("/v2/repository/index").json()
    assert sorted((m["name"], m["state"]) for m in index) == [
        ("bert", "READY"),
        ("cnn", "READY"),
        ("gather", "READY"),
    ]


def test_model_metadata_has_dtypes_and_symbolic_dims_as_minus_one(client):
    cnn = client.get("/v2/models/cnn").json()
    assert cnn == {
        "name": "cnn",
        "versions": ["1"],
        "platform": "graphkiln_cpu",
        "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3, 16, 16]}],
        "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, 10]}],
    }
    bert = client.get("/v2/models/bert/versions/1").json()
    assert bert["inputs"] == [
        {"name": "input_ids", "datatype": "INT64", "shape": [-1, 16]},
        {"name": "attention_mask", "datatype": "INT64", "shape": [-1, 16]},
    ]
    assert bert["outputs"] == [{"name": "hidden_states", "datatype": "FP32", "shape": [-1, 16, 64]}]
    for path in ("/v2/models/cnn/ready", "/v2/models/cnn/versions/1/ready"):
        r = client.get(path)
        assert r.status_code == 200 and r.json() == {"name": "cnn", "ready": True}
    config = client.get("/v2/models/cnn/config").json()
    assert config["max_batch_size"] == 8
    assert config["input"] == [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 16, 16]}]


def test_json_inference_matches_program_run(client, refs):
    for batch in (1, 3):
        x = cnn_input(seed=10 + batch, batch=batch)
        r = client.post("/v2/models/cnn/infer", json=json_request({"x": x}, id="req-7"))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["model_name"] == "cnn" and body["model_version"] == "1"
        assert body["id"] == "req-7"
        assert body["outputs"][0]["name"] == "logits"
        assert_outputs(decode_json_outputs(body), refs["cnn"].run({"x": x}))
    feeds = bert_inputs(seed=5, batch=2)
    r = client.post("/v2/models/bert/versions/1/infer", json=json_request(feeds))
    assert r.status_code == 200, r.text
    assert_outputs(decode_json_outputs(r.json()), refs["bert"].run(feeds))


def test_binary_tensor_extension(client, refs):
    feeds = bert_inputs(seed=6, batch=1)
    body, headers = binary_request(feeds, {"input_ids": "INT64", "attention_mask": "INT64"})
    r = client.post("/v2/models/bert/infer", content=body, headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/octet-stream"
    assert_outputs(decode_binary_outputs(r), refs["bert"].run(feeds))
    # a JSON output asked for by name, the input binary
    x = cnn_input(seed=21)
    head = {
        "inputs": [
            {
                "name": "x",
                "datatype": "FP32",
                "shape": [1, 3, 16, 16],
                "parameters": {"binary_data_size": x.nbytes},
            }
        ],
        "outputs": [{"name": "logits", "parameters": {"binary_data": False}}],
    }
    text = json.dumps(head).encode()
    r = client.post(
        "/v2/models/cnn/infer",
        content=text + x.tobytes(),
        headers={"Inference-Header-Content-Length": str(len(text))},
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json", r.text
    assert_outputs(decode_json_outputs(r.json()), refs["cnn"].run({"x": x}))


def test_gzip_encoded_request(client, refs):
    x = cnn_input(seed=31)
    raw = json.dumps(json_request({"x": x})).encode()
    r = client.post(
        "/v2/models/cnn/infer",
        content=gzip.compress(raw),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text
    assert_outputs(decode_json_outputs(r.json()), refs["cnn"].run({"x": x}))
    bomb = gzip.compress(b" " * (MAX_BODY_MB * 2**20 + 10))  # small on the wire
    r = client.post("/v2/models/cnn/infer", content=bomb, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 413 and "inflates to more than" in r.json()["error"]


def test_tritonclient_http(server, refs):
    import tritonclient.http as triton
    from tritonclient.utils import InferenceServerException

    c = triton.InferenceServerClient(url=f"127.0.0.1:{server.port}")
    try:
        assert c.is_server_live() and c.is_server_ready()
        assert c.is_model_ready("cnn") and c.is_model_ready("bert", "1")
        assert not c.is_model_ready("cnn", "2")
        assert c.get_server_metadata()["name"] == "graphkiln"
        meta = c.get_model_metadata("bert")
        assert [i["name"] for i in meta["inputs"]] == ["input_ids", "attention_mask"]
        for binary in (True, False):
            x = cnn_input(seed=40 + binary, batch=2)
            inp = triton.InferInput("x", list(x.shape), "FP32")
            inp.set_data_from_numpy(x, binary_data=binary)
            out = triton.InferRequestedOutput("logits", binary_data=binary)
            result = c.infer("cnn", [inp], outputs=[out], request_id="t1")
            assert_outputs([result.as_numpy("logits")], refs["cnn"].run({"x": x}))
            assert result.get_response()["id"] == "t1"
        feeds = bert_inputs(seed=44, batch=3)
        inputs = []
        for name, value in feeds.items():
            inputs.append(triton.InferInput(name, list(value.shape), "INT64"))
            inputs[-1].set_data_from_numpy(value)
        result = c.infer("bert", inputs)  # no outputs named: all, in binary
        assert_outputs([result.as_numpy("hidden_states")], refs["bert"].run(feeds))
        with pytest.raises(InferenceServerException, match="unknown model 'nope'"):
            c.infer("nope", inputs)
        bad = triton.InferInput("x", [1, 3, 16, 16], "FP64")
        bad.set_data_from_numpy(np.zeros((1, 3, 16, 16)))
        with pytest.raises(InferenceServerException, match="datatype FP64.*takes FP32"):
            c.infer("cnn", [bad])
    finally:
        c.close()


def test_concurrent_requests_are_batched_and_each_answer_is_its_own(server, refs):
    jobs = []
    for i in range(36):  # cnn at batch 1 and 2, bert at batch 1, interleaved
        if i % 3 == 2:
            jobs.append(("bert", bert_inputs(seed=100 + i)))
        else:
            jobs.append(("cnn", {"x": cnn_input(seed=100 + i, batch=1 + i % 3)}))
    before = _metric(server, 'graphkiln_batch_size_count{model="cnn"}')
    start = threading.Barrier(len(jobs))
    local = threading.local()

    def call(job):
        name, feeds = job
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=server.url, timeout=60)
        start.wait()
        body, headers = binary_request(
            feeds, {n: "FP32" if v.dtype == np.float32 else "INT64" for n, v in feeds.items()}
        )
        r = local.client.post(f"/v2/models/{name}/infer", content=body, headers=headers)
        assert r.status_code == 200, r.text
        return decode_binary_outputs(r)

    with ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(call, jobs))
    for (name, feeds), got in zip(jobs, answers):
        assert_outputs(got, refs[name].run(feeds))
    cnn_requests = sum(1 for name, _ in jobs if name == "cnn")
    batches = _metric(server, 'graphkiln_batch_size_count{model="cnn"}') - before
    assert 1 <= batches < cnn_requests, f"{cnn_requests} cnn requests ran as {batches} batches"


# -- bad input ------------------------------------------------------------------------------
X = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)


HEAD = json.dumps(
    {
        "inputs": [
            {
                "name": "x",
                "datatype": "FP32",
                "shape": [1, 3, 16, 16],
                "parameters": {"binary_data_size": 3072},
            }
        ]
    }
).encode()


def _json(body):
    return {"content": json.dumps(body).encode()}


BAD_REQUESTS = [
    ("malformed JSON", "cnn", {"content": b'{"inputs": [}'}, 400, "malformed JSON"),
    ("not an object", "cnn", _json([1, 2]), 400, "must be a JSON object"),
    ("no inputs", "cnn", _json({"outputs": []}), 400, 'no "inputs" list'),
    (
        "wrong name",
        "cnn",
        _json(
            {
                "inputs": [
                    {
                        "name": "y",
                        "datatype": "FP32",
                        "shape": [1, 3, 16, 16],
                        "data": X.ravel().tolist(),
                    }
                ]
            }
        ),
        400,
        "missing input(s) ['x']; unknown input(s) ['y']",
    ),
    (
        "wrong dtype",
        "cnn",
        _json(json_request({"x": X.astype(np.float64)})),
        400,
        "input 'x': datatype FP64, but model 'cnn' takes FP32",
    ),
    (
        "unknown datatype",
        "cnn",
        _json({"inputs": [{"name": "x", "datatype": "FLOAT", "shape": [1], "data": [1]}]}),
        400,
        "unknown datatype 'FLOAT'",
    ),
    (
        "wrong static dim",
        "cnn",
        _json(json_request({"x": X[:, :, :8, :8].copy()})),
        400,
        "input 'x': dim 2 is 8; model 'cnn' fixes it at 16",
    ),
    ("wrong rank", "cnn", _json(json_request({"x": X[0]})), 400, "has rank 3"),
    (
        "data and shape disagree",
        "cnn",
        _json(
            {
                "inputs": [
                    {"name": "x", "datatype": "FP32", "shape": [1, 3, 16, 16], "data": [1.0, 2.0]}
                ]
            }
        ),
        400,
        "2 data elements for shape [1, 3, 16, 16]",
    ),
    (
        "negative dim",
        "cnn",
        _json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3], "data": []}]}),
        400,
        '"shape" must be a list of integers >= 0',
    ),
    (
        "floats for INT64",
        "bert",
        _json(
            {
                "inputs": [
                    {"name": "input_ids", "datatype": "INT64", "shape": [1, 2], "data": [1.5, 2.0]},
                    {
                        "name": "attention_mask",
                        "datatype": "INT64",
                        "shape": [1, 2],
                        "data": [1, 1],
                    },
                ]
            }
        ),
        400,
        "INT64 data must be integers",
    ),
    (
        "symbol sizes disagree",
        "bert",
        _json(
            json_request(
                {
                    "input_ids": np.ones((2, 16), np.int64),
                    "attention_mask": np.ones((3, 16), np.int64),
                }
            )
        ),
        400,
        "input 'attention_mask': dim 0 ('N') is 3, but input 'input_ids' set 'N' to 2",
    ),
    (
        "unknown output",
        "cnn",
        _json(json_request({"x": X}, outputs=[{"name": "probs"}])),
        400,
        "unknown output 'probs'; the model's outputs are ['logits']",
    ),
    (
        "binary size past the body",
        "cnn",
        {
            "content": HEAD + b"\0" * 100,
            "headers": {"Inference-Header-Content-Length": str(len(HEAD))},
        },
        400,
        "runs past the body",
    ),
    (
        "bad header length",
        "cnn",
        {"content": b"{}", "headers": {"Inference-Header-Content-Length": "99"}},
        400,
        "Inference-Header-Content-Length is '99'",
    ),
    (
        "oversized body",
        "cnn",
        {"content": b" " * (MAX_BODY_MB * 2**20 + 1)},
        413,
        f"accepts at most {MAX_BODY_MB * 2**20}",
    ),
    (
        "unknown model",
        "resnet",
        _json(json_request({"x": X})),
        404,
        "unknown model 'resnet'; this server has ['bert', 'cnn', 'gather']",
    ),
]


@pytest.mark.parametrize(
    "what, model, request_args, status, message", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS]
)
def test_bad_input_is_a_4xx_in_the_protocols_error_form(
    client, refs, what, model, request_args, status, message
):
    r = client.post(f"/v2/models/{model}/infer", **request_args)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert message in r.json()["error"]
    # the server serves on, and answers right
    ok = client.post("/v2/models/cnn/infer", json=json_request({"x": X}))
    assert ok.status_code == 200
    assert_outputs(decode_json_outputs(ok.json()), refs["cnn"].run({"x": X}))


def test_unknown_versions_paths_and_methods(client):
    r = client.post("/v2/models/cnn/versions/2/infer", json=json_request({"x": X}))
    assert r.status_code == 404 and r.json() == {
        "error": "model 'cnn' has no version '2' (versions: ['1'])"
    }
    r = client.get("/v2/models/nope")
    assert r.status_code == 404 and "unknown model 'nope'" in r.json()["error"]
    r = client.get("/v2/models/cnn/infer")
    assert r.status_code == 405 and "GET is not allowed" in r.json()["error"]
    r = client.get("/v1/models")
    assert r.status_code == 404 and "no endpoint '/v1/models'" in r.json()["error"]


def test_a_kernel_error_fails_only_its_own_request(server, refs):
    rng = np.random.default_rng(50)
    jobs = [rng.integers(0, 4, size=1 + i % 2).astype(np.int64) for i in range(16)]
    for i in (3, 9, 10):
        jobs[i] = np.array([9] * (1 + i % 2), np.int64)  # out of the table's range
    barrier = threading.Barrier(len(jobs))

    def call(idx):
        with httpx.Client(base_url=server.url, timeout=60) as c:
            barrier.wait()
            return c.post("/v2/models/gather/infer", json=json_request({"idx": idx}))

    with ThreadPoolExecutor(len(jobs)) as pool:
        answers = list(pool.map(call, jobs))
    for i, (idx, r) in enumerate(zip(jobs, answers)):
        if i in (3, 9, 10):
            assert r.status_code == 500, r.text
            error = r.json()["error"]
            assert "model 'gather' failed on this request" in error and "Gather" in error
        else:
            assert r.status_code == 200, r.text
            assert_outputs(
                decode_json_outputs(r.json()), refs["gather"].run({"idx": idx}), exact=True
            )
    assert server.proc.poll() is None


# -- metrics --------------------------------------------------------------------------------
def _metric(server, line_start: str) -> float:
    text = httpx.get(server.url + "/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.split()[-1])
    return 0.0


def test_prometheus_metrics(client):
    client.post("/v2/models/cnn/infer", json=json_request({"x": X}))
    client.post("/v2/models/cnn/infer", content=b"{")
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.text
    for family in (
        "graphkiln_requests_total",
        "graphkiln_request_errors_total",
        "graphkiln_request_duration_seconds",
        "graphkiln_queue_duration_seconds",
        "graphkiln_batch_duration_seconds",
        "graphkiln_batch_size",
    ):
        assert f"# TYPE {family} " in text
    lines = dict(line.rsplit(" ", 1) for line in text.splitlines() if not line.startswith("#"))
    assert float(lines['graphkiln_requests_total{model="cnn"}']) >= 2
    assert float(lines['graphkiln_request_errors_total{model="cnn",code="400"}']) >= 1
    count = float(lines['graphkiln_request_duration_seconds_count{model="cnn"}'])
    assert float(lines['graphkiln_request_duration_seconds_bucket{model="cnn",le="+Inf"}']) == count
    assert float(lines['graphkiln_batch_size_bucket{model="cnn",le="1"}']) >= 1
    assert float(lines['graphkiln_queue_duration_seconds_count{model="cnn"}']) >= 1
