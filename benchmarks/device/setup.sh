# Source this on the GPU machine from the repo root: installs the carried wheels (.whl/, made by
# .ci/device-wheels.sh on the dev machine) into /tmp/site and puts them and the repo on PYTHONPATH.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1
export OUT=${OUT:-/tmp/upskills-out}
mkdir -p "$OUT"
{ nvidia-smi; python3 -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count(), torch.cuda.get_device_name(0))'; } > "$OUT/env.txt" 2>&1
