"""The generated diffusiond.v1 and grpc.health.v1 modules.

They are generated at build time (CMake target ``diffusiond_python_stubs``)
into ``<build>/python``; put that folder on ``PYTHONPATH`` next to
``proto/python``. Importing this module fails with an ImportError that says
so when they are missing.
"""

try:
    from diffusiond.v1 import cache_service_pb2
    from diffusiond.v1 import cache_service_pb2_grpc
    from diffusiond.v1 import denoise_service_pb2
    from diffusiond.v1 import denoise_service_pb2_grpc
    from diffusiond.v1 import model_service_pb2
    from diffusiond.v1 import model_service_pb2_grpc
    from diffusiond.v1 import pipeline_service_pb2
    from diffusiond.v1 import pipeline_service_pb2_grpc
    from diffusiond.v1 import tensor_pb2
    from grpc_health.v1 import health_pb2
    from grpc_health.v1 import health_pb2_grpc
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"diffusiond_client needs grpcio, protobuf and the generated stubs ({e}). "
        "Build the CMake target diffusiond_python_stubs and run with "
        "PYTHONPATH=<build>/python:proto/python") from e

__all__ = [
    "cache_service_pb2", "cache_service_pb2_grpc", "denoise_service_pb2",
    "denoise_service_pb2_grpc", "model_service_pb2", "model_service_pb2_grpc",
    "pipeline_service_pb2", "pipeline_service_pb2_grpc",
    "tensor_pb2", "health_pb2", "health_pb2_grpc",
]
