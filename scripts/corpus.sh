#!/usr/bin/env bash
# The generated corpus (issue 49): N programs with known truth from seed SEED on (default: 50
# fresh seeds from the clock, printed), each written and compiled from its seed, its server
# recorded under a load run outside the recording, its model inferred and scored against the
# truth it wrote. One line per program:
#   seed=S arch=A … requests=R whole=W share=X types=T
# (W: requests that are exactly one occurrence of the best task type; T: task types covering
# 95% of the leaves). Exits 1 when any program is below 95% whole or above 10 types, 2 when one
# could not be built, recorded or inferred. KEEP=DIR keeps each program's sources, trace, truth
# and model in DIR/seed-S.
#
# Usage: scripts/corpus.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
SEED=${2:-$(( $(date +%s) % 1000000 * 1000 ))}
scripts/build-release.sh
echo "seeds $SEED to $((SEED + N - 1))"
exec target/release/corpus-gen "$N" "$SEED" ${KEEP:+--keep "$KEEP"}
