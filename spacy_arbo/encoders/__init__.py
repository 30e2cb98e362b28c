"""Mention and entity encoders: input templates, towers, and the dual encoder."""
