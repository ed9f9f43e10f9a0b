# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import eliminate_common_subexpressions
from pass_testing import check_pass


def test_repeated_computation_and_equal_constants_merge():
    check_pass(
        eliminate_common_subexpressions,
        """
graph main(%x: f32[4]) {
  %a: f32[4] = Relu(%x)
  %b: f32[4] = Relu(%x)
  %c1: f32[] = Constant() {value = tensor<f32[]> [2.0]}
  %c2: f32[] = Constant() {value = tensor<f32[]> [2.0]}
  %p: f32[4] = Mul(%a, %c1)
  %q: f32[4] = Mul(%b, %c2)
  %y: f32[4] = Add(%p, %q)
  return %y
}""",
        """
graph main(%x: f32[4]) {
  %a: f32[4] = Relu(%x)
  %c1: f32[] = Constant() {value = tensor<f32[]> [2.0]}
  %p: f32[4] = Mul(%a, %c1)
  %y: f32[4] = Add(%p, %p)
  return %y
}""",
    )
