"""Python client of the Submission Service: `from submission_service import Client, AsyncClient`."""
from ._common import END_STATES, Event
from .async_client import AsyncClient
from .client import Client
from .errors import (
    ApiError,
    AuthenticationError,
    ConflictError,
    IdempotencyKeyReusedError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    SubmissionServiceError,
    TransportError,
    UnavailableError,
    UnprocessableError,
    UnschedulableError,
    ValidationError,
    WaitTimeout,
)

__all__ = [
    "Client", "AsyncClient", "Event", "END_STATES",
    "SubmissionServiceError", "ApiError", "ValidationError", "AuthenticationError", "PermissionDeniedError",
    "NotFoundError", "ConflictError", "UnprocessableError", "UnschedulableError", "IdempotencyKeyReusedError",
    "RateLimitedError", "UnavailableError", "TransportError", "WaitTimeout",
]
