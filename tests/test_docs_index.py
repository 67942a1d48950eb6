"""The user pages stay findable and free of development notes.

Why: an operator reaches every page through the README's index, so a page missing from it is a
page nobody reads, and a link to a moved page is a dead end. The README is the first thing they
read, so it stays short (the test suite and bench internals live in CONTRIBUTING.md). And the
user pages describe the product as it is: an issue number, a commit hash or "this round" is a
note about how it was built, which means nothing to the reader and goes stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The README is read first: under this many lines, the rest goes into docs/ and CONTRIBUTING.md.
README_MAX_LINES = 215

#: `[text](target)` and `![alt](target)`; the target up to a space (a title) or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: "issue 12", "issues #38", and a bare "#12" that is not part of a word ("PKCS#12") or an entity.
ISSUE = re.compile(r"\bissues?\s*#?\d+\b|(?<![\w&/#])#\d+\b", re.IGNORECASE)
#: A git hash: 7 to 40 hex digits holding at least one digit and one letter (so neither a plain
#: number such as 1000000 nor a word such as "deadbeef" counts).
COMMIT = re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
WORK_NOTE = re.compile(r"\bthis round\b", re.IGNORECASE)


def user_pages(root: Path) -> list[Path]:
    """README.md and every page under docs/."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def local_links(text: str) -> list[str]:
    """The README's link targets that are files of the repository (no URLs, no in-page anchors)."""
    targets = (match.group(1).split("#", 1)[0] for match in LINK.finditer(text))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.IGNORECASE)]


def unlinked_docs(root: Path) -> list[str]:
    """Pages under docs/ that the README does not link to."""
    linked = {(root / target).resolve() for target in local_links((root / "README.md").read_text())}
    return [f"docs/{page.name}" for page in sorted((root / "docs").glob("*.md")) if page.resolve() not in linked]


def dead_links(root: Path) -> list[str]:
    """README link targets that name no file or folder."""
    return [t for t in local_links((root / "README.md").read_text()) if not (root / t).exists()]


def development_notes(root: Path) -> list[str]:
    """`page:line: text` for each issue reference, commit hash or "this round" on a user page."""
    found = []
    for page in user_pages(root):
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            for pattern in (ISSUE, COMMIT, WORK_NOTE):
                for match in pattern.finditer(line):
                    found.append(f"{page.relative_to(root)}:{number}: {match.group(0)!r}")
    return found


def test_every_page_under_docs_is_linked_from_the_readme() -> None:
    missing = unlinked_docs(ROOT)
    assert not missing, f"add a line for each to the README's Documentation index: {missing}"


def test_every_readme_link_points_at_a_file() -> None:
    dead = dead_links(ROOT)
    assert not dead, f"README.md links to files that do not exist: {dead}"


def test_the_readme_stays_short() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines < README_MAX_LINES, (
        f"README.md has {lines} lines (limit {README_MAX_LINES - 1}): move details into docs/ or CONTRIBUTING.md"
    )


def test_user_pages_carry_no_issue_numbers_hashes_or_work_notes() -> None:
    notes = development_notes(ROOT)
    assert not notes, "user pages describe the product, not its history: " + "; ".join(notes)


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("fixed in issue 12", True),
        ("see issues #38 and #128", True),
        ("closes #7.", True),
        ("measured this round", True),
        ("before b85d050, after 4ac8104", True),
        ("a PKCS#12 keystore", False),
        ("max_rows_per_batch = 1000000", False),
        ("a deadbeef placeholder", False),
        ("the `#` comment and the [heading](#quick-start)", False),
        ("lagwatch-commitlog-prod-eu1, lagwatch-0.1.0-py3-none-any.whl", False),
    ],
)
def test_the_patterns_tell_notes_from_ordinary_text(line: str, flagged: bool) -> None:
    assert any(p.search(line) for p in (ISSUE, COMMIT, WORK_NOTE)) is flagged


def test_the_checks_catch_an_unlinked_page_a_dead_link_and_a_note(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "linked.md").write_text("# Linked\n\nFixed in issue 12.\n")
    (tmp_path / "docs" / "orphan.md").write_text("# Orphan\n")
    (tmp_path / "README.md").write_text(
        "# Readme\n\n- [linked](docs/linked.md#top)\n- [gone](docs/gone.md)\n- [site](https://example.com/x.md)\n"
    )
    assert unlinked_docs(tmp_path) == ["docs/orphan.md"]
    assert dead_links(tmp_path) == ["docs/gone.md"]
    assert development_notes(tmp_path) == ["docs/linked.md:3: 'issue 12'"]
