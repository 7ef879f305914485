# Run by every kernel of the book's build: the Makefile copies it into the build's
# IPython startup folder, _build/ipython/profile_default/startup. From then on, each PNG
# a figure is saved as records the size of its smallest text (tools/figure_text.py).
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "figure_text", Path(__file__).resolve().parents[4] / "tools" / "figure_text.py"
)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
_module.install()
del _spec, _module
