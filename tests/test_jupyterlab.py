"""The chapters in JupyterLab, as `make lab` opens them, driven in headless Chromium.

On a fresh copy of the repository (the files git tracks or would track, committed in a
new repository), JupyterLab starts with the settings `make lab` gives it
(tools/jupyter_lab_config.py). The first chapter is opened and saved without running:
the tree stays clean. Then every page, in the book's order, is opened by a
double-click, checked before it runs (hidden cells folded, solutions folded with no
answer code above their fold, citations by author and year, no variable names where
numbers will go), run top to bottom with Run All, checked again (no error output, no
MyST source or unevaluated {eval} left in the rendered text), saved and closed with
its kernel shut down. At the end the copy's tree must be clean: saving a page wrote
it back as it was. Screenshots go to _build/jupyterlab/. Skipped, with the reason,
where Chromium, Playwright, JupyterLab or jupyterlab-myst is missing."""

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the test is skipped then
    PlaywrightTimeout = TimeoutError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from check_offline_book import find_chromium  # noqa: E402

SHOTS = ROOT / "_build" / "jupyterlab"
RUN_SECONDS = 600  # a page's Run All at smoke scale, on a busy 2-core machine


def missing() -> str | None:
    """Why the test cannot run here, or None."""
    if find_chromium() is None:
        return "no Chromium or Chrome (see the README's Tests section)"
    for module in ("playwright", "jupyterlab", "jupyterlab_myst", "jupytext"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -e '.[dev]')"
    return None


def fresh_copy(target: Path) -> None:
    """The repository's files, as a clone of the working tree would hold them, committed
    in a repository of their own."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            (target / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / os.fsdecode(name))
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=target, check=True)
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "copy"], cwd=target, check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path, shared_data):
    reason = missing()
    if reason:
        pytest.skip(reason)
    copy = tmp_path / "repo"
    fresh_copy(copy)
    settings = tmp_path / "settings"
    settings.mkdir()
    shutil.copy(
        ROOT / "tools" / "jupyterlab-overrides.json", settings / "overrides.json"
    )
    port = free_port()
    env = {
        **os.environ,
        "AT_DATA_DIR": str(shared_data),
        "AT_SCALE": "smoke",
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={port}",
        "--IdentityProvider.token=",
        f"--ServerApp.root_dir={copy / 'book'}",
        f"--LabApp.app_settings_dir={settings}",
        f"--LabApp.user_settings_dir={tmp_path / 'user-settings'}",
        f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
        f"--config={copy / 'tools' / 'jupyter_lab_config.py'}",
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
    ]
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(120):  # the server answers within a minute
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(
                f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()}"
            )
        yield f"http://127.0.0.1:{port}", copy
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def open_by_double_click(page, name: str):
    """Double-click a file in the file browser; the notebook panel it opens."""
    page.locator(".jp-DirListing-item", has_text=name).first.dblclick()
    panel = page.locator(".jp-NotebookPanel:visible")
    panel.wait_for(timeout=60_000)
    # JupyterLab may ask which kernel to start, its choice (Python 3) already selected
    select = page.locator(".jp-Dialog .jp-mod-accept", has_text="Select")
    try:
        select.wait_for(timeout=10_000)
        select.click()
    except PlaywrightTimeout:
        pass
    # the kernel has started before anything runs
    page.wait_for_function(
        "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-Notebook-ExecutionIndicator')?.getAttribute('data-status') === 'idle'",
        timeout=120_000,
    )
    return panel


def unfold_all(page) -> None:
    """View → Expand All Code, then Expand All Outputs: a folded cell shows neither its
    prompt nor an error, and the run is read from both."""
    for item in ("Expand All Code", "Expand All Outputs"):
        page.locator(".lm-MenuBar-itemLabel", has_text="View").first.click()
        page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def run_all(page) -> None:
    """Run → Run All Cells, then wait until every code cell has run and the kernel is
    idle, or until a cell has failed (Run All stops there)."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function(
        """() => {
          const nb = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
          if (nb.querySelector("[data-mime-type='application/vnd.jupyter.error']")) {
            return true;
          }
          const prompts = [...nb.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
          const status = nb.querySelector('.jp-Notebook-ExecutionIndicator');
          return prompts.length > 0
            && prompts.every(p => /\\[\\d+\\]/.test(p.textContent))
            && status && status.getAttribute('data-status') === 'idle';
        }""",
        timeout=RUN_SECONDS * 1000,
    )


def save(page) -> None:
    """File → Save, and wait until the tab no longer shows unsaved changes."""
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty')",
        timeout=60_000,
    )


def rendered_text(panel) -> str:
    return "\n".join(panel.locator(".jp-MarkdownCell").all_inner_texts())


def close_and_shut_down(page) -> None:
    """File → Close and Shut Down Notebook, confirmed: no kernel outlives its page."""
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Close and Shut Down Notebook").click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.locator(".jp-NotebookPanel:visible").wait_for(state="detached", timeout=60_000)


def git_status(copy: Path) -> str:
    command = ["git", "status", "--porcelain"]
    return subprocess.run(command, cwd=copy, capture_output=True, text=True).stdout


def folded_inputs(chapter: Path) -> int:
    """How many code cells of a chapter the book hides the input of."""
    import jupytext
    from lab_contents import HIDDEN

    hides = {tag for tag, (source, _) in HIDDEN.items() if source}
    return sum(
        cell.cell_type == "code" and bool(hides & set(cell.metadata.get("tags", [])))
        for cell in jupytext.read(chapter).cells
    )


def problems_before_running(panel, chapter: Path) -> list[str]:
    """What a reader must not see on a page that has not run yet."""
    found = []
    folded = panel.locator(".jp-InputPlaceholder")
    if folded.count() != folded_inputs(chapter):
        found.append(f"{folded.count()} cells folded, {folded_inputs(chapter)} hidden")
    text = rendered_text(panel)
    if "glued." in text:
        found.append("a variable's name where a number will go")
    if panel.locator("[title='Citation Not Found']").count():
        found.append("a citation shown as its bare key")
    if any(f.get_attribute("open") is not None for f in panel.locator("details").all()):
        found.append("a dropdown open")
    if chapter.name.endswith("_solutions.md"):
        # a folded cell shows its first line: it names the exercise, not the answer
        for line in folded.all_inner_texts():
            if not line.strip().startswith("# Solution to exercise"):
                found.append(f"answer code above its fold: {line.strip()!r}")
    return found


def problems_after_running(panel) -> list[str]:
    found = []
    if panel.locator("[data-mime-type='application/vnd.jupyter.error']").count():
        found.append("an error output")
    text = rendered_text(panel)
    for source in ("{glue", "{eval}", "glued.", "```{", ":::{", "{cite"):
        if source in text:
            found.append(f"{source!r} in the rendered text")
    return found


@pytest.mark.slow
def test_every_page_runs_in_jupyterlab_and_saves_as_it_was(lab):
    from playwright.sync_api import sync_playwright

    url, copy = lab
    pages = [p.name for p in sorted((copy / "book").glob("[0-9][0-9]_*.md"))]
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=find_chromium(), args=["--no-sandbox"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        # nothing but the local server is reached
        outside = []

        def only_local(route):
            if route.request.url.startswith(url):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        page.route("**/*", only_local)
        page.goto(f"{url}/lab?reset")
        page.locator(".jp-DirListing-item").first.wait_for(timeout=120_000)
        # the launcher lists the kernel once JupyterLab knows it: a notebook opened
        # before that asks which kernel to start
        page.locator(".jp-LauncherCard", has_text="Python 3").first.wait_for(
            timeout=120_000
        )
        listed = page.locator(".jp-DirListing-itemText").all_inner_texts()
        assert set(pages) <= set(listed)
        assert not any(name.endswith(".ipynb") for name in listed)  # twins hidden

        # opened and read: the kernel's start marks the page changed; saved, it is
        # written back as it was
        open_by_double_click(page, pages[0])
        save(page)
        assert git_status(copy) == ""
        close_and_shut_down(page)

        for name in pages:
            panel = open_by_double_click(page, name)
            found = problems_before_running(panel, copy / "book" / name)
            if name == "04_attention_solutions.md":
                page.screenshot(path=str(SHOTS / "04-solutions-before-run.png"))
            unfold_all(page)
            try:
                run_all(page)
            except PlaywrightTimeout:
                found.append(f"Run All did not finish in {RUN_SECONDS} s")
            else:
                found += problems_after_running(panel)
            if found:
                page.screenshot(path=str(SHOTS / f"{name[:-3]}-problem.png"))
                problems[name] = found
            save(page)
            close_and_shut_down(page)
        browser.close()
    assert outside == []
    assert problems == {}
    # every page was saved after it ran: each came back as it was
    assert git_status(copy) == ""
