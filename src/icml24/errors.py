"""The few exception types a user of icml24 sees.

Every error carries a short message (what went wrong) and an optional hint (what to do about it). The
command line prints them as one line, ``error: <message> (<hint>)``, and exits with status 2.
"""

from __future__ import annotations


class ICML24Error(Exception):
    """Base class of every error icml24 raises on purpose.

    ``str(error)`` is ``"<message> (<hint>)"``, or just the message when there is no hint.

    Parameters
    ----------
    message : str
        What went wrong.
    hint : str, optional
        What to do about it.

    Attributes
    ----------
    message : str
        The message, as given.
    hint : str or None
        The hint, as given.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message

    def one_line(self) -> str:
        """Return the message and hint on a single line, as the CLI prints it.

        Returns
        -------
        str
            ``str(self)`` with every run of whitespace (newlines included) collapsed to one space.
        """
        return " ".join(str(self).split())


class InputError(ICML24Error, ValueError):
    """An argument has the wrong type, shape, range or value.

    Also a :class:`ValueError`, so callers that catch ``ValueError`` keep working.

    Parameters
    ----------
    message : str
        What is wrong; it names the argument.
    hint : str, optional
        What to pass instead.
    """


class PrerequisiteMissing(ICML24Error):
    """Something a run needs is missing here: a data set, a GPU, memory.

    ``icml24 verify`` records a claim whose experiment raises it as **not run** (with this one-line reason),
    never as a failure: it says nothing about the method.

    Parameters
    ----------
    message : str
        What is missing.
    hint : str, optional
        How to get it.
    """


class DataUnavailable(PrerequisiteMissing, FileNotFoundError):
    """A data set's files are not under the data root.

    Also a :class:`FileNotFoundError`, so callers that catch it keep working. A
    :class:`PrerequisiteMissing`: a claim that raises it is not run.

    Parameters
    ----------
    message : str
        What is missing; it names the files and the folder.
    hint : str, optional
        Where to get the files or how to point at them.
    """


class DataError(ICML24Error):
    """A data set's files are present but unreadable (corrupt, truncated, wrong format).

    Parameters
    ----------
    message : str
        Which file could not be read, and why.
    hint : str, optional
        What to do about it (usually: replace the file).
    """


class RunDirError(ICML24Error):
    """A run directory cannot be used (missing files, unreadable results); it is never overwritten.

    Parameters
    ----------
    message : str
        Which run directory, and what is wrong with it.
    hint : str, optional
        What to do about it.
    """


class ClaimError(ICML24Error):
    """A claim broke the protocol: its run returned malformed metrics or lacks a declared metric.

    Parameters
    ----------
    message : str
        Which claim, and how it broke the protocol.
    hint : str, optional
        What to do about it.
    """


__all__ = [
    "ICML24Error",
    "InputError",
    "PrerequisiteMissing",
    "DataUnavailable",
    "DataError",
    "RunDirError",
    "ClaimError",
]
