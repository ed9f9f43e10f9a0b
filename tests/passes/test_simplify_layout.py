# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import simplify_layout
from pass_testing import check_pass


def test_transpose_pair_cancels_and_reshape_chain_collapses():
    check_pass(
        simplify_layout,
        """
graph main(%x: f32[2,3,4]) {
  %t1: f32[4,2,3] = Transpose(%x) {perm = [2, 0, 1]}
  %t2: f32[2,3,4] = Transpose(%t1) {perm = [1, 2, 0]}
  %s1: i64[2] = Constant() {value = tensor<i64[2]> [6, 4]}
  %r1: f32[6,4] = Reshape(%t2, %s1)
  %f: f32[24,1] = Flatten(%r1) {axis = 2}
  %y: f32[24,1] = Relu(%f)
  return %y
}""",
        """
graph main(%x: f32[2,3,4]) {
  %s: i64[2] = Constant() {value = tensor<i64[2]> [24, 1]}
  %r: f32[24,1] = Reshape(%x, %s)
  %y: f32[24,1] = Relu(%r)
  return %y
}""",
    )


def test_two_transposes_compose_into_one():
    check_pass(
        simplify_layout,
        """
graph main(%x: f32[2,3,4]) {
  %t1: f32[3,2,4] = Transpose(%x) {perm = [1, 0, 2]}
  %t2: f32[4,3,2] = Transpose(%t1) {perm = [2, 0, 1]}
  return %t2
}""",
        """
graph main(%x: f32[2,3,4]) {
  %t: f32[4,3,2] = Transpose(%x) {perm = [2, 1, 0]}
  return %t
}""",
    )
