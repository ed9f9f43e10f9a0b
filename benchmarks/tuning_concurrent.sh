#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright graphkiln authors
# Eight `graphkiln tune` processes at once against one tuning database, each tuning the
# example CNN at its own batch size (so every process stores different rows); then the
# database must hold every row (8 x the kernels of one) and pass SQLite's integrity check.
#   GRAPHKILN_CORE_DIR=build/x PYTHONPATH=python benchmarks/tuning_concurrent.sh [PYTHON]
PY=${1:-python}
DB=$(mktemp -d)/tuning.sqlite
LOGS=$(mktemp -d)
# the example CNN declares batch 1, which input_shapes may not change: tune a copy whose
# batch dim is symbolic (N), so that --input-dim can set it
MODEL=$(mktemp -d)/example_cnn_batch_n.onnx
"$PY" -c "
import onnx, sys
m = onnx.load(sys.argv[1])
for vi in (m.graph.input[0], m.graph.output[0]):
    vi.type.tensor_type.shape.dim[0].dim_param = 'N'
del m.graph.value_info[:]
onnx.save(m, sys.argv[2])" "$(dirname "$0")/../python/graphkiln/models/example_cnn.onnx" "$MODEL" \
  || exit 1
pids=()
for b in 1 2 3 4 5 6 7 8; do
  "$PY" -m graphkiln tune "$MODEL" --input-dim image=$b,3,32,32 --db "$DB" --no-progress \
    > "$LOGS/$b.log" 2>&1 &
  pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=$((fail + 1)); done
echo "processes failed: $fail"
grep -hv "^tuned" "$LOGS"/*.log
grep -h "^tuned" "$LOGS"/*.log | awk '{s += $2} END {print "kernels tuned by the 8 processes:", s}'
"$PY" -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print('rows in the database:', c.execute('select count(*) from tuning').fetchone()[0])
print('integrity check:', c.execute('pragma integrity_check').fetchone()[0])" "$DB"
