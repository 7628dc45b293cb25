"""Where 40_LayerNorm's resident kernel waits: per CTA and row, a diagnostic build of it.

Rounds 24-32 took 40_LayerNorm from 63.9% to 74.9% of copy bandwidth by shortening the row's
sync path, and ruled out hiding latency under the wait (``docs/design/corpus.md``). The profile
tool cannot say which CTAs wait at the top of N(r), for how long, or which CTA's partial each
row waits for. This builds the session's final kernel again with ``%globaltimer`` stamps (it is
not a candidate, and nothing it measures goes into a trace or a report):

- per CTA: when it passed its prologue (weight and bias requested), and its SM;
- per CTA and row: when the CTA's partial of the row was stored (its last warp's publish), and,
  in the warp that claims the row, when the wait for the row's statistics began and ended;
- per CTA and row: when its first warp began the row's statistics pass S(r) (its DRAM reads),
  so a late partial can be told apart: a CTA that began S(r) late (held up before it) or one
  whose S(r) took long (its reads were slow);
- per CTA, row and warp: when the warp began S(r) and when its sums were done (its lane 0's
  first add to the CTA's slot), so a CTA whose S(r) took long can be told apart again: its
  warps began S(r) far apart (some still in N(r - 1): s12 took the block barrier out), or each
  warp's reads took long (twenty-seventh session, after the second run found the straggler
  slow, not late).

It times the stamped build beside the unchanged one (CUDA events, alternating calls) so the
stamps' own cost is known, then prints per row: the last partial's publish (which CTA and SM),
the claimers' wait (median, p90, max), the lag from the last publish to the first wait's end,
and the period between rows (two rows' last publishes), and for the last publisher how far
behind the median CTA it began S(r) and how long its S(r) took against the median CTA's; and
the CTAs whose S passes were slowest over all rows, with their SMs. It reads ``--calls``
stamped calls (3) and prints, per call, which CTAs and SMs published rows last: a CTA that is
last on another SM says a place in the grid is slow, an SM that is last under another CTA says
the SM is.

The stamps are put in by text edits at five anchors of the kernel's source (six for s26, whose
S(r + 2) begins inside its pass for row r, after that row's wait); a kernel without them is
refused with the anchor that is missing (``transform``). ``%globaltimer`` may tick
coarsely (about 1 us on some GPUs): the smallest step between any two stamps is printed as the
resolution, and differences below it mean nothing.

Usage: python benchmarks/corpus_live/ln_wait_probe.py [--session DIR] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_SESSION = "traces/corpus-live/kb1_40_layernorm-s21"
ROWS_MAX = 64
CTAS_MAX = 288  # s24 sizes its grid by the resident slots: 264 CTAs on the H200
FIELDS = 4  # per CTA and row: wait start, wait end, publish, S(r) start
WARPS_MAX = 8  # warps per CTA stamped (s21's 256 threads)
WARP_BASE = CTAS_MAX * ROWS_MAX * FIELDS + 2 * CTAS_MAX
"""Where the per-warp stamps begin: per CTA, row and warp, S(r)'s start and the warp's sums done."""
TOTAL = WARP_BASE + CTAS_MAX * ROWS_MAX * WARPS_MAX * 2

_DEVICE = f"""
__device__ unsigned long long g_stamp[{TOTAL}];
__device__ unsigned long long* g_part0;
__device__ __forceinline__ unsigned long long probe_now() {{
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}}
__device__ __forceinline__ unsigned long long* probe_at(int cta, int row, int field) {{
  return g_stamp + ((size_t)cta * {ROWS_MAX} + row) * {FIELDS} + field;
}}
__device__ __forceinline__ unsigned long long* probe_warp_at(int cta, int row, int warp, int k) {{
  return g_stamp + {WARP_BASE} + (((size_t)cta * {ROWS_MAX} + row) * {WARPS_MAX} + warp) * 2 + k;
}}
"""

_HOST = f"""
torch::Tensor probe_read() {{
  auto out = torch::empty({{(int64_t){TOTAL}}},
                          torch::dtype(torch::kInt64));
  C10_CUDA_CHECK(cudaMemcpyFromSymbol(out.data_ptr(), g_stamp, sizeof(g_stamp)));
  return out;
}}
void probe_reset(torch::Tensor part) {{
  unsigned long long* p = reinterpret_cast<unsigned long long*>(part.data_ptr());
  C10_CUDA_CHECK(cudaMemcpyToSymbol(g_part0, &p, sizeof(p)));
  void* stamps = nullptr;
  C10_CUDA_CHECK(cudaGetSymbolAddress(&stamps, g_stamp));
  C10_CUDA_CHECK(cudaMemset(stamps, 0, sizeof(g_stamp)));
  C10_CUDA_CHECK(cudaDeviceSynchronize());
}}
"""

# (anchor, text put after it): each anchor must occur exactly once in the kernel's source
_EDITS: list[tuple[str, str]] = [
    ("// KERNEL_BEGIN\n", _DEVICE),
    (
        "  // From here on no block barrier: each warp goes through the rows at its own pace.\n",
        f"  if (tid == 0) {{\n"
        f"    unsigned sm;\n"
        f'    asm volatile("mov.u32 %0, %smid;" : "=r"(sm));\n'
        f"    g_stamp[{CTAS_MAX} * {ROWS_MAX} * {FIELDS} + 2 * j] = probe_now();\n"
        f"    g_stamp[{CTAS_MAX} * {ROWS_MAX} * {FIELDS} + 2 * j + 1] = sm;\n"
        f"  }}\n",
    ),
    (
        "    atomicAdd(&slot->s1, s1);\n",  # lane 0: this warp's sums are done
        # threadIdx.x, not tid: s26's publish() has no tid
        "    if (g_part0 != nullptr) {\n"
        "      const long long w = part_rj - g_part0;\n"
        "      const int pw = threadIdx.x >> 5;\n"
        f"      if (w >= 0 && w < (long long){ROWS_MAX} * gridDim.x && pw < {WARPS_MAX})\n"
        "        *probe_warp_at((int)(w % gridDim.x), (int)(w / gridDim.x), pw, 1) = probe_now();\n"
        "    }\n",
    ),
    (
        "      st_word(part_rj, a, q, parity);\n",
        # g_part0 is null until probe_reset: no stamp then (the difference from a null pointer
        # overflowed int and stamped out of bounds on the H200, twenty-fifth session)
        "      if (g_part0 != nullptr) {\n"
        "        const long long w = part_rj - g_part0;\n"
        f"        if (w >= 0 && w < (long long){ROWS_MAX} * gridDim.x)\n"
        "          *probe_at((int)(w % gridDim.x), (int)(w / gridDim.x), 2) = probe_now();\n"
        "      }\n",
    ),
]


def _s_start(word: str, when: str = "") -> str:
    """The stamps of S(r)'s start (its first warp's, and each warp's) for the row whose partial
    word is ``word``; ``when``: a condition the row's S runs under."""
    return (
        f"  if ({when}(threadIdx.x & 31) == 0 && g_part0 != nullptr) {{\n"
        f"    const long long w = ({word}) - g_part0;\n"
        f"    if (w >= 0 && w < (long long){ROWS_MAX} * gridDim.x && (threadIdx.x >> 5) < "
        f"{WARPS_MAX}) {{\n"
        "      const unsigned long long t = probe_now();\n"
        "      const int pc = (int)(w % gridDim.x), pr = (int)(w / gridDim.x);\n"
        "      if (threadIdx.x == 0) *probe_at(pc, pr, 3) = t;\n"
        "      *probe_warp_at(pc, pr, threadIdx.x >> 5, 0) = t;\n"
        "    }\n"
        "  }\n"
    )


# S(r) begins: row_stats' first line (s21 and the kernels before s26)
_S_START = [("  float s1 = 0.f, s2 = 0.f;\n", _s_start("part_rj"))]
# s26 (thirty-sixth session) runs S(0) and S(1) in row_stats and S(r + 2) inside row_pass(r),
# after row r's wait: there S(r + 2)'s start is the pass's
_S_START_PASS = [
    ("  const int tid = threadIdx.x;\n  float s1 = 0.f, s2 = 0.f;\n", _s_start("part_rj")),
    (
        "  const float Kn = more ? __ldcg(xn) : 0.f;\n  float s1 = 0.f, s2 = 0.f;\n",
        _s_start("part + (int64_t)rn * H + blockIdx.x", "more && "),
    ),
]

# the claimer's merge, wrapped in two stamps (a replacement, not an insertion)
_MERGE = "    const float2 ms = row_moments(part_r, parity, H, d, K, eps);\n"
_MERGE_STAMPED = (
    "    const unsigned long long probe_t0 = probe_now();\n"
    + _MERGE
    + f"    if (lane == 0 && r < {ROWS_MAX}) {{\n"
    "      *probe_at(blockIdx.x, r, 0) = probe_t0;\n"
    "      *probe_at(blockIdx.x, r, 1) = probe_now();\n"
    "    }\n"
)


class ProbeError(ValueError):
    """The kernel's source lacks an anchor the stamps are put in at."""


def transform(source: str) -> str:
    """The candidate module's source with the stamps and the two probe functions added, built
    under its own extension name (so it never shares a build with the unchanged kernel)."""
    out = source
    for anchor, text in [*_EDITS, *(_S_START_PASS if "row_pass(" in source else _S_START)]:
        if out.count(anchor) != 1:
            found = out.count(anchor)
            raise ProbeError(f"anchor found {found} times, not once: {anchor.strip()!r}")
        out = out.replace(anchor, anchor + text)
    if out.count(_MERGE) != 1:
        raise ProbeError(f"anchor found {out.count(_MERGE)} times, not once: {_MERGE.strip()!r}")
    out = out.replace(_MERGE, _MERGE_STAMPED)
    end = '"""\n\n_ext = load_inline('
    if out.count(end) != 1:
        raise ProbeError("the CUDA source's end before `_ext = load_inline(` was not found")
    out = out.replace(end, _HOST + end)
    for old, new in [
        ('name="', 'name="probe_'),
        (
            'cpp_sources="',
            'cpp_sources="torch::Tensor probe_read(); void probe_reset(torch::Tensor); ',
        ),
        ('functions=["', 'functions=["probe_read", "probe_reset", "'),
    ]:
        if out.count(old) != 1:
            raise ProbeError(f"load_inline argument not found once: {old!r}")
        out = out.replace(old, new)
    return out


def analyse(stamps: list[int], ctas: int, rows: int) -> dict[str, Any]:
    """Per row: the last publish and its CTA and SM, the claimers' waits, the lag and the period
    (microseconds from the first CTA's prologue)."""
    base = CTAS_MAX * ROWS_MAX * FIELDS
    starts = [stamps[base + 2 * j] for j in range(min(ctas, CTAS_MAX))]
    while starts and not starts[-1]:  # ``ctas`` may be what the state is sized for (s24: 288
        starts.pop()  # words a row) where the grid was smaller: only CTAs that ran stamp
    ctas = len(starts)
    sms = [stamps[base + 2 * j + 1] for j in range(ctas)]
    t0 = min(starts)
    per_sm: dict[int, int] = {}
    for sm in sms:
        per_sm[sm] = per_sm.get(sm, 0) + 1

    def at(j: int, r: int, f: int) -> int:
        return stamps[(j * ROWS_MAX + r) * FIELDS + f]

    def warps(j: int, r: int) -> tuple[float, float] | None:
        """CTA j's warps on row r: how far apart they began S(r), and the longest warp's S(r)
        (us); None where the stamps lack them (an older build's, or a row a warp skipped)."""
        if len(stamps) < TOTAL:
            return None
        base_jr = WARP_BASE + (j * ROWS_MAX + r) * WARPS_MAX * 2
        pairs = [(stamps[base_jr + 2 * w], stamps[base_jr + 2 * w + 1]) for w in range(WARPS_MAX)]
        pairs = [(a, b) for a, b in pairs if a and b >= a]
        if not pairs:
            return None
        begun = [a for a, _ in pairs]
        return (max(begun) - min(begun)) / 1000.0, max(b - a for a, b in pairs) / 1000.0

    out_rows: list[dict[str, Any]] = []
    s_times: dict[int, list[float]] = {}  # per CTA: its S passes' durations (us), row by row
    last_pub_prev: float | None = None
    for r in range(min(rows, ROWS_MAX)):
        pubs = [(at(j, r, 2), j) for j in range(ctas)]
        last_t, last_j = max(pubs)
        first_t = min(t for t, _ in pubs)
        waits = [(at(j, r, 1) - at(j, r, 0)) / 1000.0 for j in range(ctas) if at(j, r, 1)]
        ends = [at(j, r, 1) for j in range(ctas) if at(j, r, 1)]
        ordered = sorted(waits)
        s_start = {j: at(j, r, 3) for j in range(ctas) if at(j, r, 3)}
        s_us = {j: (at(j, r, 2) - t) / 1000.0 for j, t in s_start.items() if at(j, r, 2) > t}
        for j, us in s_us.items():
            s_times.setdefault(j, []).append(us)
        row = {
            "row": r,
            "first_publish_us": round((first_t - t0) / 1000.0, 3),
            "last_publish_us": round((last_t - t0) / 1000.0, 3),
            "last_cta": last_j,
            "last_sm": sms[last_j],
            "last_sm_ctas": per_sm[sms[last_j]],
            "claimers": len(waits),
            "wait_median_us": round(statistics.median(ordered), 3) if ordered else None,
            "wait_p90_us": round(ordered[int(0.9 * (len(ordered) - 1))], 3) if ordered else None,
            "wait_max_us": round(ordered[-1], 3) if ordered else None,
            "lag_to_first_end_us": round((min(ends) - last_t) / 1000.0, 3) if ends else None,
            "period_us": None
            if last_pub_prev is None
            else round((last_t - last_pub_prev) / 1000.0, 3),
            "last_s_start_behind_us": round(
                (s_start[last_j] - statistics.median(s_start.values())) / 1000.0, 3
            )
            if last_j in s_start
            else None,
            "last_s_us": round(s_us[last_j], 3) if last_j in s_us else None,
            "s_median_us": round(statistics.median(s_us.values()), 3) if s_us else None,
        }
        by_cta = {j: w for j in range(ctas) if (w := warps(j, r)) is not None}
        if by_cta:
            last_w = by_cta.get(last_j)
            row.update(
                {
                    "last_warps_apart_us": round(last_w[0], 3) if last_w else None,
                    "last_warp_s_us": round(last_w[1], 3) if last_w else None,
                    "warps_apart_median_us": round(
                        statistics.median(w[0] for w in by_cta.values()), 3
                    ),
                    "warp_s_median_us": round(statistics.median(w[1] for w in by_cta.values()), 3),
                }
            )
        last_pub_prev = last_t
        out_rows.append(row)
    seen = sorted({t for t in stamps[: ctas * ROWS_MAX * FIELDS] if t} | set(starts))
    steps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    return {
        "ctas": ctas,
        "rows": rows,
        "resolution_us": round(min(steps) / 1000.0, 3) if steps else None,
        "prologue_spread_us": round((max(starts) - t0) / 1000.0, 3),
        "sms_with_two_ctas": sum(1 for n in per_sm.values() if n == 2),
        "sms_with_one_cta": sum(1 for n in per_sm.values() if n == 1),
        "per_row": out_rows,
        "slowest_s": [
            {"cta": j, "sm": sms[j], "sm_ctas": per_sm[sms[j]], "s_median_us": round(m, 3)}
            for m, j in sorted(
                ((statistics.median(v), j) for j, v in s_times.items()), reverse=True
            )[:8]
        ],
    }


def stragglers(analyses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stamped call, how many rows each CTA and each SM published last: the same CTA on
    another SM says a place in the grid is slow, the same SM under another CTA says the SM is."""
    out = []
    for a in analyses:
        ctas: dict[int, int] = {}
        sms: dict[int, int] = {}
        for row in a["per_row"]:
            ctas[row["last_cta"]] = ctas.get(row["last_cta"], 0) + 1
            sms[row["last_sm"]] = sms.get(row["last_sm"], 0) + 1
        pairs = {(row["last_cta"], row["last_sm"]) for row in a["per_row"]}
        out.append(
            {
                "last_cta_rows": dict(sorted(ctas.items(), key=lambda kv: -kv[1])),
                "last_sm_rows": dict(sorted(sms.items(), key=lambda kv: -kv[1])),
                "cta_sm": sorted(pairs),
                "slowest_s": a.get("slowest_s", [])[:3],
            }
        )
    return out


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(session: Path, reps: int = 20, calls: int = 3) -> dict[str, Any]:
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from upskills.trace import read_trace

    end = read_trace(session / "trace.jsonl").end
    if end is None or not end.best_kernel_source:
        raise SystemExit(f"{session}: no final kernel in the trace")
    source = end.best_kernel_source
    work = Path(tempfile.mkdtemp(prefix="ln-wait-probe-"))
    (work / "plain.py").write_text(source, encoding="utf-8")
    (work / "stamped.py").write_text(transform(source), encoding="utf-8")
    plain, stamped = _load(work / "plain.py", "ln_plain"), _load(work / "stamped.py", "ln_stamped")

    # KernelBench 40_LayerNorm's shape: batch 16 of (64, 256, 256), normalized over the last three
    shape = (64, 256, 256)
    x = torch.randn(16, *shape, device="cuda")
    weight = torch.randn(shape, device="cuda")
    bias = torch.randn(shape, device="cuda")
    models = {}
    for label, mod in (("plain", plain), ("stamped", stamped)):
        m = mod.ModelNew(shape).cuda()
        with torch.no_grad():
            m.ln.weight.copy_(weight)
            m.ln.bias.copy_(bias)
        models[label] = m
    ref = torch.nn.functional.layer_norm(x, shape, weight, bias)
    for label, m in models.items():  # warm, and both must still compute the layer norm
        y = m(x)
        torch.cuda.synchronize()
        err = (y - ref).abs().max().item()
        if err > 1e-3:
            raise SystemExit(f"the {label} build's output is off by {err}: it probes nothing")
    [(key, state)] = [(k, v) for k, v in stamped._STATE.items()]  # made by the first call
    rows, ctas = key[1], key[2]
    stamped._ext.probe_reset(state.part)  # from here on every stamp is written, timed ones too
    times: dict[str, list[float]] = {"plain": [], "stamped": []}
    for _ in range(reps):  # alternating, side by side
        for label, m in models.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            m(x)
            b.record()
            torch.cuda.synchronize()
            times[label].append(a.elapsed_time(b))
    analyses = []
    for _ in range(max(1, calls)):  # each call's CTAs may land on other SMs
        stamped._ext.probe_reset(state.part)
        models["stamped"](x)
        torch.cuda.synchronize()
        analyses.append(analyse(stamped._ext.probe_read().tolist(), ctas, rows))
    result = analyses[0]
    result["stragglers"] = stragglers(analyses)
    result["session"] = str(session)
    result["gpu"] = torch.cuda.get_device_name()
    result["median_ms"] = {k: round(statistics.median(v), 4) for k, v in times.items()}
    return result


def print_table(result: dict[str, Any]) -> None:
    print(
        f"{result['session']} on {result['gpu']}: {result['ctas']} CTAs, {result['rows']} rows; "
        f"median {result['median_ms']['plain']} ms plain, "
        f"{result['median_ms']['stamped']} ms stamped; "
        f"timer resolution {result['resolution_us']} us; "
        f"prologue spread {result['prologue_spread_us']} us; SMs with 2 CTAs "
        f"{result['sms_with_two_ctas']}, with 1 {result['sms_with_one_cta']}"
    )
    cols = [
        "row", "first_publish_us", "last_publish_us", "last_cta", "last_sm", "last_sm_ctas",
        "wait_median_us", "wait_p90_us", "wait_max_us", "lag_to_first_end_us", "period_us",
        "last_s_start_behind_us", "last_s_us", "s_median_us", "last_warps_apart_us",
        "last_warp_s_us", "warps_apart_median_us", "warp_s_median_us",
    ]  # fmt: skip
    print("  ".join(cols))
    for row in result["per_row"]:
        print("  ".join(str(row.get(c)) for c in cols))
    slow = ", ".join(
        f"CTA {c['cta']} on SM {c['sm']} ({c['sm_ctas']} CTAs) {c['s_median_us']} us"
        for c in result.get("slowest_s", [])
    )
    print(f"slowest S passes (median over rows): {slow}")
    for i, call in enumerate(result.get("stragglers", [])):
        pairs = ", ".join(f"CTA {j} on SM {sm}" for j, sm in call["cta_sm"])
        slow = ", ".join(f"CTA {c['cta']} on SM {c['sm']}" for c in call.get("slowest_s", []))
        print(
            f"stamped call {i + 1}: last publishers (rows each) by CTA {call['last_cta_rows']}, "
            f"by SM {call['last_sm_rows']}; {pairs}; slowest S passes: {slow}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", type=Path, default=Path(DEFAULT_SESSION))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=3, help="stamped calls read (stragglers)")
    args = parser.parse_args(argv)
    result = run(args.session, args.reps, args.calls)
    print_table(result)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
