"""Exceptions raised by the client: one class per gRPC status code.

Every failed call raises a subclass of DiffusiondError carrying the gRPC
``code`` (a grpc.StatusCode) and the daemon's ``details`` message, with the
original grpc.RpcError as ``__cause__``. Catch the specific class
(ResourceExhaustedError when a model does not fit the RAM budget) or
DiffusiondError for all of them.
"""

from typing import Any, Dict, Type, Union

import grpc


class DiffusiondError(Exception):
    """A call to the daemon failed with a gRPC status."""

    def __init__(self, code: Union[grpc.StatusCode, Any], details: str, method: str = "") -> None:
        self.code = code
        self.details = details or ""
        self.method = method
        name = code.name if isinstance(code, grpc.StatusCode) else str(code)
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{name}: {self.details}")


class InvalidArgumentError(DiffusiondError):
    """A bad tensor, option or path (INVALID_ARGUMENT)."""


class NotFoundError(DiffusiondError):
    """The model is not loaded, or the path does not exist (NOT_FOUND)."""


class PermissionDeniedError(DiffusiondError):
    """The path lies outside the daemon's models directory, or the caller's
    role does not allow the call (PERMISSION_DENIED)."""


class UnauthenticatedError(DiffusiondError):
    """The daemon checks callers and this one sent no token or certificate it
    knows (UNAUTHENTICATED)."""


class ResourceExhaustedError(DiffusiondError):
    """The RAM/VRAM budget cannot admit the request (RESOURCE_EXHAUSTED)."""


class FailedPreconditionError(DiffusiondError):
    """The model is in use, loaded differently, or the checkpoint is bad (FAILED_PRECONDITION)."""


class CancelledError(DiffusiondError):
    """The call was cancelled, by this client or the daemon (CANCELLED)."""


class DeadlineExceededError(DiffusiondError):
    """The call's deadline passed (DEADLINE_EXCEEDED)."""


class UnavailableError(DiffusiondError):
    """The daemon is unreachable or draining (UNAVAILABLE)."""


_BY_CODE: Dict[grpc.StatusCode, Type[DiffusiondError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.CANCELLED: CancelledError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
}


def from_rpc_error(error: Any, method: str = "") -> DiffusiondError:
    """Returns the DiffusiondError subclass for a grpc.RpcError (not raised)."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return _BY_CODE.get(code, DiffusiondError)(code, details or "", method)
