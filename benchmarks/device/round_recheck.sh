#!/usr/bin/env bash
# One 2-GPU call (kind nvidia-h200-x2), two streams that never share a GPU:
#   GPU 0: a live-corpus round (one check at a time), then, with the time left, KernelBench's
#          harness next to upskills' judge on the problems not yet through it
#          (KB_SKIP, KB_PROBLEMS) -> $OUT/vs_kernelbench.json
#   GPU 1: the re-check of final kernels in fresh `upskills check` processes (RECHECK: task
#          names, comma-separated) -> $OUT/recheck.jsonl
# Usage: bash benchmarks/device/round_recheck.sh ROUND_FILE BUDGET_S
# Carry: .whl, .kb, .corpus-cache (and a .gguf-* part may ride along: it is copied to /tmp).
set -uo pipefail
for part in .gguf-*/part.*; do [ -e "$part" ] && mkdir -p /tmp/smollm2 && cp "$part" "${part%/*}/sha256" /tmp/smollm2/; done
source benchmarks/device/setup.sh || exit 1
round=$1; budget=${2:-540}
start=$(date +%s)
left() { echo $((budget - $(date +%s) + start - ${1:-0})); }
gpu0() {
  export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/upskills-cache
  mkdir -p "$UPSKILLS_CACHE_DIR"; [ -d .corpus-cache ] && cp -n .corpus-cache/* "$UPSKILLS_CACHE_DIR/" 2>/dev/null
  timeout "$(left 120)" python3 benchmarks/corpus_live/round.py "$round" --out "$OUT" --workers 1
  echo "round exit $?"
  local s; s=$(left 15)
  [ "$s" -gt 90 ] && timeout -k 10 "$s" python3 benchmarks/verifier_vs_kernelbench.py --kernelbench .kb \
    --out "$OUT/vs_kernelbench.json" --kb-skip "${KB_SKIP:-0}" --kb-problems "${KB_PROBLEMS:-10}" > "$OUT/vs_kernelbench.log" 2>&1
  echo "vs_kernelbench exit $?" >> "$OUT/vs_kernelbench.log"
}
gpu1() {
  export UPSKILLS_CACHE_DIR=/tmp/cache1
  [ -n "${RECHECK:-}" ] && timeout "$(left 15)" python3 benchmarks/corpus_live/recheck.py traces/corpus-live \
    --finals --tasks "$RECHECK" --gpus 1 --warm 3 --out "$OUT/recheck.jsonl" > "$OUT/recheck.log" 2>&1
  echo "recheck exit $?" >> "$OUT/recheck.log"
}
gpu1 & gpu0; wait
folders=$(grep -v '^\s*#' "$round" | awk 'NF {print $1}')
tar czf "$OUT/sessions.tgz" $folders
tar czf "$OUT/cache.tgz" -C /tmp/upskills-cache .
tail -3 "$OUT/recheck.log"; tail -16 "$OUT/vs_kernelbench.log" 2>/dev/null
ls -la /tmp/smollm2 2>/dev/null
exit 0
