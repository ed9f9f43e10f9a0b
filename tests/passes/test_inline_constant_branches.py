# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import inline_constant_branches
from pass_testing import check_pass

BRANCHES = """
graph main(%x: f32[2,3]) {
  %c: bool[] = Constant() {value = tensor<bool[]> [COND]}
  %o: f32[2,3] = If(%c) {
    then_branch = graph then() {
      %t: f32[2,3] = Neg(%x)
      %u: f32[2,3] = Exp(%t)
      return %u
    },
    else_branch = graph else() {
      return %x
    }
  }
  %y: f32[2,3] = Add(%o, %x)
  return %y, %o
}"""


def test_constant_true_takes_the_then_branch():
    check_pass(
        inline_constant_branches,
        BRANCHES.replace("COND", "true"),
        """
graph main(%x: f32[2,3]) {
  %c: bool[] = Constant() {value = tensor<bool[]> [true]}
  %t: f32[2,3] = Neg(%x)
  %o: f32[2,3] = Exp(%t)
  %y: f32[2,3] = Add(%o, %x)
  return %y, %o
}""",
    )


def test_constant_false_branch_returning_an_outer_value():
    check_pass(
        inline_constant_branches,
        BRANCHES.replace("COND", "false"),
        """
graph main(%x: f32[2,3]) {
  %c: bool[] = Constant() {value = tensor<bool[]> [false]}
  %y: f32[2,3] = Add(%x, %x)
  return %y, %x
}""",
    )


def test_condition_computed_at_run_time_stays():
    text = BRANCHES.replace(
        "%c: bool[] = Constant() {value = tensor<bool[]> [COND]}",
        "%s: f32[] = ReduceSum(%x)\n  %z: f32[] = Constant() {value = tensor<f32[]> [0.0]}\n"
        "  %c: bool[] = Greater(%s, %z)",
    )
    check_pass(inline_constant_branches, text, text)
