"""The HTML report: self-contained, and rendered by a real headless browser (Debian's chromium)."""

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.conftest import SAMPLES
from triage_agent.commands.inspect import inspect
from triage_agent.render import html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def png_pixels(path: Path) -> tuple[int, int, bytes, int]:
    """A small PNG decoder (8-bit RGB/RGBA, non-interlaced): width, height, raw pixels, bytes per pixel."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    prev = bytearray(stride)
    for y in range(height):
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
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return width, height, bytes(out), bpp


def test_html_is_self_contained_with_every_plot():
    doc = html.render(inspect(SAMPLES / "boundary_collapse"))
    assert not re.search(r"(src|href)=[\"']https?://", doc) and "<link" not in doc
    # 3 selector rounds, the filter histogram, the generator trajectory
    assert doc.count("<svg") == 5
    assert "Accuracy before/after the filter" in doc and "Generator accuracy against its target" in doc
    cal = html.render(inspect(SAMPLES / "reward_hacking"))
    assert "Proxy reward vs gold pass rate" in cal and "Solver reliability" in cal


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
@pytest.mark.parametrize("name", ["boundary_collapse", "reward_hacking"])
def test_html_renders_in_headless_chromium(tmp_path, name):
    page = tmp_path / f"{name}.html"
    doc = html.render(inspect(SAMPLES / name))
    page.write_text(doc)
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([CHROMIUM, *FLAGS, *profile, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    rendered = re.search(r'data-plots-rendered="(\d+)"', dom)
    assert rendered and int(rendered.group(1)) == doc.count("<svg")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, *FLAGS, *profile, "--window-size=1000,900", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    width, height, pixels, bpp = png_pixels(shot)
    assert (width, height) == (1000, 900)
    colored = sum(1 for i in range(0, len(pixels), bpp * 7)
                  if abs(pixels[i] - pixels[i + 2]) > 60 or max(pixels[i:i + 3]) < 100)
    assert colored > 500  # plot lines, bars and text, not a blank page
