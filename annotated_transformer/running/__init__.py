"""Running training: the loop (``trainer``), the run folder and its checkpoints
(``run_folder``, ``checkpoints``), loading a trained model (``loading``), the data a
run trains on and its set-up (``run_data``), files written safely and the run's lock
(``files``), the metrics log (``metrics``), many processes (``processes``), the device
and its threads (``devices``), and a run's recipe and its band (``recipes``)."""
