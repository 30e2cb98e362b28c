"""Candidate retrieval: entity texts -> vectors -> index -> ranked candidates per mention."""
