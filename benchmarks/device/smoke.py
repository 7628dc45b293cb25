"""One honest GPU check and one copy record, before a device call's long stages.

Since the thirty-fifth session (2026-12-05) every GPU check's late trial runs Kineto with an
experimental option that keeps each GPU record's metadata (``shadow_ops._with_metadata``), so
that a copy to the host shows its size (``shadow_ops.host_copy_bytes``). Neither had run on a
GPU when it was written. This says in about half a minute whether an honest add still passes a
GPU check there, and whether the device's torch gives a copy record its size, before a
re-check spends ten minutes on checks that would all fail the same way.

Usage: python benchmarks/device/smoke.py OUT.json
Exit 1 when the honest add does not pass (``single.sh`` then skips its later stages).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.verify.conftest import GOOD_ADD, VECTOR_ADD_REF, make_task  # noqa: E402
from upskills.tasks.model import ShapeVariant  # noqa: E402
from upskills.verify import CheckOptions, Verifier, shadow_ops  # noqa: E402


def copy_record() -> dict[str, Any]:
    """Profile a 1 MiB copy to the host as a late trial is profiled; what its record holds."""
    import torch

    x = torch.randn(1 << 18, device="cuda")
    with shadow_ops.shadow_profile(flush="write") as shadow:
        x.cpu()
    copies = [e for e in shadow.events if str(e.name).startswith(shadow_ops.COPY_TO_HOST)]
    fields = {k: repr(v)[:300] for k, v in vars(copies[0]).items()} if copies else {}
    return {
        "torch": torch.__version__,
        "metadata_option": shadow_ops._with_metadata() is not None,  # pyright: ignore[reportPrivateUsage]
        "copy_records": [e.name for e in copies],
        "host_copy_bytes": shadow_ops.host_copy_bytes(shadow.events),
        "expected_bytes": 4 << 18,
        "first_record_fields": {k: fields[k] for k in sorted(fields) if "meta" in k or k == "name"},
    }


def main() -> int:
    out = Path(sys.argv[1])
    task = make_task(
        "t_vector_add",
        VECTOR_ADD_REF,
        [ShapeVariant(name="main", main=True, cpu=False, globals={"N": 1 << 20})],
    )
    start = time.perf_counter()
    with Verifier("cuda", CheckOptions(seeds=1, timeout_s=240, baselines=False)) as verifier:
        verdict = verifier.check(task, GOOD_ADD)
    result: dict[str, Any] = {
        "honest_add_passed": verdict.passed,
        "message": verdict.message,
        "check_s": round(time.perf_counter() - start, 1),
    }
    try:
        result.update(copy_record())
    except Exception as exc:  # noqa: BLE001 - reported, the check's verdict decides the exit
        result["copy_record_error"] = f"{type(exc).__name__}: {exc}"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    sys.exit(main())
