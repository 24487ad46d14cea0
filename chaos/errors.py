"""The one exception type that means "the user asked for something we cannot do".

The CLI turns it into a single line on stderr and exit status 2; nothing else should.
"""


class UsageError(Exception):
    """Bad input or a missing prerequisite; the message says what was wrong and how to fix it."""
