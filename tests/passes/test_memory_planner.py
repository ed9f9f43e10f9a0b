# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
from graphkiln.ir import parse_graph
from graphkiln.planner import plan_memory


def test_chain_reuses_buffers_and_views_alias():
    graph = parse_graph("""
graph main(%x: f32[1024]) {
  %a: f32[1024] = Exp(%x)
  %b: f32[1024] = Sin(%a)
  %s: i64[2] = Constant() {value = tensor<i64[2]> [32, 32]}
  %v: f32[32,32] = Reshape(%b, %s)
  %axes: i64[1] = Constant() {value = tensor<i64[1]> [1]}
  %c: f32[32,1] = ReduceSum(%v, %axes)
  %d: f32[32,1] = Neg(%c)
  %e: f32[32,1] = Abs(%d)
  return %e
}""")
    plan = plan_memory(graph)
    assert plan.naive_bytes == 3 * 4096 + 2 * 128
    assert plan.views == 1 and plan.in_place == 2  # Reshape; Sin over Exp's buffer, Abs over Neg's
    assert plan.offsets[graph.nodes[1].outputs[0]] == plan.offsets[graph.nodes[0].outputs[0]]
    assert plan.arena_bytes == 4096 + 128


def test_buffers_live_at_the_same_time_do_not_overlap():
    graph = parse_graph("""
graph main(%x: f32[256]) {
  %a: f32[256] = Exp(%x)
  %b: f32[256] = Sin(%x)
  %c: f32[256] = Add(%a, %b)
  %d: f32[256] = Relu(%c)
  return %d
}""")
    plan = plan_memory(graph)
    a, b = graph.nodes[0].outputs[0], graph.nodes[1].outputs[0]
    assert abs(plan.offsets[a] - plan.offsets[b]) >= 1024
    assert plan.arena_bytes == 2 * 1024
