"""Which shared objects under some folders import dlopen/dlsym or a denied vendor symbol?

A survey for the vendor-library guard: Triton builds small helper objects (``cuda_utils.so``,
kernel launchers) in its cache, and a rule that denies ``dlopen``/``dlsym`` in candidate-made
objects must know whether those helpers import them.

Usage: python benchmarks/verifier_v2/so_imports.py DIR [DIR ...] > so_imports.txt
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from upskills.verify.libraries import DENIED, undefined_symbols  # noqa: E402

LOADER = re.compile(r"^(dlopen|dlsym|dlvsym|dlmopen)$")


def main(folders: list[str]) -> None:
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in sorted(files):
                if not name.endswith(".so"):
                    continue
                path = os.path.join(root, name)
                names = undefined_symbols(Path(path).read_bytes())
                hits = sorted(n for n in names if LOADER.match(n) or DENIED.match(n))
                print(f"{path}\t{len(names)} imports\t{' '.join(hits) or '-'}")


if __name__ == "__main__":
    main(sys.argv[1:])
