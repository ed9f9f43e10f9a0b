# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
"""Model formats -> ir.Graph. Only ONNX for now."""
