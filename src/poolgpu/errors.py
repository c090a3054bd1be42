"""poolgpu's two exceptions: ValidationError (bad input) and DeviceError (the device)."""

__all__ = ["ValidationError", "DeviceError"]


class ValidationError(ValueError):
    """A description (or a call's tensors) that DirectML would reject or that breaks a rule
    of docs/semantics.md.  Raised before any GPU work; the message names the offending field.

    Parameters
    ----------
    field : str
        The offending field or argument (e.g. ``"window_size"``, ``"output.sizes"``); kept
        as ``e.field``.
    message : str
        What was expected; the message is ``f"{field}: {message}"``.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")

    def renamed(self, field: str, prefix: str = "") -> "ValidationError":
        """The same error naming ``field`` instead (e.g. a front end's argument for a
        description's field), its reason after ``prefix``.

        Parameters
        ----------
        field : str
            The field or argument the new error names.
        prefix : str, default ""
            Put before the reason (e.g. ``"max_pool2d: "``).

        Returns
        -------
        ValidationError
        """
        return ValidationError(field, prefix + self.reason)


class DeviceError(RuntimeError):
    """No adapter, a lost device, out of memory, or a tensor too large for the device;
    the message says what to do about it."""
