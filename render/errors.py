"""The few errors the CLI turns into one-line messages and exit codes."""


class BoidsError(Exception):
    """Base of every error the CLI reports without a traceback."""

    exit_code = 1


class SceneError(BoidsError):
    """One or more problems in a scene file or its overrides.

    `problems` holds one line per problem, each already of the form
    ``FILE: section.key: expected …, got …``.
    """

    exit_code = 2

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class UsageError(BoidsError):
    """A command-line option that cannot be honoured."""

    exit_code = 2


class EncodeError(BoidsError):
    """ffmpeg failed or wrote something other than what was asked."""
