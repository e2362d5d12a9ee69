"""The README tells the truth: its two commands come first and its methods table matches the registry."""

from pathlib import Path

from icml24 import registry

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_opens_with_the_two_commands():
    text = README.read_text()
    block = text.split("```")[1]
    assert [line.split("#")[0].strip() for line in block.strip().splitlines()] == ["make run", "make test"]


def test_methods_table_matches_registry():
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] in registry.SLUGS:
            rows[cells[0]] = cells
    assert set(rows) == set(registry.SLUGS)
    for slug, (_, _, status, claims) in rows.items():
        m = registry.get(slug)
        assert status == ("implemented" if m else "planned"), slug
        assert int(claims) == (len(m.claims) if m else 0), slug
