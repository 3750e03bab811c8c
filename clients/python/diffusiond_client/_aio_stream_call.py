"""asyncio server-streaming calls whose events are progress followed by
their results (one; a Generate's images, one per image asked for):
LoadModel, Denoise and Generate for AsyncClient; and AsyncEventWatch, the
open-ended WatchEvents stream.

Cancelling the task that iterates (or awaits result()) cancels the RPC, so
the daemon stops work nobody waits for; cancel() does the same from any
task, and the iteration then raises CancelledError (the DiffusiondError), as
in the blocking client.
"""

import asyncio
import inspect
from typing import cast, Any, AsyncIterator, Callable, Generic, List, Optional, Type, TypeVar

import grpc

from ._calls import Stream, Watch
from ._stream_call import check_image_count, gather_videos, missing_result
from .errors import CancelledError, from_rpc_error
from .results import CacheEvent, DenoiseStep, GenerateProgress, Image, Video, VideoFrame
from .tensor import WireTensor

R = TypeVar("R")


class AsyncStreamCall(Generic[R]):
    """Iterates a running grpc.aio stream: progress events and the results (type R)."""

    def __init__(self, call: Any, spec: "Stream[R]") -> None:
        self._call = call
        self._spec = spec
        self._cancelled = False

    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for event in self._call:
                kind = event.WhichOneof("event")
                if kind in self._spec.converters:
                    yield self._spec.converters[kind](getattr(event, kind))
        except grpc.RpcError as e:
            raise from_rpc_error(e, self._spec.label) from e
        except asyncio.CancelledError:
            if self._cancelled:  # by cancel(), not by cancelling this task
                raise CancelledError(grpc.StatusCode.CANCELLED, "cancelled by the client", self._spec.label) from None
            self._call.cancel()
            raise

    def cancel(self) -> bool:
        """Cancels the call; returns False if it had already finished."""
        self._cancelled = True
        return bool(self._call.cancel())

    async def code(self) -> grpc.StatusCode:
        """Returns the call's grpc.StatusCode once it finishes."""
        code: grpc.StatusCode = await self._call.code()
        return code

    async def results(self, on_event: Optional[Callable[[Any], object]] = None) -> List[R]:
        """Consumes the stream, calling ``on_event`` per progress event (a
        function or a coroutine function; if it raises, the call is cancelled
        and the exception propagates), and returns every result in the order
        received; DiffusiondError if the stream fails or ends without one."""
        finals: List[R] = []
        async for event in self:
            if isinstance(event, self._spec.final):
                finals.append(cast(R, event))
            elif on_event is not None:
                try:
                    outcome = on_event(event)
                    if inspect.isawaitable(outcome):
                        await outcome
                except BaseException:
                    self._call.cancel()
                    raise
        if not finals:
            raise missing_result(self._spec)
        return finals

    async def result(self, on_event: Optional[Callable[[Any], object]] = None) -> R:
        """As results(), returning the last result: the only one of a stream
        that ends with one."""
        return (await self.results(on_event))[-1]


class AsyncDenoiseCall(AsyncStreamCall[WireTensor]):
    """A running Denoise stream: ``async for`` DenoiseStep events and then
    the latents, or ``await result(on_step)``."""

    async def result(self, on_step: Optional[Callable[[DenoiseStep], object]] = None) -> WireTensor:
        """Consumes the stream and returns the final latents."""
        return await super().result(on_step)


class AsyncGenerateCall(AsyncStreamCall[Image]):
    """A running Generate stream: ``async for`` GenerateProgress events and
    the Images, each right after its decode; or ``await result(on_progress)``
    for one image, ``await images(on_progress)`` for all."""

    async def result(self, on_progress: Optional[Callable[[GenerateProgress], object]] = None) -> Image:
        """Consumes the stream and returns the (last) Image."""
        return await super().result(on_progress)

    async def images(self, on_progress: Optional[Callable[[GenerateProgress], object]] = None) -> List[Image]:
        """Consumes the stream and returns its Images in batch order;
        DiffusiondError if they are fewer or more than the request asked for."""
        return check_image_count(self._spec, await self.results(on_progress))


class AsyncVideoGenerateCall(AsyncStreamCall[Video]):
    """A running Generate stream of a video pipeline: ``async for``
    GenerateProgress events, VideoFrame events (video_format "png_frames")
    and the Videos; or ``await video(on_event)``, ``await videos(on_event)``."""

    async def videos(self, on_event: Optional[Callable[[Any], object]] = None) -> List[Video]:
        """Consumes the stream and returns its Videos in batch order, PNG
        frames gathered into each; ``on_event`` (a function or a coroutine
        function) gets the progress and frame events."""
        events: List[Any] = []
        async for event in self:
            if isinstance(event, (Video, VideoFrame)):
                events.append(event)
            if not isinstance(event, Video) and on_event is not None:
                try:
                    outcome = on_event(event)
                    if inspect.isawaitable(outcome):
                        await outcome
                except BaseException:
                    self._call.cancel()
                    raise
        return gather_videos(self._spec, events)

    async def video(self, on_event: Optional[Callable[[Any], object]] = None) -> Video:
        """As videos(), for a request of one video."""
        return (await self.videos(on_event))[-1]


class AsyncEventWatch:
    """A running WatchEvents stream: ``async for`` CacheEvents (a snapshot
    first) until the daemon ends it (UnavailableError on drain) or cancel()
    is called (or the ``async with`` block is left), which ends the
    iteration quietly. Cancelling the task that iterates cancels the RPC and
    raises asyncio.CancelledError in it, as for any awaitable."""

    def __init__(self, call: Any, spec: Watch) -> None:
        self._call = call
        self._spec = spec
        self._cancelled = False

    async def __aiter__(self) -> AsyncIterator[CacheEvent]:
        try:
            async for event in self._call:
                yield cast(CacheEvent, self._spec.convert(event))
        except grpc.RpcError as e:
            if self._cancelled and e.code() == grpc.StatusCode.CANCELLED:
                return
            raise from_rpc_error(e, self._spec.label) from e
        except asyncio.CancelledError:
            if self._cancelled:  # by cancel(), not by cancelling this task
                return
            self._call.cancel()
            raise

    def cancel(self) -> bool:
        """Ends the watch; returns False if it had already finished."""
        self._cancelled = True
        return bool(self._call.cancel())

    async def __aenter__(self) -> "AsyncEventWatch":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], *exc: object) -> None:
        self.cancel()
