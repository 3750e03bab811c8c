"""What Client and AsyncClient share about the wire: channel options
(message limits, keepalive), the diffusiond-model routing header, and the
retry policy with its deadline bookkeeping.
"""

import dataclasses
import random
import time
from typing import Any, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import quote

import grpc

DEFAULT_MAX_MESSAGE_BYTES = 256 << 20  # the daemon's --max_message_bytes default

MODEL_HEADER = "diffusiond-model"
"""Metadata key naming the model a call concerns, so that a proxy in front of
several daemons can route it to the one holding that model."""

# The daemon keeps gRPC's default ping policy, which answers a ping more often
# than every 5 minutes on an idle connection with GOAWAY (too_many_pings). So
# ping every 5 minutes: that still notices a half-open connection (NAT or load
# balancer timeouts, a vanished pod) during a long, silent Step or load, and
# fails the call after 20 s without an answer.
KEEPALIVE_OPTIONS: Tuple[Tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", 300_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
)


def channel_options(max_message_bytes: int, options: Sequence[Tuple[str, Any]]) -> List[Tuple[str, Any]]:
    """The options of a client's channel; entries of ``options`` come last
    and so override the defaults."""
    return [("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes), *KEEPALIVE_OPTIONS, *options]


def metadata(model_id: Optional[str], auth: Optional[Tuple[str, str]] = None) -> Optional[Tuple[Tuple[str, str], ...]]:
    """The call metadata: the diffusiond-model header for a model-scoped call,
    and ``auth`` (the authorization entry, auth.TokenSource.header()).

    Header values must be printable ASCII, so the id is percent-encoded as a
    URL path would be (ids and relative paths pass unchanged)."""
    entries = [] if auth is None else [auth]
    if model_id:
        entries.append((MODEL_HEADER, quote(model_id, safe="/:@+-._~=,")))
    return tuple(entries) or None


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retries of idempotent calls that fail with UNAVAILABLE (a daemon
    restarting or draining, a connection dropped): up to ``attempts`` tries in
    all, waiting ``initial_backoff`` seconds, then ``multiplier`` times more
    each time up to ``max_backoff``, each wait jittered down by up to half so
    clients that failed together do not return together. The per-call
    deadline spans every attempt and wait. ``RetryPolicy(attempts=1)`` turns
    retries off."""

    attempts: int = 4
    initial_backoff: float = 0.2
    max_backoff: float = 5.0
    multiplier: float = 2.0

    def delays(self) -> Iterator[float]:
        delay = self.initial_backoff
        while True:
            yield delay * random.uniform(0.5, 1.0)
            delay = min(delay * self.multiplier, self.max_backoff)


class Attempts:
    """The tries of one logical call: how long the next may take, and whether
    (and after how long) a failure is worth another."""

    def __init__(self, policy: RetryPolicy, timeout: Optional[float], idempotent: bool) -> None:
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._left = max(1, policy.attempts) if idempotent else 1
        self._delays = policy.delays()

    def timeout(self) -> Optional[float]:
        """Seconds left for the next try (None: no deadline)."""
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def backoff(self, error: grpc.RpcError) -> Optional[float]:
        """Seconds to wait before trying again after ``error``, or None to give up."""
        self._left -= 1
        if self._left <= 0 or error.code() != grpc.StatusCode.UNAVAILABLE:
            return None
        delay = next(self._delays)
        if self._deadline is not None and time.monotonic() + delay >= self._deadline:
            return None
        return delay
