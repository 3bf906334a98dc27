"""The one error type of the content model: a code a program can branch on and a message a person can read."""

from __future__ import annotations


class ValidationError(ValueError):
    """Bad input: an unknown schema or attribute, a wrong type, a value outside its domain, ...

    ``code`` is stable and machine readable (the HTTP API returns it); ``path`` names the offending
    field, e.g. ``"filter.price.ge"``.
    """

    def __init__(self, code: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path

    def to_dict(self) -> dict[str, str]:
        out = {"code": self.code, "message": self.message}
        if self.path is not None:
            out["path"] = self.path
        return out
