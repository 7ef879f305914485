"""What the figures need beyond the model: measures of attention drawn in the results
chapters (``diagnostics``)."""
