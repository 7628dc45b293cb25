"""``upskills skills list|show|validate|diff|install``."""

from __future__ import annotations

import click

_DIR = click.option(
    "--skills-dir",
    default="skills",
    show_default=True,
    type=click.Path(),
    help="Folder holding the packs and their version store.",
)


@click.group()
def cli() -> None:
    """List, show, validate, diff and install skill packs."""


@cli.command("list")
@_DIR
@click.option("--versions", "all_versions", is_flag=True, help="Also list stored versions.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per pack.")
def list_(skills_dir: str, all_versions: bool, as_json: bool) -> None:
    """List the packs in the skills folder."""
    import json

    from upskills.skills.pack import PackError, load_packs, versions

    try:
        packs = load_packs(skills_dir)
    except PackError as exc:
        raise click.ClickException(str(exc)) from exc
    for pack in packs:
        if as_json:
            row: dict[str, object] = {
                "name": pack.name,
                "version": pack.version,
                "description": pack.description,
                "path": str(pack.path),
            }
            if all_versions:
                row["versions"] = versions(pack.name, skills_dir)
            click.echo(json.dumps(row))
            continue
        click.echo(f"{pack.name}@{pack.version}\t{pack.description}")
        if all_versions:
            click.echo("  versions: " + ", ".join(versions(pack.name, skills_dir)))


@cli.command()
@click.argument("ref")
@_DIR
@click.option("--compact", is_flag=True, help="Show the compact variant.")
@click.option("--file", "path", default=None, help="Show a file inside the pack instead.")
def show(ref: str, skills_dir: str, compact: bool, path: str | None) -> None:
    """Show pack REF (a name, NAME@VERSION, or a folder)."""
    from upskills.skills.attach import read_skill_tool
    from upskills.skills.pack import PackError, resolve_pack

    try:
        pack = resolve_pack(ref, skills_dir)
        if path:
            _, handler = read_skill_tool([pack])
            click.echo(handler({"name": pack.name, "path": path}), nl=False)
        elif compact and pack.compact_body:
            click.echo(pack.compact_body, nl=False)
        else:
            click.echo((pack.path / "SKILL.md").read_text(encoding="utf-8"), nl=False)
    except (PackError, FileNotFoundError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
def validate(paths: tuple[str, ...]) -> None:
    """Validate packs: each PATH is a pack or a folder of packs (default: skills)."""
    from upskills.skills.pack import PackError, pack_dirs, validate_pack

    failures = 0
    for raw in paths or ("skills",):
        try:
            dirs = pack_dirs(raw)
        except PackError as exc:
            raise click.ClickException(str(exc)) from exc
        if not dirs:  # nothing validated is not a pass
            raise click.ClickException(
                f"no skill pack in {raw}: a pack is a folder with a SKILL.md, "
                "and a folder of packs holds such folders"
            )
        for folder in dirs:
            errors = validate_pack(folder)
            failures += bool(errors)
            click.echo(f"{'ok' if not errors else 'FAIL'}\t{folder}")
            for err in errors:
                click.echo(f"  {err}")
    if failures:
        raise click.ClickException(f"{failures} pack(s) failed validation")


@cli.command()
@click.argument("old")
@click.argument("new")
@_DIR
def diff(old: str, new: str, skills_dir: str) -> None:
    """Show what changed from pack OLD to NEW (NAME@VERSION, names or folders)."""
    from upskills.skills.diff import diff_packs
    from upskills.skills.pack import PackError, resolve_pack

    try:
        result = diff_packs(resolve_pack(old, skills_dir), resolve_pack(new, skills_dir))
    except PackError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(result.render(), nl=False)


@cli.command()
@click.argument("refs", nargs=-1)
@_DIR
@click.option(
    "--target",
    default="claude",
    show_default=True,
    help="claude (.claude/skills), agents (.agents/skills), or a folder.",
)
@click.option(
    "--project",
    default=".",
    show_default=True,
    type=click.Path(),
    help="Project folder the named targets are relative to.",
)
@click.option("--force", is_flag=True, help="Replace packs already installed.")
def install(refs: tuple[str, ...], skills_dir: str, target: str, project: str, force: bool) -> None:
    """Install packs REFS (default: all current packs) where agents look for skills."""
    from upskills.skills.install import install_packs
    from upskills.skills.pack import PackError, load_packs, resolve_pack

    try:
        packs = [resolve_pack(r, skills_dir) for r in refs] if refs else load_packs(skills_dir)
        for path in install_packs(packs, target, project_dir=project, force=force):
            click.echo(f"installed {path}")
    except PackError as exc:
        raise click.ClickException(str(exc)) from exc
