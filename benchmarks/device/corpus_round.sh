#!/usr/bin/env bash
# GPU call for one round of the live teacher corpus (issue 10; docs/design/corpus.md).
# Carry: .whl (bash .ci/device-wheels.sh) and .kb (KernelBench checkout), and .corpus-cache when
# an earlier round left one (the verifier's baseline and ceiling cache of the H200 it ran on).
# Usage: bash benchmarks/device/corpus_round.sh ROUND_FILE [WORKERS_PER_GPU] [LIMIT_S]
# With CEILINGS=1 it then measures the copy and matmul ceilings on GPU 0 -> $OUT/ceilings.json.
# Returns under $OUT: round.txt (every tool's output), round.log, sessions.tgz (the session
# folders of the round, to unpack over traces/), cache.tgz (the verifier's cache).
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
export UPSKILLS_CACHE_DIR=/tmp/upskills-cache
mkdir -p "$UPSKILLS_CACHE_DIR"
[ -d .corpus-cache ] && cp -n .corpus-cache/* "$UPSKILLS_CACHE_DIR/" 2>/dev/null
round=$1
timeout "${3:-560}" python3 benchmarks/corpus_live/round.py "$round" --out "$OUT" --workers "${2:-3}"
echo "round exit $?"
[ "${CEILINGS:-0}" = 1 ] && CUDA_VISIBLE_DEVICES=0 timeout 60 python3 benchmarks/device/ceilings.py --out "$OUT/ceilings.json"
folders=$(grep -v '^\s*#' "$round" | awk 'NF {print $1}')
tar czf "$OUT/sessions.tgz" $folders
tar czf "$OUT/cache.tgz" -C "$UPSKILLS_CACHE_DIR" .
