"""Linking inference over the mention graph: clustering, NIL discovery, coreference scores."""
