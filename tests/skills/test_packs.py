from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.distill.tracegen import ROW_SUM_MASKED, ROW_SUM_TAIL_DROPPED, verdict, write_trace
from upskills._cli.main import main
from upskills.distill import DistillConfig, distill
from upskills.skills.attach import read_skill_tool, skills_index_block, system_prompt_block
from upskills.skills.install import install_packs
from upskills.skills.pack import PackError, load_pack, load_packs, resolve_pack, validate_pack


@pytest.fixture(scope="module")
def skills(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("s")
    for i in range(2):
        write_trace(
            root / "traces" / f"t{i}.jsonl",
            [
                (ROW_SUM_TAIL_DROPPED, verdict(ROW_SUM_TAIL_DROPPED, False)),
                (ROW_SUM_MASKED, verdict(ROW_SUM_MASKED, True)),
            ],
            trace_id=f"{i:032x}",
        )
    distill([root / "traces"], root / "skills", None, DistillConfig())
    return root / "skills"


def _hand_pack(root: Path, name: str, front: str, body: str = "# Body\n") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}")
    return folder


def test_load_packs_skips_the_version_store(skills):
    packs = load_packs(skills)
    assert [p.name for p in packs] == ["gpu-memory-access", "gpu-reductions"]
    assert all(p.version == "1.0.0" and p.compact_body for p in packs)
    assert (
        skills / ".versions" / "gpu-reductions" / "1.0.0" / "gpu-reductions" / "SKILL.md"
    ).is_file()


def test_resolve_by_name_version_and_path(skills):
    assert resolve_pack("gpu-reductions", skills).ref == "gpu-reductions@1.0.0"
    assert resolve_pack("gpu-reductions@1.0.0", skills).path == skills / "gpu-reductions"
    assert resolve_pack(skills / "gpu-reductions").name == "gpu-reductions"
    with pytest.raises(
        PackError, match=r"no version '9.9.9' of skill 'gpu-reductions' .*versions: 1.0.0"
    ):
        resolve_pack("gpu-reductions@9.9.9", skills)
    with pytest.raises(PackError, match="no skill named 'nothing'"):
        resolve_pack("nothing", skills)
    with pytest.raises(PackError, match="not a valid skill name"):
        resolve_pack("Bad_Name", skills)


def test_validate_reports_each_problem_with_its_file(tmp_path):
    ok = _hand_pack(
        tmp_path,
        "hand-made",
        'name: hand-made\ndescription: "Use it."\nmetadata:\n  version: "0.1.0"\n',
    )
    assert validate_pack(ok) == []
    bad = _hand_pack(
        tmp_path,
        "other-dir",
        'name: wrong\ndescription: x\nauthor: me\nmetadata:\n  version: "1.0"\n',
    )
    errors = "\n".join(validate_pack(bad))
    assert "'author' is not an Agent Skills key" in errors
    assert "folder name 'other-dir' must equal the skill name 'wrong'" in errors
    assert "metadata.version '1.0' is not semver" in errors
    assert "agentskills:" in errors  # the skills-ref validator ran too
    assert str(bad / "SKILL.md") in errors
    big = _hand_pack(tmp_path, "too-big", "name: too-big\ndescription: x\n", "word " * 4000)
    assert any("over the 5000 budget" in e for e in validate_pack(big))
    nofront = tmp_path / "nofront"
    nofront.mkdir()
    (nofront / "SKILL.md").write_text("# no frontmatter\n")
    assert "must start with YAML frontmatter" in validate_pack(nofront)[0]
    script = _hand_pack(tmp_path, "with-script", "name: with-script\ndescription: x\n")
    (script / "scripts").mkdir()
    (script / "scripts" / "k.py").write_text("def f(:\n")
    assert any("k.py:1: does not parse" in e for e in validate_pack(script))


def test_system_prompt_block_inlines_body_or_compact(skills):
    packs = load_packs(skills)
    full = system_prompt_block(packs)
    assert (
        full.count("<skill name=") == 2
        and '<skill name="gpu-memory-access" version="1.0.0">' in full
    )
    assert "## Pitfalls" in full
    compact = system_prompt_block(packs, compact=True)
    assert "(compact)" in compact and "## Pitfalls" not in compact
    assert len(compact) < len(full)
    assert system_prompt_block([]) == ""
    assert "`gpu-reductions`:" in skills_index_block(packs)


def test_read_skill_tool_serves_body_and_files_but_nothing_outside(skills):
    spec, handler = read_skill_tool(load_packs(skills))
    assert spec.name == "read_skill" and spec.parameters["required"] == ["name"]
    assert spec.parameters["properties"]["name"]["enum"] == ["gpu-memory-access", "gpu-reductions"]
    body = handler({"name": "gpu-memory-access"})
    assert body.startswith("# GPU kernel memory access") and "- references/lessons.md" in body
    assert handler({"name": "gpu-memory-access", "path": "references/lessons.md"}).startswith(
        "# GPU kernel memory access: all lessons"
    )
    assert "row_sum_kernel" in handler(
        {"name": "gpu-memory-access", "path": "scripts/row_sum_kernel.py"}
    )
    with pytest.raises(KeyError, match="no skill named 'x'"):
        handler({"name": "x"})
    with pytest.raises(FileNotFoundError, match="has no file 'nope.md'"):
        handler({"name": "gpu-memory-access", "path": "nope.md"})
    with pytest.raises(ValueError, match="outside skill"):
        handler({"name": "gpu-memory-access", "path": "../gpu-reductions/SKILL.md"})


def test_install_targets_and_force(skills, tmp_path):
    packs = load_packs(skills)
    claude = install_packs(packs, "claude", project_dir=tmp_path)
    assert claude == [tmp_path / ".claude" / "skills" / p.name for p in packs]
    assert load_pack(claude[0]).body == packs[0].body
    agents = install_packs(packs[:1], "agents", project_dir=tmp_path)
    assert agents == [tmp_path / ".agents" / "skills" / "gpu-memory-access"]
    with pytest.raises(PackError, match="already exists; pass --force"):
        install_packs(packs[:1], "agents", project_dir=tmp_path)
    (agents[0] / "stale.txt").write_text("old")
    install_packs(packs[:1], "agents", project_dir=tmp_path, force=True)
    assert not (agents[0] / "stale.txt").exists()
    anywhere = install_packs(packs[:1], str(tmp_path / "mine"))
    assert validate_pack(anywhere[0]) == []
    assert sorted(p.name for p in (tmp_path / ".agents" / "skills").iterdir()) == [
        "gpu-memory-access"
    ]


def test_skills_cli(skills, tmp_path):
    run = CliRunner().invoke
    out = run(main, ["skills", "list", "--skills-dir", str(skills), "--versions"])
    assert (
        out.exit_code == 0
        and "gpu-reductions@1.0.0\t" in out.output
        and "versions: 1.0.0" in out.output
    )
    out = run(main, ["skills", "show", "gpu-reductions@1.0.0", "--skills-dir", str(skills)])
    assert out.exit_code == 0 and out.output.startswith("---\nname: gpu-reductions")
    out = run(main, ["skills", "show", "gpu-reductions", "--compact", "--skills-dir", str(skills)])
    assert out.output.startswith("# GPU kernel reductions (compact)")
    out = run(main, ["skills", "validate", str(skills)])
    assert out.exit_code == 0 and out.output.count("ok\t") == 2
    _hand_pack(tmp_path / "bad", "broken", "name: other\ndescription: x\n")
    out = run(main, ["skills", "validate", str(tmp_path / "bad")])
    assert (
        out.exit_code == 1 and "FAIL" in out.output and "1 pack(s) failed validation" in out.output
    )
    (tmp_path / "empty").mkdir()
    out = run(main, ["skills", "validate", str(tmp_path / "empty")])
    assert out.exit_code == 1 and "no skill pack in" in out.output
    out = run(
        main,
        [
            "skills",
            "install",
            "gpu-reductions",
            "--skills-dir",
            str(skills),
            "--target",
            "agents",
            "--project",
            str(tmp_path),
        ],
    )
    assert (
        out.exit_code == 0
        and (tmp_path / ".agents" / "skills" / "gpu-reductions" / "SKILL.md").is_file()
    )
    out = run(main, ["skills", "list", "--skills-dir", str(tmp_path / "missing")])
    assert out.exit_code == 1 and "no skills folder at" in out.output
