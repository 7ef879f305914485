# Run by every kernel of the book's build: the Makefile copies it into the build's
# IPython startup folder. A page starts at as many threads as there are cores that no
# other program keeps busy (unless OMP_NUM_THREADS fixes the count), as `translate`
# does: on a busy machine PyTorch's default, one thread per core, makes every thread
# wait for the core another program holds. A page that trains then times its thread
# counts from there, as `train` does.
from annotated_transformer.running.devices import decoding_threads

decoding_threads("cpu", 0)
del decoding_threads
