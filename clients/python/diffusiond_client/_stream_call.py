"""A server-streaming call whose events are progress followed by one final
result: the shared mechanics of DenoiseCall and GenerateCall."""

import grpc

from .errors import DiffusiondError, from_rpc_error


class StreamCall:
    """Iterates a stream of oneof events, converting each kind with
    ``converters`` (kind -> from_proto); ``final_kind`` names the result."""

    def __init__(self, call, method, converters, final_kind):
        self._call = call
        self._method = method
        self._converters = converters
        self._final_kind = final_kind

    def __iter__(self):
        try:
            for event in self._call:
                kind = event.WhichOneof("event")
                if kind in self._converters:
                    yield self._converters[kind](getattr(event, kind))
        except grpc.RpcError as e:
            raise from_rpc_error(e, self._method) from e

    def cancel(self):
        """Cancels the call; returns False if it had already finished."""
        return self._call.cancel()

    def code(self):
        """Returns the call's grpc.StatusCode (blocks until it finishes)."""
        return self._call.code()

    def _result(self, on_event, final_type):
        """Consumes the stream, calling ``on_event`` per progress event (if it
        raises, the call is cancelled and the exception propagates), and
        returns the final result; DiffusiondError if the stream fails or ends
        without one."""
        final = None
        for event in self:
            if isinstance(event, final_type):
                final = event
            elif on_event is not None:
                try:
                    on_event(event)
                except BaseException:
                    self._call.cancel()
                    raise
        if final is None:
            raise DiffusiondError(grpc.StatusCode.INTERNAL, f"the stream ended without {self._final_kind}",
                                  self._method)
        return final
