"""A run's picture (report.html, src/picture/html.h) read back by the tests
that check it: tests/e2e/local/test_report.py (`jobset run`) and
tests/e2e/cluster/test_report_cluster.py (`kubectl jobset report`). The page
is parsed for its classes and data- attributes, and rendered in Debian's
headless chromium (scripts/setup-debian.sh installs it): without chromium
the browser checks fail, naming the package; they never skip.
"""
import os
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

# Nothing a self-contained page may load: no URL, no script, no external
# stylesheet, font or image.
EXTERNAL = re.compile(r"https?://|\bsrc\s*=|<script|<link|@import|url\(", re.I)


class Classes(HTMLParser):
    """Elements by class, with their attributes, and the text of <title>s."""

    def __init__(self):
        super().__init__()
        self.by_class = {}
        self.titles = []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs, _tag=tag)
        for c in (a.get("class") or "").split():
            self.by_class.setdefault(c, []).append(a)
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.titles.append(data)


def spans(doc, kind):
    """The timeline's rectangles of one phase (not the legend's swatches)."""
    return [a for a in doc.by_class.get(kind, []) if a["_tag"] == "rect"]


def groups(doc, cls):
    """The timeline's groups of a class: rows, attempt markers, failure marks."""
    return [a for a in doc.by_class.get(cls, []) if a["_tag"] == "g"]


def parse(html):
    p = Classes()
    p.feed(html)
    return p


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("chromium is not installed; scripts/setup-debian.sh installs it (Debian package chromium)")


def browse(html_path, tmp_path, *args):
    """Run headless chromium on the page; its stdout."""
    cmd = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
           f"--user-data-dir={tmp_path / 'profile'}", *args, html_path.as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def keep_screenshot(shot, name):
    """With JS_UPDATE_SCREENSHOT=1, copy the test's screenshot to
    docs/img/NAME, the pictures README.md shows (report.png: `jobset run`;
    report-cluster.png: `kubectl jobset report`)."""
    if os.environ.get("JS_UPDATE_SCREENSHOT") == "1":
        shutil.copyfile(shot, Path(__file__).resolve().parents[2] / "docs" / "img" / name)


def png_pixels(path):
    """Width, height and RGBA rows of an 8-bit RGB(A) PNG (what chromium
    writes), unfiltered with the standard's five filters."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = ihdr[:4]
    assert depth == 8 and ctype in (2, 6), ihdr
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def count_colour(rows, bpp, rgb, tol=12):
    n = 0
    for line in rows:
        for i in range(0, len(line), bpp):
            if all(abs(line[i + k] - rgb[k]) <= tol for k in range(3)):
                n += 1
    return n
