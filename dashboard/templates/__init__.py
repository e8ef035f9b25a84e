"""Jinja templates (a package only so that they install with it)."""
