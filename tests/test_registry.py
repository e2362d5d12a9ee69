from pathlib import Path

import pytest

from icml24 import registry
from icml24.errors import InputError

SPECS = Path(__file__).resolve().parents[2] / "shared" / "specs"


def test_nineteen_methods_with_identity():
    assert len(registry.SLUGS) == 19 == len(set(registry.SLUGS))
    for slug in registry.SLUGS:
        p = registry.PAPERS[slug]
        assert p.title and p.authors and all(p.authors)
        assert p.code is None or p.code.startswith("https://github.com/")
        assert p.arxiv is None or len(p.arxiv.split(".")) == 2


@pytest.mark.skipif(not SPECS.is_dir(), reason="shared/specs is not beside the checkout")
def test_slugs_match_the_spec_files():
    assert {p.stem for p in SPECS.glob("*.md")} - {"README"} == set(registry.SLUGS)
    table = (SPECS / "README.md").read_text()
    for slug, p in registry.PAPERS.items():
        row = next(line for line in table.splitlines() if line.startswith(f"| {slug} |"))
        assert (p.arxiv or "-") in row
        assert (p.code or "-").replace("https://", "") in row


def test_planned_methods_are_listed_not_hidden():
    for slug in registry.SLUGS:
        m = registry.get(slug)
        assert registry.is_implemented(slug) == (m is not None)
        if m is not None:
            assert m.slug == slug and m.title == registry.PAPERS[slug].title


def test_unknown_slug_and_registering():
    with pytest.raises(InputError, match="unknown method"):
        registry.get("no_such_method")
    assert registry.check_slug("seed-gnn") == "seed_gnn"
    import toy_method

    registry.register(toy_method.METHOD)
    try:
        assert registry.get("toy_method") is toy_method.METHOD
        assert "toy_method" in registry.all_slugs()
    finally:
        registry.unregister("toy_method")
    with pytest.raises(InputError):
        registry.register("not a method")


def test_method_helper_uses_registry_identity():
    m = registry.method("jetfire", ())
    assert m.arxiv == "2403.12422" and m.code.endswith("Jetfire-INT8Training") and m.authors[0] == "Haocheng Xi"
    with pytest.raises(InputError):
        registry.method("nope", ())
