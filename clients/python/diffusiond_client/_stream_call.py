"""Blocking server-streaming calls whose events are progress followed by
their results (one; a Generate's images, one per image asked for):
LoadModel, Denoise and Generate for Client; and EventWatch, the open-ended
WatchEvents stream.

The asyncio counterparts are in _aio_stream_call.py; what the events are and
how they convert is in the _calls.Stream both take.
"""

import dataclasses
from typing import cast, Any, Callable, Dict, Generic, Iterator, List, Optional, Type, TypeVar

import grpc

from . import pipeline as _pipeline
from ._calls import Stream, Watch
from .errors import DiffusiondError, from_rpc_error
from .results import CacheEvent, DenoiseStep, GenerateProgress, Image, Video, VideoFrame
from .tensor import WireTensor

R = TypeVar("R")


def missing_result(spec: "Stream[Any]") -> DiffusiondError:
    """The error for a stream that ended without its result."""
    return DiffusiondError(grpc.StatusCode.INTERNAL, f"the stream ended without {spec.final_kind}", spec.label)


def check_image_count(spec: "Stream[Any]", images: List[Image]) -> List[Image]:
    """Returns ``images`` if the Generate of ``spec`` sent as many as it asked
    for; DiffusiondError otherwise (a daemon older than
    num_images_per_prompt sends one)."""
    expected = _pipeline.images_expected(spec.request)
    if len(images) != expected:
        raise DiffusiondError(grpc.StatusCode.INTERNAL,
                              f"the stream ended after {len(images)} of {expected} images", spec.label)
    return images


def gather_videos(spec: "Stream[Any]", events: List[Any]) -> List[Video]:
    """The Videos among a video Generate's ``events``, in batch order, each
    with the PNG frames that came before it; DiffusiondError when they are
    fewer or more than the request asked for, or a video's frames are not
    its announced count."""
    frames: Dict[int, List[bytes]] = {}
    videos: List[Video] = []
    for event in events:
        if isinstance(event, VideoFrame):
            frames.setdefault(event.index, []).append(event.png)
        elif isinstance(event, Video):
            pngs = tuple(frames.pop(event.index, []))
            if pngs and len(pngs) != event.frames:
                raise DiffusiondError(grpc.StatusCode.INTERNAL, f"video {event.index} came with {len(pngs)} "
                                      f"of its {event.frames} frames", spec.label)
            videos.append(dataclasses.replace(event, frame_pngs=pngs))
    expected = _pipeline.images_expected(spec.request)
    if len(videos) != expected:
        raise DiffusiondError(grpc.StatusCode.INTERNAL,
                              f"the stream ended after {len(videos)} of {expected} videos", spec.label)
    return videos


class StreamCall(Generic[R]):
    """Iterates a running stream: progress events and the results (type R)."""

    def __init__(self, call: Any, spec: "Stream[R]") -> None:
        self._call = call
        self._spec = spec

    def __iter__(self) -> Iterator[Any]:
        try:
            for event in self._call:
                kind = event.WhichOneof("event")
                if kind in self._spec.converters:
                    yield self._spec.converters[kind](getattr(event, kind))
        except grpc.RpcError as e:
            raise from_rpc_error(e, self._spec.label) from e

    def cancel(self) -> bool:
        """Cancels the call from any thread; returns False if it had already finished."""
        return bool(self._call.cancel())

    def code(self) -> grpc.StatusCode:
        """Returns the call's grpc.StatusCode (blocks until it finishes)."""
        return self._call.code()

    def results(self, on_event: Optional[Callable[[Any], object]] = None) -> List[R]:
        """Consumes the stream, calling ``on_event`` per progress event (if it
        raises, the call is cancelled and the exception propagates), and
        returns every result in the order received; DiffusiondError if the
        stream fails or ends without one."""
        finals: List[R] = []
        for event in self:
            if isinstance(event, self._spec.final):
                finals.append(cast(R, event))
            elif on_event is not None:
                try:
                    on_event(event)
                except BaseException:
                    self._call.cancel()
                    raise
        if not finals:
            raise missing_result(self._spec)
        return finals

    def result(self, on_event: Optional[Callable[[Any], object]] = None) -> R:
        """As results(), returning the last result: the only one of a stream
        that ends with one."""
        return self.results(on_event)[-1]


class DenoiseCall(StreamCall[WireTensor]):
    """A running Denoise stream.

    Iterate it for DenoiseStep events followed by the final latents (a
    WireTensor), or call result(on_step). cancel() may be called from any
    thread; the daemon stops within one step and the iteration then raises
    CancelledError.
    """

    def result(self, on_step: Optional[Callable[[DenoiseStep], object]] = None) -> WireTensor:
        """Consumes the stream and returns the final latents; ``on_step`` as
        StreamCall.result's ``on_event``."""
        return super().result(on_step)


class GenerateCall(StreamCall[Image]):
    """A running Generate stream.

    Iterate it for GenerateProgress events (load, evict, encode, each denoise
    step, decode) and the Images, each right after its decode, or call
    result(on_progress) for one image, images(on_progress) for all.
    cancel() may be called from any thread; the iteration then raises
    CancelledError.
    """

    def result(self, on_progress: Optional[Callable[[GenerateProgress], object]] = None) -> Image:
        """Consumes the stream and returns the (last) Image; ``on_progress``
        as StreamCall.results's ``on_event``."""
        return super().result(on_progress)

    def images(self, on_progress: Optional[Callable[[GenerateProgress], object]] = None) -> List[Image]:
        """Consumes the stream and returns its Images in batch order;
        DiffusiondError if they are fewer or more than the request asked for."""
        return check_image_count(self._spec, self.results(on_progress))


class VideoGenerateCall(StreamCall[Video]):
    """A running Generate stream of a video pipeline (Wan).

    Iterate it for GenerateProgress events, VideoFrame events (video_format
    "png_frames", each as it decodes) and the Videos, each after its last
    frame; or call video(on_event) for one video, videos(on_event) for all.
    ``on_event`` gets the progress and frame events. cancel() may be called
    from any thread; the iteration then raises CancelledError.
    """

    def _events(self, on_event: Optional[Callable[[Any], object]]) -> List[Any]:
        events: List[Any] = []
        for event in self:
            if isinstance(event, (Video, VideoFrame)):
                events.append(event)
            if not isinstance(event, Video) and on_event is not None:
                try:
                    on_event(event)
                except BaseException:
                    self._call.cancel()
                    raise
        return events

    def videos(self, on_event: Optional[Callable[[Any], object]] = None) -> List[Video]:
        """Consumes the stream and returns its Videos in batch order, PNG
        frames gathered into each; DiffusiondError if they are fewer or more
        than the request asked for."""
        return gather_videos(self._spec, self._events(on_event))

    def video(self, on_event: Optional[Callable[[Any], object]] = None) -> Video:
        """As videos(), for a request of one video."""
        return self.videos(on_event)[-1]


class EventWatch:
    """A running WatchEvents stream: iterate it for CacheEvents (a snapshot
    first) until the daemon ends it (UnavailableError on drain) or cancel()
    is called — from any thread, or by leaving a ``with`` block — which ends
    the iteration quietly."""

    def __init__(self, call: Any, spec: Watch) -> None:
        self._call = call
        self._spec = spec
        self._cancelled = False

    def __iter__(self) -> Iterator[CacheEvent]:
        try:
            for event in self._call:
                yield cast(CacheEvent, self._spec.convert(event))
        except grpc.RpcError as e:
            if self._cancelled and e.code() == grpc.StatusCode.CANCELLED:
                return
            raise from_rpc_error(e, self._spec.label) from e

    def cancel(self) -> bool:
        """Ends the watch; returns False if it had already finished."""
        self._cancelled = True
        return bool(self._call.cancel())

    def __enter__(self) -> "EventWatch":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], *exc: object) -> None:
        self.cancel()
