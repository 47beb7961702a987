"""Internal links of a built site: every link and image of every page points at a file of the site, and every
``#anchor`` at an element id of its page. No network: external links (with a scheme or a host) are not followed."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LINKING = {"a": "href", "link": "href", "img": "src", "script": "src"}


class Page(HTMLParser):
    """The link targets and the element ids of one HTML page."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.ids.update(value for key, value in attributes.items() if key in ("id", "name") and value)
        if attributes.get(LINKING.get(tag, "")):
            self.targets.append(attributes[LINKING[tag]])


def read(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def resolve(site: Path, page: Path, path: str) -> Path:
    """The file a link's path names: relative to the page's folder, or to the site's root when it starts with /;
    a folder stands for its index.html."""
    target = (site / path.lstrip("/")) if path.startswith("/") else (page.parent / path) if path else page
    return target / "index.html" if target.is_dir() else target


def broken_links(site: Path) -> list[str]:
    """``page: link (why)`` for every internal link of the site that names no file or no anchor of its page."""
    pages = {path.resolve(): read(path) for path in site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for link in page.targets:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            target = resolve(site, path, unquote(parts.path)).resolve()
            where = f"{path.relative_to(site.resolve())}: {link}"
            if not target.is_file():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                broken.append(f"{where} (no such anchor)")
    return broken
