# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Serving compiled programs over the Open Inference Protocol v2 (KServe / Triton's HTTP
protocol): the local server with dynamic batching (`graphkiln serve`), scale-out on Ray
Serve (`graphkiln.serving.ray`) and the export of a Triton model repository. Needs
`pip install graphkiln[serve]` (`[serve-ray]` for Ray); importing graphkiln never imports
this package. See README.md here for where things live."""
