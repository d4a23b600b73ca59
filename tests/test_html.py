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
from triage_agent.render import html, plots

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
    page = doc.replace(plots.plotly_js(), "")  # plotly.js's own code mentions URLs; the page must load none
    assert not re.search(r"(src|href)=[\"']https?://", page) and "<link" not in page
    assert "Plotly.newPlot" in doc and doc.count("<script") >= 2  # plotly.js inlined once, then the figures
    # 3 selector rounds, the filter histogram, the generator trajectory
    assert doc.count('class="plot"') == 5
    assert "Accuracy before\\u002fafter the filter" in doc and "Generator accuracy against its target" in doc
    cal = html.render(inspect(SAMPLES / "reward_hacking"))
    assert "Proxy reward vs gold pass rate" in cal and "Solver reliability" in cal


def test_text_from_run_files_cannot_break_out_of_the_page(make_run):
    rows = [{"step": i, "reward": i / 10, "</script><script>alert(1)</script>": 1.0} for i in range(1, 13)]
    root = make_run({"trainer_state.json": {"log_history": rows}})
    doc = html.render(inspect(root))
    assert "<script>alert(1)" not in doc


class _Trap:
    """A proxy that accepts connections and records them: with every request of the browser routed through it,
    an empty record means the page made no network request."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.hits: list[bytes] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            conn.settimeout(1)
            try:
                self.hits.append(conn.recv(200))
            except OSError:
                self.hits.append(b"?")
            conn.close()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (.ci/run installs it)")
@pytest.mark.parametrize("name", ["boundary_collapse", "reward_hacking", "verl_kl_explosion", "trl_oom_crash"])
def test_html_renders_in_headless_chromium(tmp_path, name):
    page = tmp_path / f"{name}.html"
    doc = html.render(inspect(SAMPLES / name))
    page.write_text(doc)
    trap = _Trap()
    profile = [f"--user-data-dir={tmp_path / 'profile'}", f"--proxy-server=127.0.0.1:{trap.port}",
               "--proxy-bypass-list=<-loopback>", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000"]
    try:
        shot = tmp_path / "shot.png"
        # one browser start gives both the DOM after the scripts ran and the screenshot
        run = subprocess.run([CHROMIUM, *FLAGS, *profile, "--window-size=1400,900", f"--screenshot={shot}",
                              "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180, check=True)
    finally:
        trap.close()
    rendered = re.search(r'data-plots-rendered="(\d+)"', run.stdout)
    assert rendered and int(rendered.group(1)) == doc.count('class="plot"') > 0
    console = [line for line in run.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if re.search(r"error|uncaught", line, re.I)], console
    # the browser's own housekeeping (its clock, component updates) goes to Google; the page asks for nothing
    hosts = [re.match(rb"\w+ (?:https?://)?([^/: ]+)", h) for h in trap.hits]
    page_requests = [h for h, m in zip(trap.hits, hosts)
                     if not (m and re.search(rb"(^|\.)(google|gvt1|googleapis)\.com$", m.group(1)))]
    assert page_requests == []
    width, height, pixels, bpp = png_pixels(shot)
    assert (width, height) == (1400, 900)
    for plot in run.stdout.split('class="plotly-graph-div')[1:]:
        svg = float(re.search(r'<svg class="main-svg"[^>]*width="([\d.]+)"', plot).group(1))
        title = re.search(r'class="gtitle" x="[\d.]+" y="([\d.]+)"[^>]*font-size: ([\d.]+)px', plot)
        legend = re.search(r'<g class="legend"[^>]*transform="translate\([\d.]+,([\d.]+)\)"', plot)
        # the full width: two columns in 1400 px less the body's 24-px margins, a 15-px scrollbar, the 12-px gap
        # and each chart's 1-px border: (1400 - 48 - 15 - 12) / 2 - 2 = 660.5 (a page capped at 1120 px: 552)
        assert svg >= 660, svg
        # the title (its top at y, 14 px tall) ends above the legend's top: no legend row over it
        assert title and legend and float(title.group(1)) + float(title.group(2)) <= float(legend.group(1)), \
            (title and title.groups(), legend and legend.groups())
    colored = sum(1 for i in range(0, len(pixels), bpp * 7)
                  if abs(pixels[i] - pixels[i + 2]) > 60 or max(pixels[i:i + 3]) < 100)
    assert colored > 500  # plot lines, bars and text, not a blank page
