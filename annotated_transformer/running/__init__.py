"""Running training: the loop (``trainer``), the run folder with its lock, checkpoints
and metrics (``run_folder``, ``checkpoints``, ``metrics``), the data a run trains on
(``run_data``), files written safely (``files``), many processes (``processes``), the
device and its threads (``devices``), and a run's recipe (``recipes``)."""
