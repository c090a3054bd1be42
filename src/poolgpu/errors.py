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
        super().__init__(f"{field}: {message}")


class DeviceError(RuntimeError):
    """No adapter, a lost device, out of memory, or a tensor too large for the device;
    the message says what to do about it."""
