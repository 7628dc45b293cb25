"""benchmarks/device/take_round.py: a device call's results taken into a checkout, the device's
paths replaced, and nothing taken that would escape the checkout or overwrite a result."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "device"))

import take_round as tr  # noqa: E402  # pyright: ignore[reportMissingImports]

SESSION = "traces/corpus-live/kb1_40_layernorm-s26"


def _tgz(path: Path, members: dict[str, bytes | None], links: tuple[str, ...] = ()) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc"
            tar.addfile(info)


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "benchmarks" / "results" / "corpus_live").mkdir(parents=True)
    (root / "reports").mkdir()
    for name in tr.REPORTS:
        flag = "--flush read " if "read-flush" in name else ""
        (root / name).write_text(
            "# Teacher corpus report\n\n"
            f"- Command: `upskills traces report traces/corpus-live {flag}--recheck "
            f"benchmarks/results/recheck_h200_run31.jsonl --out {name}`\n"
        )
    return root


def test_a_round_its_sessions_and_a_recheck_are_taken_with_the_device_paths_replaced(tmp_path):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "round.txt").write_text(
        "===== traces/x\n  /srv/lent/checkout/traces/corpus-live/x/kernel.py:3 ok\n"
    )
    (out / "round.log").write_text("built in /tmp/upskills-tests.ab12_c/k; wrote /root/out/r\n")
    (out / "recheck.jsonl").write_text('{"source": "/srv/lent/checkout/traces/x"}\n')
    trace = b'{"event": "tool_result", "text": "/srv/lent/checkout/k.py:1"}\n'
    _tgz(
        out / "sessions.tgz",
        {SESSION: None, f"{SESSION}/trace.jsonl": trace, f"{SESSION}/.lock": b""},
    )

    taken, recheck = tr.take(out, root, round_no=36, recheck_run=32)

    results = root / "benchmarks" / "results"
    assert (results / "corpus_live" / "round36.txt").read_text() == (
        "===== traces/x\n  <checkout>/traces/corpus-live/x/kernel.py:3 ok\n"
    )
    assert (results / "corpus_live" / "round36.log").read_text() == (
        "built in /tmp/upskills-tests.XXXX/k; wrote $OUT/r\n"
    )
    assert (root / SESSION / "trace.jsonl").read_text() == (
        '{"event": "tool_result", "text": "<checkout>/k.py:1"}\n'
    )
    assert not (root / SESSION / ".lock").exists()
    assert recheck == "benchmarks/results/recheck_h200_run32.jsonl"
    assert "<checkout>/traces/x" in (root / recheck).read_text()
    assert "1 session files from sessions.tgz" in taken
    commands = tr.report_commands(recheck, root)
    write_flush = next(c for c in commands if "read" not in c)
    read_flush = next(c for c in commands if "--flush read" in c)
    assert f"--recheck {recheck} --out reports/teacher-corpus.md" in write_flush
    assert recheck not in read_flush  # a write-flush re-check is not the read flush's


def test_a_recheck_on_another_gpu_is_named_for_it_and_kept_out_of_the_reports(tmp_path):
    """The thirty-ninth session's re-check ran on an H100: under an H200 name, and added to the
    reports, it would have been read against the H200's bars."""
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    rows = [
        '{"task": "19_ReLU", "gpu": "NVIDIA H100 80GB HBM3", "passed": true}',
        '{"task": "bad", "passed": false, "message": "failed before the GPU was named"}',
    ]
    (out / "recheck.jsonl").write_text("\n".join(rows) + "\n")

    taken, recheck = tr.take(out, root, recheck_run=33)

    results = root / "benchmarks" / "results"
    assert recheck is None
    assert (results / "recheck_h100_run33.jsonl").read_text().startswith('{"task": "19_ReLU"')
    assert not (results / "recheck_h200_run33.jsonl").exists()
    assert "not added to the reports" in taken[0]
    assert all("run33" not in c for c in tr.report_commands(recheck, root))

    (out / "recheck.jsonl").write_text('{"gpu": "NVIDIA H200"}\n{"gpu": "NVIDIA H100 80GB HBM3"}\n')
    with pytest.raises(tr.TakeError, match="more than one GPU"):
        tr.take(out, root, recheck_run=34)
    assert not list(results.glob("recheck_*_run34.jsonl"))
    (out / "recheck.jsonl").write_text('{"gpu": "NVIDIA H200"}\nnot json\n')
    with pytest.raises(tr.TakeError, match="recheck.jsonl:2: not JSON"):
        tr.take(out, root, recheck_run=35)

    (out / "recheck.jsonl").write_text('{"gpu": "NVIDIA H200", "passed": true}\n')
    _, recheck = tr.take(out, root, recheck_run=36)
    assert recheck == "benchmarks/results/recheck_h200_run36.jsonl"


def test_an_h200_s_ceilings_with_copies_by_size_go_to_the_write_flush_report(tmp_path):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    sizes = [{"bytes": 1 << 25, "median_ms": 0.016, "gb_per_s": 2100.0}]
    (out / "ceilings.json").write_text(
        json.dumps({"gpu": "NVIDIA H200", "copy_gb_per_s": 4260.0, "copy_by_size": sizes})
    )

    line, by_size = tr.take_ceilings(out, 40, root)

    assert by_size == "benchmarks/results/ceilings_h200_session40.json"
    assert json.loads((root / by_size).read_text())["copy_by_size"] == sizes
    assert "goes to the write flush's report" in line
    commands = tr.report_commands(None, root, copy_by_size=by_size)
    write_flush = next(c for c in commands if "read" not in c)
    read_flush = next(c for c in commands if "--flush read" in c)
    assert f"--copy-by-size {by_size} --out " in write_flush
    assert "--copy-by-size" not in read_flush  # its copies were timed after a write flush
    # a later one replaces it rather than adding a second flag
    report = root / tr.REPORTS[0]
    report.write_text(report.read_text().replace(" --out ", f" --copy-by-size {by_size} --out "))
    again = tr.report_commands(None, root, copy_by_size="b/later.json")[0]
    assert again.count("--copy-by-size") == 1 and "--copy-by-size b/later.json" in again
    with pytest.raises(tr.TakeError, match="exists already"):
        tr.take_ceilings(out, 40, root)

    (out / "ceilings.json").write_text(
        json.dumps({"gpu": "NVIDIA H100 80GB HBM3", "copy_by_size": sizes})
    )
    line, by_size = tr.take_ceilings(out, 41, root)
    assert (line, by_size) == ("benchmarks/results/ceilings_h100_session41.json", None)
    (out / "ceilings.json").write_text("[1, 2]")
    with pytest.raises(tr.TakeError, match="not a JSON object"):
        tr.take_ceilings(out, 42, root)


def test_ceilings_are_taken_only_when_the_session_is_named(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "ceilings.json").write_text('{"gpu": "NVIDIA H200", "copy_gb_per_s": 4260.0}')
    root = _checkout(tmp_path)
    monkeypatch.setattr(tr, "ROOT", root)
    monkeypatch.setattr(tr, "RESULTS", root / "benchmarks" / "results")
    assert tr.main([str(out)]) == 0
    assert "not ceilings.json: --session N takes it" in capsys.readouterr().out
    assert tr.main([str(out), "--session", "40"]) == 0
    assert "taken: benchmarks/results/ceilings_h200_session40.json" in capsys.readouterr().out
    assert (root / "benchmarks" / "results" / "ceilings_h200_session40.json").is_file()
    # a ceilings file that cannot be taken: what was taken before it is still said
    (out / "ceilings.json").write_text("not json")
    (out / "recheck.jsonl").write_text('{"gpu": "NVIDIA H200"}\n')
    assert tr.main([str(out), "--recheck-run", "50", "--session", "41"]) == 1
    err = capsys.readouterr().err
    assert "no readable ceilings.json" in err
    assert "taken before it: benchmarks/results/recheck_h200_run50.jsonl" in err


def test_a_round_already_taken_is_not_overwritten(tmp_path):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "round.txt").write_text("new\n")
    kept = root / "benchmarks" / "results" / "corpus_live" / "round35.txt"
    kept.write_text("old\n")
    with pytest.raises(tr.TakeError, match="exists already"):
        tr.take(out, root, round_no=35)
    assert kept.read_text() == "old\n"
    with pytest.raises(tr.TakeError, match="--round N"):
        tr.take(out, root)


@pytest.mark.parametrize(
    ("members", "links", "said"),
    [
        ({"../escape.txt": b"x"}, (), "not a path under traces/"),
        ({"/etc/passwd": b"x"}, (), "not a path under traces/"),
        ({"upskills/verify/judge.py": b"x"}, (), "not a path under traces/"),
        ({f"{SESSION}/trace.jsonl": b"x"}, (f"{SESSION}/link",), "not a plain file or folder"),
    ],
)
def test_an_archive_with_a_path_outside_traces_or_a_link_writes_nothing(
    tmp_path, members, links, said
):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    _tgz(out / "sessions.tgz", {f"{SESSION}/good.jsonl": b"ok\n", **members}, links)
    with pytest.raises(tr.TakeError, match=said):
        tr.take(out, root)
    assert not (root / "traces").exists()  # the good member before it was not written either
    assert not (tmp_path / "escape.txt").exists()


def test_the_ablation_cache_is_taken_only_when_it_grew_from_the_committed_one(tmp_path):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    cache = root / "benchmarks" / "results" / "ablations_h200.jsonl"
    cache.write_text('{"k": 1}\n{"k": 2}\n')
    (out / "ablations.jsonl").write_text('{"k": 1}\n{"k": 3}\n')
    with pytest.raises(tr.TakeError, match="another checkout"):
        tr.take(out, root, ablations=True)
    assert cache.read_text() == '{"k": 1}\n{"k": 2}\n'
    (out / "ablations.jsonl").write_text(
        '{"k": 1}\n{"k": 2}\n{"k": 4, "p": "/srv/lent/checkout/upskills/verify/judge.py"}\n'
    )
    (out / "ablate.log").write_text(
        "# call at T on NVIDIA H200: 3 measurements after it\n"
        "ablation: judged t 4 on cuda NVIDIA H200: passed (/srv/lent/checkout/upskills/x.py)\n"
    )
    taken, _ = tr.take(out, root, ablations=True)
    assert taken == [
        "ablations_h200.jsonl: 1 new measurement line(s)",
        "ablations_h200.log: the calls' log appended",
    ]
    assert (
        cache.read_text().splitlines()[-1] == '{"k": 4, "p": "<checkout>/upskills/verify/judge.py"}'
    )
    log = cache.with_suffix(".log")
    assert log.read_text().splitlines()[-1].endswith("(<checkout>/upskills/x.py)")
    # taken again: the cache did not grow, so the log is not appended twice
    taken, _ = tr.take(out, root, ablations=True)
    assert taken == ["ablations_h200.jsonl: 0 new measurement line(s)"]
    assert len(log.read_text().splitlines()) == 2


def test_the_command_says_what_is_missing_and_takes_nothing_then(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "recheck.jsonl").write_text("{}\n")
    assert tr.main([str(out)]) == 1
    assert "--recheck-run N" in capsys.readouterr().err
    assert tr.main([str(tmp_path / "nothing")]) == 2


def test_a_trace_here_is_replaced_only_by_one_that_begins_with_it(tmp_path):
    root, out = _checkout(tmp_path), tmp_path / "out"
    out.mkdir()
    here = root / SESSION / "trace.jsonl"
    here.parent.mkdir(parents=True)
    here.write_text('{"e": 1}\n{"e": "a note written after the call"}\n')
    _tgz(out / "sessions.tgz", {f"{SESSION}/trace.jsonl": b'{"e": 1}\n{"e": "verdict"}\n'})
    with pytest.raises(tr.TakeError, match="does not begin with the trace here"):
        tr.take(out, root)
    assert "a note written after the call" in here.read_text()
    here.write_text('{"e": 1}\n')  # the trace as carried: the device's continues it
    tr.take(out, root)
    assert here.read_text() == '{"e": 1}\n{"e": "verdict"}\n'


def test_the_checkout_is_found_in_the_files_never_under_tmp_and_can_be_given():
    texts = [
        "File /tmp/upskills-tests.ab/traces/corpus-live/x/trace.jsonl",
        "File /opt/lent/repo/upskills/verify/judge.py, line 3",
        "File /opt/lent/repo/traces/corpus-live/y/trace.jsonl",
    ]
    assert tr.find_checkout(texts) == "/opt/lent/repo"
    assert tr.find_checkout(["nothing of this repository"]) is None
    said = "cd /opt/lent/repo && ls /opt/lent/repository"
    assert tr.redact(said, "/opt/lent/repo") == "cd <checkout> && ls /opt/lent/repository"


def test_a_copied_log_loses_the_checkout_it_names_only_in_pytests_header(tmp_path):
    src = tmp_path / "gpu_tests.log"
    src.write_text(
        "platform linux -- Python 3.12.3\nrootdir: /opt/lent/repo\n"
        "PASSED tests/verify/test_gpu.py::test_no_timing_option\n"
        "cd /opt/lent/repo && ls /opt/lent/repository\n"
    )
    dst = tr.copy_redacted(src, tmp_path / "results" / "gpu_tests_h100_session1.log")
    assert dst.read_text().splitlines()[1:] == [
        "rootdir: <checkout>",
        "PASSED tests/verify/test_gpu.py::test_no_timing_option",
        "cd <checkout> && ls /opt/lent/repository",
    ]
    with pytest.raises(tr.TakeError, match="exists already"):
        tr.copy_redacted(src, dst)
