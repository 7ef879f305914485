"""How large the text of the book's figures is: written into each PNG a figure is
saved as, read back by the offline check.

When the book is built (``make book``), every kernel runs ``install()`` first (an
IPython startup file; see the Makefile). From then on, each PNG that matplotlib writes,
the figures a cell shows included, carries a text chunk ``smallest-text-px``: the size
of the figure's smallest text in the image's own pixels. The offline check scales it by
the width the browser gives the image at 1280 px, so that a figure shrunk to fit the
text column is measured as the reader sees it.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

KEY = "smallest-text-px"


def smallest_text_pt(fig) -> float | None:
    """The size in points of the smallest text ``fig`` draws (None: no text)."""
    import matplotlib.text

    fig.canvas.draw()  # so that tick labels exist and hold their final text
    sizes = [
        text.get_fontsize()
        for text in fig.findobj(matplotlib.text.Text)
        if text.get_visible() and text.get_text().strip() and _shown(text)
    ]
    return min(sizes, default=None)


def _shown(text) -> bool:
    """Whether ``text`` is drawn: not a tick label of an axis that is turned off or
    outside its axes' view."""
    axes = text.axes
    if axes is not None and not axes.axison and text in _tick_labels(axes):
        return False
    return True


def _tick_labels(axes) -> list:
    return axes.get_xticklabels() + axes.get_yticklabels()


def install() -> None:
    """Make every PNG matplotlib writes carry its smallest text's size in pixels."""
    from matplotlib.backend_bases import FigureCanvasBase

    plain = FigureCanvasBase.print_figure
    if getattr(plain, "measures_text", False):
        return

    def print_figure(self, filename, *args, **kwargs):
        fmt = kwargs.get("format") or Path(str(filename)).suffix.lstrip(".")
        if str(fmt or "png").lower() == "png":
            points = smallest_text_pt(self.figure)
            if points is not None:
                dpi = kwargs.get("dpi") or self.figure.dpi
                if dpi == "figure":
                    dpi = self.figure.dpi
                metadata = dict(kwargs.get("metadata") or {})
                metadata[KEY] = f"{points * float(dpi) / 72:.2f}"
                kwargs["metadata"] = metadata
        return plain(self, filename, *args, **kwargs)

    print_figure.measures_text = True
    FigureCanvasBase.print_figure = print_figure


def png_text(path: Path) -> dict[str, str]:
    """The tEXt chunks of the PNG file at ``path`` (empty if it is no PNG)."""
    data = path.read_bytes()
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return {}
    found, at = {}, 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        body = data[at + 8 : at + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            found[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt" and b"\0" in body:
            key, value = body.split(b"\0", 1)
            found[key.decode("latin-1")] = zlib.decompress(value[1:]).decode("latin-1")
        elif kind == b"IEND":
            break
        at += 12 + length
    return found
