"""The exception raised for every runtime error. Imported by ``_C`` itself, so
it must not import anything else from this package."""

__all__ = ["OpenRegError"]


class OpenRegError(RuntimeError):
    """A libopenreg call failed.

    ``code`` is the ``orError_t`` value and ``name`` its enumerator name
    (``"orErrorInvalidDevice"``); the message is the runtime's detailed one.
    """

    def __init__(self, message: str, code: int, name: str):
        super().__init__(message)
        self.code = code
        self.name = name

    def __reduce__(self):
        return (type(self), (str(self), self.code, self.name))
