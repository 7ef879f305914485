# JupyterLab's settings for the book (`make lab` passes this file with --config): the
# chapters' .md files are read and written by tools/lab_contents.py, the .ipynb twins
# and Jupytext's settings stay out of the file browser, and nothing is fetched from
# the network.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

c = get_config()  # noqa: F821 (JupyterLab provides it)
c.ServerApp.contents_manager_class = "lab_contents.BookContentsManager"
c.ContentsManager.hide_globs = [
    "__pycache__",
    "*.pyc",
    ".ipynb_checkpoints",
    "*.ipynb",
    "jupytext.toml",
]
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
