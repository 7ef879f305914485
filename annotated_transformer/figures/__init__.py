"""Attention from the model to the page: weights read by hooks (``capture``), stored
(``store``), drawn (``views``), measured as Figures 3–5 measure them (``measures``),
checked on a planted pattern (``instrument``), shown in the offline explorer
(``explorer``), and the diagnostics a run logs (``diagnostics``)."""
