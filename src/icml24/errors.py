"""The few exception types a user of icml24 sees.

Every error carries a short message (what went wrong) and an optional hint (what to do about it). The
command line prints them as one line, ``error: <message> (<hint>)``, and exits with status 2.
"""

from __future__ import annotations


class ICML24Error(Exception):
    """Base class of every error icml24 raises on purpose."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def one_line(self) -> str:
        """The message and hint on a single line, as the CLI prints it."""
        return " ".join(str(self).split())


class InputError(ICML24Error, ValueError):
    """An argument has the wrong type, shape, range or value. The message names the argument."""


class DataUnavailable(ICML24Error, FileNotFoundError):
    """A data set's files are not under the data root. The message names the files and the folder."""


class DataError(ICML24Error):
    """A data set's files are present but unreadable (corrupt, truncated, wrong format)."""


class RunDirError(ICML24Error):
    """A run directory cannot be used (missing files, unreadable results); it is never overwritten."""


class ClaimError(ICML24Error):
    """A claim broke the protocol: its run returned malformed metrics or lacks a declared metric."""


__all__ = ["ICML24Error", "InputError", "DataUnavailable", "DataError", "RunDirError", "ClaimError"]
