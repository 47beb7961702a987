"""Internal links of a built site: every link and image of every page points at a file of the site, and every
``#anchor`` at an element id of its page. No network: external links (with a scheme or a host) are not followed.
Where the machine has Chromium, a page is also rendered headless: its scripts log no error, and the links of the
rendered page hold too."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

LINKING = {"a": "href", "link": "href", "img": "src", "script": "src"}
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


class Page(HTMLParser):
    """The link targets, the element ids and the headings' tags of one HTML page."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()
        self.tags: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.add(tag)
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


def broken_targets(site: Path, path: Path, page: Page, ids: dict[Path, set[str]]) -> list[str]:
    """``page: link (why)`` for each internal link of one page (at ``path``) that names no file, or an anchor that
    is not among the ids of its target (``ids``, by page; a page not in it has its ids read)."""
    broken = []
    for link in page.targets:
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:
            continue
        target = resolve(site, path, unquote(parts.path)).resolve()
        where = f"{path.relative_to(site.resolve())}: {link}"
        if not target.is_file():
            broken.append(f"{where} (no such file)")
        elif parts.fragment and target.suffix == ".html":
            if target not in ids:
                ids[target] = read(target).ids
            if unquote(parts.fragment) not in ids[target]:
                broken.append(f"{where} (no such anchor)")
    return broken


def broken_links(site: Path) -> list[str]:
    """``page: link (why)`` for every internal link of the site that names no file or no anchor of its page."""
    pages = {path.resolve(): read(path) for path in site.rglob("*.html")}
    ids = {path: page.ids for path, page in pages.items()}
    return [problem for path, page in pages.items() for problem in broken_targets(site, path, page, ids)]


def rendered_problems(site: Path, path: Path) -> list[str]:
    """What headless Chromium finds wrong with a page of the site: it fails to render it, a script logs an error,
    the rendered page has no heading, or a link of the rendered page is broken."""
    shown = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--enable-logging=stderr", "--dump-dom", path.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    where = path.resolve().relative_to(site.resolve())
    problems = [f"{where}: Chromium exited with {shown.returncode}"] if shown.returncode else []
    problems += [f"{where}: {line}" for line in shown.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    page = Page()
    page.feed(shown.stdout)
    problems += [] if "h1" in page.tags else [f"{where}: no heading"]
    return problems + broken_targets(site, path.resolve(), page, {})
