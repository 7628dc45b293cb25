# Source this on the GPU machine from the repo root: installs the carried wheels (.whl/, made by
# .ci/device-wheels.sh on the dev machine) into /tmp/site and puts them and the repo on PYTHONPATH.
# Two scripts of one call sourcing this at once must not install into /tmp/site together (pip's
# --target replaces folders: the second install failed mid-way on the H200): one at a time.
exec 9>/tmp/upskills-setup.lock && flock 9
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || { flock -u 9; return 1; }
flock -u 9
export PYTHONPATH=/tmp/site:$PWD
export PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1
export OUT=${OUT:-/tmp/upskills-out}
mkdir -p "$OUT"
{ nvidia-smi; python3 -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, "triton", triton.__version__, "gpus", torch.cuda.device_count(), torch.cuda.get_device_name(0))'; } > "$OUT/env.txt" 2>&1
