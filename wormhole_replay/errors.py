"""The one exception type that means "the user gave us bad input".

The CLI turns it into a single line on stderr and exit status 2; everything else is a bug
and keeps its traceback.
"""


class InputError(Exception):
    """Bad input: a missing or malformed file, an unknown option value, an impossible request.

    The message should name the file (and line, where there is one), e.g.
    ``topology.txt:3: expected 'src dst rate delay error_rate'``.
    """


def read_input_text(path, what: str = "file") -> str:
    """The text of an input file, or an ``InputError`` saying plainly why it cannot be read
    (``flow.txt: no such flow file``, ``...: not a text file``)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except (IsADirectoryError, NotADirectoryError):
        raise InputError(f"{path}: not a {what} (a folder?)") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None


class InputWarning(UserWarning):
    """Input read, but not all of it: fields this program does not know (a newer or older
    exporter's), ignored.  Importers give one per file, naming them; the CLI prints each as one
    line on stderr."""


def warn_input(message: str) -> None:
    import warnings

    warnings.warn(message, InputWarning, stacklevel=3)
