"""Errors a SCOT node raises to its clients (the HTTP API maps them; see ``p2pubsub.api.app.ERROR_CODES``)."""

from __future__ import annotations

from typing import Any

from ..api.service import ServiceError, ServiceUnavailable, UnknownSchema
from ..model import ValidationError


class NodeError(ServiceUnavailable):
    """A command could not be carried out now (not joined, standby, timed out, stopped): the API answers 503."""


class CommandRejected(ServiceError):
    """The broker core refused a client command; ``code`` is the core's, ``status`` the HTTP status."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


# core rejection code -> HTTP status; codes the node never provokes (duplicate_id, not_owner) are bugs
_STATUS = {"no_advertisement": 409, "unsatisfiable": 400}


def rejection(rejected: Any) -> Exception:
    """The exception for a core's ``Rejected`` action."""
    code, reason = rejected.code, rejected.reason
    if code == "unknown_schema":
        return UnknownSchema(rejected.command.filter.schema if hasattr(rejected.command, "filter") else "?")
    if code == "invalid_filter":
        return ValidationError("invalid_filter", reason, "filter")
    if code in _STATUS:
        return CommandRejected(code, reason, _STATUS[code])
    return RuntimeError(f"the broker core refused a command the node built: {code}: {reason}")


__all__ = ["CommandRejected", "NodeError", "rejection"]
