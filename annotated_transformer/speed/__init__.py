"""The fast paths of the performance appendix: the one decision (``choice``), batches
shaped for the compiler or packed (``batchers``), the token store (``token_store``),
the loss in chunks (``loss_chunks``) and the CTranslate2 export (``ct2``). Each
computes what the chapters' plain code computes, and is tested equal to it."""
