# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import normalize_gemm
from pass_testing import check_pass


def test_transposed_constant_b_and_alpha_are_folded_into_b():
    check_pass(
        normalize_gemm,
        """
graph main(%x: f32[2,3]) {
  %b: f32[2,3] = Constant() {value = tensor<f32[2,3]> [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
  %y: f32[2,2] = Gemm(%x, %b) {alpha = 2.0, transB = 1}
  return %y
}""",
        """
graph main(%x: f32[2,3]) {
  %b: f32[3,2] = Constant() {value = tensor<f32[3,2]> [2.0, 8.0, 4.0, 10.0, 6.0, 12.0]}
  %y: f32[2,2] = Gemm(%x, %b) {alpha = 1.0, beta = 1.0, transA = 0, transB = 0}
  return %y
}""",
    )
