"""The 40_LayerNorm wait probe (benchmarks/corpus_live/ln_wait_probe.py): the stamps go into the
shipped final kernel's source at its anchors, a kernel without them is refused, and the per-row
analysis reads stamps as the stamped kernel writes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "corpus_live"))


def _final_source() -> str:
    from upskills.trace import read_trace

    end = read_trace(ROOT / "traces/corpus-live/kb1_40_layernorm-s21/trace.jsonl").end
    assert end is not None and end.best_kernel_source
    return end.best_kernel_source


def test_the_stamps_go_into_the_final_kernel_and_it_is_built_under_its_own_name():
    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    source = _final_source()
    out = probe.transform(source)
    # its definition, the prologue, S(r)'s start, a warp's sums done, the publish, the merge's two
    assert out.count("probe_now()") == 7
    assert out.count("*probe_warp_at(") == 2  # per warp: S(r) begun, its sums done
    assert 'name="probe_corpus_kb40' in out
    assert 'functions=["probe_read", "probe_reset", "layer_norm_resident"]' in out
    assert "__device__ unsigned long long g_stamp[" in out
    compile(out, "stamped.py", "exec")  # still a Python module
    # nothing of the kernel's own code was lost: every line but load_inline's three renamed
    # arguments is still there, in order
    renamed = ("name=", "cpp_sources=", "functions=")
    kept = iter(out.splitlines())
    lines = [line for line in source.splitlines() if not line.strip().startswith(renamed)]
    assert all(any(line == o for o in kept) for line in lines)


def test_the_stamps_go_into_s26s_pass_where_s_of_row_r_plus_2_begins():
    """s26 (thirty-sixth session) runs S(0) and S(1) in row_stats and S(r + 2) inside row_pass:
    the S-start stamp goes into both, the second only where row r + 2 exists; its publish
    has no ``tid``, so the stamps there read threadIdx.x."""
    import json

    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    state = ROOT / "traces/corpus-live/kb1_40_layernorm-s26/state.json"
    source = json.loads(state.read_text())["current_source"]
    out = probe.transform(source)
    # the definition, the prologue, two S(r) starts, a warp's sums done, the publish, the merge's
    assert out.count("probe_now()") == 8
    assert "if (more && (threadIdx.x & 31) == 0 && g_part0 != nullptr)" in out
    assert "const long long w = (part + (int64_t)rn * H + blockIdx.x) - g_part0;" in out
    compile(out, "stamped.py", "exec")
    with pytest.raises(probe.ProbeError, match="Kn"):  # s26 without its pass's anchor
        probe.transform(source.replace("const float Kn = more", "const float Kn  = more"))


def test_a_kernel_without_the_anchors_is_refused():
    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    source = _final_source().replace(
        "st_word(part_rj, a, q, parity);", "st_word(part_rj, q, a, parity);"
    )
    with pytest.raises(probe.ProbeError, match="st_word"):
        probe.transform(source)


def test_the_rows_are_read_from_the_stamps():
    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    ctas, rows = 3, 2
    stamps = [0] * (probe.CTAS_MAX * probe.ROWS_MAX * probe.FIELDS + 2 * probe.CTAS_MAX)
    base = probe.CTAS_MAX * probe.ROWS_MAX * probe.FIELDS
    for j, (start, sm) in enumerate([(1000, 5), (1500, 5), (2000, 7)]):
        stamps[base + 2 * j], stamps[base + 2 * j + 1] = start, sm

    def put(j: int, r: int, wait0: int, wait1: int, pub: int, s0: int) -> None:
        at = (j * probe.ROWS_MAX + r) * probe.FIELDS
        stamps[at], stamps[at + 1], stamps[at + 2], stamps[at + 3] = wait0, wait1, pub, s0

    # row 0: CTA 1 publishes last at 9000; row 1: CTA 2 at 20000; waits of 1, 2, 3 and 4, 4, 4 us.
    # S passes: row 0 begun at 2000, 3000, 2500 (CTA 1 0.5 us behind the median) and 3, 6, 4.5 us
    # long; row 1 begun at 11000, 11500, 11000 and 4, 4.5, 9 us long (CTA 2 slow, not late)
    put(0, 0, 8000, 9000 + 1000, 5000, 2000)
    put(1, 0, 8000, 10000 + 0, 9000, 3000)
    put(2, 0, 9000, 12000, 7000, 2500)
    put(0, 1, 17000, 21000, 15000, 11000)
    put(1, 1, 17000, 21000, 16000, 11500)
    put(2, 1, 18000, 22000, 20000, 11000)
    got = probe.analyse(stamps, ctas, rows)
    # a state sized for more CTAs than the grid had (s24's 288 words a row): the same reading
    assert probe.analyse(stamps, probe.CTAS_MAX, rows) == got
    assert got["prologue_spread_us"] == 1.0
    assert got["resolution_us"] == 0.5  # the smallest step between two stamps (1000 -> 1500)
    assert (got["sms_with_two_ctas"], got["sms_with_one_cta"]) == (1, 1)
    r0, r1 = got["per_row"]
    assert (r0["last_cta"], r0["last_sm"], r0["last_sm_ctas"]) == (1, 5, 2)
    assert (r0["last_publish_us"], r0["wait_median_us"], r0["wait_max_us"]) == (8.0, 2.0, 3.0)
    assert r0["lag_to_first_end_us"] == 1.0 and r0["period_us"] is None
    assert (r1["last_cta"], r1["last_sm"], r1["last_sm_ctas"]) == (2, 7, 1)
    assert r1["period_us"] == 11.0 and r1["wait_median_us"] == 4.0
    assert (r0["last_s_start_behind_us"], r0["last_s_us"], r0["s_median_us"]) == (0.5, 6.0, 4.5)
    assert (r1["last_s_start_behind_us"], r1["last_s_us"], r1["s_median_us"]) == (0.0, 9.0, 4.5)
    # CTAs by their median S pass over the rows: 2 (6.75 us), 1 (5.25), 0 (3.5)
    assert [(c["cta"], c["sm"], c["s_median_us"]) for c in got["slowest_s"]] == [
        (2, 7, 6.75),
        (1, 5, 5.25),
        (0, 5, 3.5),
    ]


def test_each_warps_s_pass_is_read_for_the_last_publisher_and_the_median_cta():
    """A CTA whose S(r) took long: its warps began far apart, or a warp's reads took long."""
    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    stamps = [0] * probe.TOTAL
    base = probe.CTAS_MAX * probe.ROWS_MAX * probe.FIELDS
    for j in range(3):  # prologue stamps: CTAs 0-2 ran, each alone on its SM
        stamps[base + 2 * j], stamps[base + 2 * j + 1] = 1000, j

    def warp(j: int, w: int, begun: int, done: int) -> None:
        at = probe.WARP_BASE + ((j * probe.ROWS_MAX + 0) * probe.WARPS_MAX + w) * 2
        stamps[at], stamps[at + 1] = begun, done

    # row 0: CTA 2 publishes last; its warps began 4 us apart, each took 2 us; CTAs 0 and 1:
    # warps 1 us apart, CTA 0's longest warp 3 us, CTA 1's 2 us
    for j, pub in ((0, 9000), (1, 9500), (2, 12000)):
        stamps[(j * probe.ROWS_MAX) * probe.FIELDS + 2] = pub
    warp(2, 0, 5000, 7000)
    warp(2, 7, 9000, 11000)
    warp(0, 0, 5000, 8000)
    warp(0, 3, 6000, 7000)
    warp(1, 0, 5000, 7000)
    warp(1, 1, 6000, 8000)
    (row,) = probe.analyse(stamps, 3, 1)["per_row"]
    assert row["last_cta"] == 2
    assert (row["last_warps_apart_us"], row["last_warp_s_us"]) == (4.0, 2.0)
    assert (row["warps_apart_median_us"], row["warp_s_median_us"]) == (1.0, 2.0)


def test_the_stragglers_of_each_call_are_counted_by_cta_and_by_sm():
    import ln_wait_probe as probe  # pyright: ignore[reportMissingImports]

    def call(*last: tuple[int, int]) -> dict:
        return {"per_row": [{"last_cta": j, "last_sm": sm} for j, sm in last]}

    # call 1: CTA 10 on SM 126 last in two rows of three; call 2: CTA 10 again, on SM 4
    got = probe.stragglers([call((10, 126), (198, 104), (10, 126)), call((10, 4), (10, 4))])
    assert got[0]["last_cta_rows"] == {10: 2, 198: 1}
    assert list(got[0]["last_cta_rows"]) == [10, 198]  # most rows first
    assert got[0]["last_sm_rows"] == {126: 2, 104: 1}
    assert got[0]["cta_sm"] == [(10, 126), (198, 104)]
    assert got[1] == {
        "last_cta_rows": {10: 2},
        "last_sm_rows": {4: 2},
        "cta_sm": [(10, 4)],
        "slowest_s": [],
    }
