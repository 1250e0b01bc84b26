"""Every code quote in docs/ names a marker that exists exactly once, and is current."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_doc_quotes():
    spec = importlib.util.spec_from_file_location("doc_quotes", ROOT / "scripts" / "doc_quotes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_quote_existing_markers_verbatim():
    doc_quotes = load_doc_quotes()
    assert doc_quotes.problems() == []


def test_docs_quote_something():
    doc_quotes = load_doc_quotes()
    quotes = [m for doc in (ROOT / "docs").rglob("*.md") for m in doc_quotes.quoted(doc)]
    assert len(quotes) >= 10


def test_markers_in_the_tree_are_well_formed():
    doc_quotes = load_doc_quotes()
    sources = [p for p in (ROOT / "packages").rglob("*")
               if p.suffix in {".cpp", ".h", ".py"} and "build" not in p.parts]
    for source in sources:
        doc_quotes.regions(source)  # raises on nesting, duplicates, unclosed markers


def test_detects_a_stale_quote(tmp_path, monkeypatch):
    doc_quotes = load_doc_quotes()
    (tmp_path / "docs").mkdir()
    (tmp_path / "src.py").write_text("# DOC START: t\nx = 1\n# DOC END: t\n")
    (tmp_path / "docs" / "a.md").write_text("<!-- quote: src.py#t -->\n```python\nx = 2\n```\n")
    monkeypatch.setattr(doc_quotes, "ROOT", tmp_path)
    assert len(doc_quotes.problems()) == 1
    doc_quotes.update()
    assert doc_quotes.problems() == []
