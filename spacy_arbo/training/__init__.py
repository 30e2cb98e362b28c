"""Training the retriever: objectives' maths, positive selection, negatives and batches."""
