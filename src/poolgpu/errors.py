"""The two exceptions of the public contract."""


class ValidationError(ValueError):
    """A description (or a call's tensors) that DirectML would reject or that breaks a rule
    of the contract.  Raised before any GPU work; the message names the offending field."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class DeviceError(RuntimeError):
    """No adapter, a lost device, out of memory, or a tensor too large for the device;
    the message says what to do about it."""
