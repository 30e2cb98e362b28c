"""The jinja2 templates of the HTML pages (package data, listed in setup.cfg)."""
