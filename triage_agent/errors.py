"""The one exception type the CLI turns into a one-line message and a non-zero exit."""


class TriageError(Exception):
    """A problem the user can fix (bad path, bad config, unreachable endpoint).

    `exit_code` follows the CLI contract: 2 for bad input, 3 for endpoint trouble.
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
