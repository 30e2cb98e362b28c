"""The multi cross-encoder reranker: input packing, the cross-encoder, the spaCy component."""
