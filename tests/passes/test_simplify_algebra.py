# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import simplify_algebra
from pass_testing import check_pass


def test_neutral_elements_identity_and_dropout_disappear():
    check_pass(
        simplify_algebra,
        """
graph main(%x: f32[2,3]) {
  %one: f32[] = Constant() {value = tensor<f32[]> [1.0]}
  %zero: f32[3] = Constant() {value = tensor<f32[3]> [0.0, 0.0, 0.0]}
  %a: f32[2,3] = Mul(%x, %one)
  %b: f32[2,3] = Add(%zero, %a)
  %c: f32[2,3] = Identity(%b)
  %d: f32[2,3] = Dropout(%c)
  %e: f32[2,3] = Relu(%d)
  return %e
}""",
        """
graph main(%x: f32[2,3]) {
  %e: f32[2,3] = Relu(%x)
  return %e
}""",
    )


def test_adding_zero_that_broadcasts_to_a_larger_shape_is_kept():
    before = """
graph main(%x: f32[3]) {
  %zero: f32[2,3] = Constant() {value = tensor<f32[2,3]> [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}
  %y: f32[2,3] = Add(%x, %zero)
  return %y
}"""
    check_pass(simplify_algebra, before, before)


def test_expand_feeding_a_broadcasting_op_is_dropped():
    check_pass(
        simplify_algebra,
        """
graph main(%x: f32[1,3], %y: f32[4,3]) {
  %s: i64[2] = Constant() {value = tensor<i64[2]> [4, 3]}
  %e: f32[4,3] = Expand(%x, %s)
  %z: f32[4,3] = Add(%e, %y)
  return %z
}""",
        """
graph main(%x: f32[1,3], %y: f32[4,3]) {
  %z: f32[4,3] = Add(%x, %y)
  return %z
}""",
    )


def test_cast_like_becomes_cast():
    check_pass(
        simplify_algebra,
        """
graph main(%x: f32[2], %like: i64[3]) {
  %y: i64[2] = CastLike(%x, %like)
  return %y
}""",
        """
graph main(%x: f32[2], %like: i64[3]) {
  %y: i64[2] = Cast(%x) {to = i64}
  return %y
}""",
    )


def test_training_mode_dropout_is_kept():
    # training_mode not a constant false: Dropout draws a mask and scales the kept values
    before = """
graph main(%x: f32[2,3], %r: f32[], %t: bool[]) {
  %y: f32[2,3], %m: bool[2,3] = Dropout(%x, %r, %t) {seed = 0}
  return %y, %m
}"""
    check_pass(simplify_algebra, before, before)
    unused_mask = """
graph main(%x: f32[2,3], %r: f32[], %t: bool[]) {
  %y: f32[2,3] = Dropout(%x, %r, %t) {seed = 0}
  return %y
}"""
    check_pass(simplify_algebra, unused_mask, unused_mask)


def test_dropout_with_a_constant_false_training_mode_disappears():
    check_pass(
        simplify_algebra,
        """
graph main(%x: f32[2,3], %r: f32[]) {
  %t: bool[] = Constant() {value = tensor<bool[]> [false]}
  %y: f32[2,3] = Dropout(%x, %r, %t) {seed = 0}
  %z: f32[2,3] = Relu(%y)
  return %z
}""",
        """
graph main(%x: f32[2,3], %r: f32[]) {
  %z: f32[2,3] = Relu(%x)
  return %z
}""",
    )
