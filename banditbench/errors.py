"""Errors a user can fix. The CLI prints them as one line and exits non-zero."""


class UserError(Exception):
    """Bad input: an unknown name, a missing dataset, an unusable path or value."""
