#!/usr/bin/env bash
# bench/controller/run.sh - the original controller benchmark, kept as a
# shorthand for one case of suite.sh: one JobSet with 1,000 single-pod child
# Jobs, ours vs upstream v0.12.0 vs the raw create loop with and without the
# controllers' client limit, 3 reps interleaved, fresh control plane each.
#
#   bench/controller/run.sh [--reps N] [--targets "upstream ours raw raw-qps"] [--out DIR]
#
# Any suite.sh option may follow and overrides these defaults; see suite.sh
# for the targets, the environment and the output.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/suite.sh" --cases create --n 1000 --reps 3 \
	--targets "upstream ours raw raw-qps" "$@"
