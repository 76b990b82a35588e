"""Reads a Scalpel Parquet dataset with pyarrow, as another engine would: each table's
directory as a Hive-partitioned dataset (every table's, in a dataset of a trace's windows). Prints one JSON line per table: its name, rows and
column names (partition columns included)."""
import json
import os
import sys

import pyarrow.dataset as ds

root = sys.argv[1]
with open(os.path.join(root, "scalpel-tables.json")) as f:
    manifest = json.load(f)
windowed = manifest.get("infer_windows", 0) > 0
for t in manifest["tables"]:
    d = ds.dataset(os.path.join(root, t["name"]), format="parquet",
                   partitioning="hive" if t["partitioned"] or windowed else None)
    table = d.to_table()
    print(json.dumps({"name": t["name"], "rows": table.num_rows,
                      "columns": table.column_names}))
