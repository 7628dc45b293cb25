#!/usr/bin/env bash
# GPU call (2-GPU host): a lift evaluation with the local executor on 1 GPU and with Ray on both
# GPUs, verdicts/min of each, JSON under $OUT. Ray comes as a wheel in two parts (it is over the
# 64 MiB carry limit), made here by benchmarks/device/ray_wheel_parts.sh:
#   call 1 (carry [".raywheel/part1"]):                 bash benchmarks/device/ray_eval.sh stage
#   call 2 (carry [".raywheel/part2"] and ".whl" if made): bash benchmarks/device/ray_eval.sh 540
# Each call copies the parts it carries to /tmp/raywheel/ (kept while the machine stays warm);
# call 2 concatenates them, checks the sha256 in benchmarks/device/ray_wheel.sha256, installs Ray
# into /tmp/site, then runs. Usage: ray_eval.sh stage | ray_eval.sh BUDGET_S [RUN_DIR] [COPIES]
set -uo pipefail
mkdir -p /tmp/raywheel
cp -v .raywheel/part*/*.part-* /tmp/raywheel/ 2>/dev/null
cp -v .raywheel/part2/deps/*.whl /tmp/raywheel/ 2>/dev/null
[ "${1:-}" = stage ] && { ls -la /tmp/raywheel; exit 0; }
budget=${1:-540}; run=${2:-reports/smollm2-135m-lift}; copies=${3:-1}
read -r sum name < benchmarks/device/ray_wheel.sha256
if [ ! -f "/tmp/raywheel/$name" ]; then
  cat /tmp/raywheel/"$name".part-* > "/tmp/raywheel/$name" || exit 1
fi
echo "$sum  /tmp/raywheel/$name" | sha256sum -c - || { echo "ray wheel parts missing or corrupt"; ls -la /tmp/raywheel; exit 1; }
export OUT=${OUT:-/tmp/upskills-out}; mkdir -p "$OUT"
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site \
  "/tmp/raywheel/$name" /tmp/raywheel/*.whl 2>&1 | grep -v "^$" | tail -3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 RAY_USAGE_STATS_ENABLED=0
{ nvidia-smi -L; python3 -c 'import sys, torch, triton, ray, pydantic; print(sys.version); print("torch", torch.__version__, "triton", triton.__version__, "ray", ray.__version__, "pydantic", pydantic.VERSION, "gpus", torch.cuda.device_count())'; python3 -m pip list 2>/dev/null | grep -i -E "^(protobuf|msgpack|grpcio|jsonschema|click|filelock) "; } | tee "$OUT/env.txt"
bench() { timeout $((budget / 3)) python3 benchmarks/executor_bench.py "$@" 2>&1 | grep -v -E "^\s*$|INFO|WARNING"; }
start=$(date +%s)
bench lift "$run" --device cuda --executor local --workers 1 --out "$OUT/lift_local_1gpu.json"
bench lift "$run" --device cuda --executor ray --workers 2 --out "$OUT/lift_ray_2gpu.json"
left=$((budget - ($(date +%s) - start) - 30))
if [ "$left" -gt 120 ]; then  # known kernels: realistic per-verdict cost (compile + timing)
  budget=$((left * 3 / 2))
  bench kernels --copies "$copies" --device cuda --executor local --workers 1 --out "$OUT/kernels_local_1gpu.json"
  bench kernels --copies "$copies" --device cuda --executor ray --workers 2 --out "$OUT/kernels_ray_2gpu.json"
fi
python3 - "$OUT" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
rows = {p.stem: json.loads(p.read_text()) for p in sorted(out.glob("*_[12]gpu.json"))}
for name, r in rows.items():
    rate = r.get("units_per_min_after_start", r.get("steady_per_min"))
    print(f"{name}: wall {r.get('wall_s')} s, start {r.get('executor_start_s')} s, "
          f"per_min {r.get('units_per_min', r.get('per_min'))}, after start/steady {rate}")
for kind in ("lift", "kernels"):
    a, b = rows.get(f"{kind}_local_1gpu"), rows.get(f"{kind}_ray_2gpu")
    if a and b:
        print(f"{kind}: verdicts identical local vs ray: {a['outcomes'] == b['outcomes']}")
PY
