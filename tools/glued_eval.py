"""A Sphinx extension: ``{eval}`glued.NAME``` in a page's prose shows the value that
the page's cells kept under NAME with ``annotated_transformer.book.pages.glue``, as
myst-nb's ``{glue:md}`NAME``` would.

JupyterLab, with jupyterlab-myst, evaluates the same role in the running kernel, where
``glued.NAME`` is that value too; myst-nb evaluates ``{eval}`` only when it executes
pages inline, and the book executes them with a cache instead. So the HTML build reads
the role as a glue reference, and one sentence reads the same in both places."""

from myst_nb.ext.glue.roles import PasteMarkdownRole
from myst_nb.ext.glue.utils import glue_warning

PREFIX = "glued."


class GluedRole(PasteMarkdownRole):
    """``{eval}`glued.NAME```: the Markdown glued under NAME, inline."""

    def run(self):
        if (
            not self.text.startswith(PREFIX)
            or not self.text[len(PREFIX) :].isidentifier()
        ):
            return [], [
                glue_warning(
                    f"{{eval}}`{self.text}`: the book reads only {{eval}}`glued.NAME`",
                    self.document,
                    self.line,
                )
            ]
        self.text = self.text[len(PREFIX) :]
        return super().run()


def setup(app):
    # after myst-nb, whose own eval role needs inline execution
    app.setup_extension("myst_nb")
    app.add_role("eval", GluedRole(), override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
