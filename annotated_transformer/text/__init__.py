"""Text in and out: the corpora, where they are found, read and downloaded
(``corpora``), and scoring translations with sacreBLEU (``scoring``)."""
