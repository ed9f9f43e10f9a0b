# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""The installed graphkiln._core finds libdnnl.so.3 of the onednn-cpu-gomp wheel on its own
(RPATH into <prefix>/lib), with no LD_LIBRARY_PATH and no preloading."""

import importlib.metadata as md
import os
import subprocess
import sys

PROBE = """
import graphkiln._core
maps = open('/proc/self/maps').read().splitlines()
print(sorted({l.split()[-1] for l in maps if 'libdnnl' in l or 'libgomp' in l}))
"""


def test_core_loads_the_onednn_wheels_library_by_itself():
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "GRAPHKILN_CORE_DIR")
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded = eval(result.stdout.strip())  # noqa: S307 - our own probe's list literal
    dnnl = [p for p in loaded if "libdnnl" in p]
    assert len(dnnl) == 1, loaded
    dist = md.distribution("onednn-cpu-gomp")
    wheel_libs = {
        os.path.realpath(dist.locate_file(f)) for f in dist.files if "libdnnl.so" in str(f)
    }
    assert os.path.realpath(dnnl[0]) in wheel_libs, (dnnl, wheel_libs)
    assert len([p for p in loaded if "libgomp" in p]) == 1, f"two OpenMP runtimes: {loaded}"
