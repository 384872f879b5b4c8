"""The one exception type that means "the user gave us bad input".

The CLI turns it into a single line on stderr and exit status 2; everything else is a bug
and keeps its traceback.
"""


class InputError(Exception):
    """Bad input: a missing or malformed file, an unknown option value, an impossible request.

    The message should name the file (and line, where there is one), e.g.
    ``topology.txt:3: expected 'src dst rate delay error_rate'``.
    """
