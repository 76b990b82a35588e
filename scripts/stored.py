"""The complete graph and model of a directory `scalpel infer` wrote, as the JSON documents
`scalpel export` writes (graph.json and model.json hold no bulk tables: leaves, edges and
occurrences are in graph.bin and model.bin). Used by the figure scripts beside this file.

The binary is $SCALPEL when set, else target/release/scalpel of this checkout."""
import json
import os
import subprocess


def scalpel():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("SCALPEL") or os.path.join(here, "..", "target", "release", "scalpel")


def load(model_dir, table):
    """`table` is "graph" or "model": the whole document, every table inline."""
    out = subprocess.run([scalpel(), "export", model_dir, "--table", table],
                         check=True, stdout=subprocess.PIPE)
    return json.loads(out.stdout)
