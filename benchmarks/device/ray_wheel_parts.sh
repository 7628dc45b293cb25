#!/usr/bin/env bash
# Dev machine: download the Python 3.12 Ray wheel (and the few of its dependencies the GPU image
# lacks) and split it into parts small enough to carry (64 MiB a call) into .raywheel/ (ignored):
#   .raywheel/part1/<wheel>.part-aa          carried with call 1
#   .raywheel/part2/<wheel>.part-ab + deps/  carried with call 2
# benchmarks/device/ray_wheel.sha256 (committed) lets the device check the reassembled wheel.
set -euo pipefail
cd "$(dirname "$0")/../.."
RAY_VERSION=${RAY_VERSION:-2.60.0}
rm -rf .raywheel && mkdir -p .raywheel/dl .raywheel/part1 .raywheel/part2/deps
dl() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$1" "${@:2}"
}
dl .raywheel/dl "ray==$RAY_VERSION"
# Ray's Requires-Dist: click filelock jsonschema msgpack packaging protobuf pyyaml requests.
# The GPU image has all but jsonschema (and its own dependencies).
dl .raywheel/part2/deps jsonschema jsonschema-specifications referencing rpds-py attrs
wheel=$(ls .raywheel/dl/ray-*.whl)
name=$(basename "$wheel")
(cd .raywheel/dl && sha256sum "$name") > benchmarks/device/ray_wheel.sha256
split -b 40M "$wheel" ".raywheel/dl/$name.part-"
mv ".raywheel/dl/$name.part-aa" .raywheel/part1/
mv ".raywheel/dl/$name.part-ab" .raywheel/part2/
rm -rf .raywheel/dl
du -sh .raywheel/part1 .raywheel/part2
cat benchmarks/device/ray_wheel.sha256
