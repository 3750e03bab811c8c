"""The generated diffusiond.v1 and grpc.health.v1 modules, in one place.

They ship inside the package under ``_pb`` (made by tools/gen_stubs.py from
proto/ and checked by the ctest python.stubs), so an installed wheel needs
nothing generated at install time. Their descriptors carry the same file
names as the stubs CMake builds into ``<build>/python``, so a process may
import both.
"""

from ._pb.diffusiond.v1 import cache_service_pb2
from ._pb.diffusiond.v1 import cache_service_pb2_grpc
from ._pb.diffusiond.v1 import denoise_service_pb2
from ._pb.diffusiond.v1 import denoise_service_pb2_grpc
from ._pb.diffusiond.v1 import model_service_pb2
from ._pb.diffusiond.v1 import model_service_pb2_grpc
from ._pb.diffusiond.v1 import pipeline_service_pb2
from ._pb.diffusiond.v1 import pipeline_service_pb2_grpc
from ._pb.diffusiond.v1 import tensor_pb2
from ._pb.grpc_health.v1 import health_pb2
from ._pb.grpc_health.v1 import health_pb2_grpc

__all__ = [
    "cache_service_pb2", "cache_service_pb2_grpc", "denoise_service_pb2",
    "denoise_service_pb2_grpc", "model_service_pb2", "model_service_pb2_grpc",
    "pipeline_service_pb2", "pipeline_service_pb2_grpc",
    "tensor_pb2", "health_pb2", "health_pb2_grpc",
]
