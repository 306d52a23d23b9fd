"""Errors carrying the service's JSON answer: `error.body` is what the service said."""
from typing import Any, Dict, List, Optional


class SubmissionServiceError(Exception):
    """Base of every error this client raises."""


class TransportError(SubmissionServiceError):
    """The service could not be reached (after the retries that were safe)."""


class WaitTimeout(SubmissionServiceError, TimeoutError):
    """wait() reached its timeout before the application ended."""


class ApiError(SubmissionServiceError):
    """An error answer: `status`, and `body` (the service's JSON, `{"message": ...}` at least)."""

    def __init__(self, status: int, body: Dict[str, Any]):
        self.status = status
        self.body = body
        self.message: str = str(body.get("message", "")) or "HTTP %d" % status
        self.code: Optional[str] = body.get("code")
        super().__init__("%d: %s" % (status, self.message))


class ValidationError(ApiError):
    """400: the request is invalid; `field` names the offending field when the service knows it."""

    @property
    def field(self) -> Optional[str]:
        return self.body.get("field")


class AuthenticationError(ApiError):
    """401: no key, or an unknown one."""


class PermissionDeniedError(ApiError):
    """403: the key may not do this."""


class NotFoundError(ApiError):
    """404."""


class ConflictError(ApiError):
    """409: e.g. a template name that is taken."""


class UnprocessableError(ApiError):
    """422 other than an unschedulable application."""


class IdempotencyKeyReusedError(UnprocessableError):
    """422: the Idempotency-Key was used with another request body."""


class UnschedulableError(UnprocessableError):
    """422: a pod of the application fits no node pool. `pools`: the node pools that were available."""

    @property
    def advice(self) -> str:
        return str(self.body.get("advice", ""))

    @property
    def pools(self) -> List[Dict[str, Any]]:
        seen: Dict[str, Dict[str, Any]] = {}
        for role in ("driver", "executor"):
            for pool in (self.body.get(role) or {}).get("availableNodePools", []):
                seen.setdefault(pool.get("instanceName", str(len(seen))), pool)
        return list(seen.values())


class RateLimitedError(ApiError):
    """429: the key holds its cap (submissions per minute, applications or streams at once)."""


class UnavailableError(ApiError):
    """5xx: the service or its cluster is unavailable."""


_BY_STATUS = {400: ValidationError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
              409: ConflictError, 429: RateLimitedError}


def error_for(status: int, body: Any) -> ApiError:
    """The exception for an error answer (body: the parsed JSON, or the text when it was not JSON)."""
    data: Dict[str, Any] = body if isinstance(body, dict) else {"message": str(body or "")}
    if status == 422:
        if data.get("code") == "IDEMPOTENCY_KEY_REUSED":
            return IdempotencyKeyReusedError(status, data)
        if "advice" in data or "driver" in data or "executor" in data:
            return UnschedulableError(status, data)
        return UnprocessableError(status, data)
    if status >= 500:
        return UnavailableError(status, data)
    return _BY_STATUS.get(status, ApiError)(status, data)
