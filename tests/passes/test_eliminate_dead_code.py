# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.passes import eliminate_dead_code
from pass_testing import check_pass


def test_unused_nodes_are_removed():
    check_pass(
        eliminate_dead_code,
        """
graph main(%x: f32[4]) {
  %a: f32[4] = Relu(%x)
  %b: f32[4] = Relu(%a)
  %c: f32[4] = Add(%x, %x)
  return %c
}""",
        """
graph main(%x: f32[4]) {
  %c: f32[4] = Add(%x, %x)
  return %c
}""",
    )
