# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Graph optimization passes. Each module exposes `run(graph, ctx)` and states its contract
in its docstring's first line; `manager.py` runs pipelines (lists in `pipelines.py`)."""
