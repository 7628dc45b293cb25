#!/usr/bin/env bash
# One 2-GPU call that does two jobs that must not share a GPU (kind nvidia-h200-x2):
#   GPU 0: a live-corpus round (benchmarks/corpus_live/round.py, WORKERS checks at a time), then,
#          with the time left, upskills' judge next to KernelBench's harness (KB_PROBLEMS problems
#          through KernelBench's eval_kernel_against_ref) -> $OUT/vs_kernelbench.json
#   GPU 1: the GPU test suite (-m gpu): untimed tests with 6 xdist workers, then the tests that
#          need a timed passing verdict one at a time -> $OUT/gpu_tests_1.log
# Usage: bash benchmarks/device/round_tests.sh ROUND_FILE BUDGET_S
# Carry: .whl, .kb, .corpus-cache. Returns sessions.tgz and cache.tgz as corpus_round.sh does.
set -uo pipefail
source benchmarks/device/setup.sh || exit 1
round=$1; budget=${2:-560}
start=$(date +%s)
left() { echo $((budget - $(date +%s) + start - ${1:-0})); }
par=(-n 6); python3 -c "import xdist" 2>/dev/null || par=()
timed=(tests/kernels/test_known_kernels.py::test_good_kernel_passes_on_cuda_and_is_timed
  tests/verify/test_profile.py tests/verify/test_adversarial.py tests/verify/test_gpu.py
  tests/agent/test_gpu.py tests/lift/test_gpu.py tests/distill/test_gpu_distill.py
  tests/verify/test_load_inline.py)
untimed=(tests); for t in "${timed[@]}"; do untimed+=(--deselect "$t"); done
gpu_tests() {
  export CUDA_VISIBLE_DEVICES=1 UPSKILLS_CACHE_DIR=/tmp/cache1 UPSKILLS_KERNEL_REPORT="$OUT/known_kernels.jsonl"
  local s; s=$(left 200)
  timeout -s INT -k 20 "$s" python3 -m pytest -m gpu --run-slow -rfEsp -p no:benchmark -p no:cacheprovider \
    --timeout=120 "${par[@]}" "${untimed[@]}" > "$OUT/gpu_tests_1.log" 2>&1
  echo "pytest exit $? (untimed)" >> "$OUT/gpu_tests_1.log"
  s=$(left 10)
  timeout -s INT -k 20 "$s" python3 -m pytest -m gpu --run-slow -rfEsp -p no:benchmark -p no:cacheprovider \
    -p no:xdist --timeout=150 "${timed[@]}" >> "$OUT/gpu_tests_1.log" 2>&1
  echo "pytest exit $? (timed, one at a time)" >> "$OUT/gpu_tests_1.log"
}
gpu0() {
  export CUDA_VISIBLE_DEVICES=0 UPSKILLS_CACHE_DIR=/tmp/upskills-cache
  mkdir -p "$UPSKILLS_CACHE_DIR"; [ -d .corpus-cache ] && cp -n .corpus-cache/* "$UPSKILLS_CACHE_DIR/" 2>/dev/null
  timeout "$(left 200)" python3 benchmarks/corpus_live/round.py "$round" --out "$OUT" --workers "${WORKERS:-2}"
  echo "round exit $?"
  local s; s=$(left 15)
  [ "$s" -gt 90 ] && timeout -k 10 "$s" python3 benchmarks/verifier_vs_kernelbench.py --kernelbench .kb \
    --out "$OUT/vs_kernelbench.json" --kb-problems "${KB_PROBLEMS:-3}" > "$OUT/vs_kernelbench.log" 2>&1
  echo "vs_kernelbench exit $?" >> "$OUT/vs_kernelbench.log"
}
gpu_tests & gpu0; wait
folders=$(grep -v '^\s*#' "$round" | awk 'NF {print $1}')
tar czf "$OUT/sessions.tgz" $folders
tar czf "$OUT/cache.tgz" -C /tmp/upskills-cache .
grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)|pytest exit" "$OUT/gpu_tests_1.log"
tail -16 "$OUT/vs_kernelbench.log" 2>/dev/null
exit 0
