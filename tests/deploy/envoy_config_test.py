#!/usr/bin/env python3
"""deploy/envoy/diffusiond.yaml is well-formed YAML and routes by the model header (ctest deploy.EnvoyConfig).

Envoy itself is not packaged for Debian 12, so this is as far as CI goes; `envoy --mode validate -c FILE`
checks the rest where Envoy is installed. Exits 77 (ctest: skipped) without PyYAML (python3-yaml).

  envoy_config_test.py PATH/TO/deploy/envoy/diffusiond.yaml
"""

import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML not found; install python3-yaml (deploy/install-deps.sh)")
    sys.exit(77)


def main(path):
    with open(path) as f:
        config = yaml.safe_load(f)
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    route = manager["route_config"]["virtual_hosts"][0]["routes"][0]["route"]
    (cluster,) = config["static_resources"]["clusters"]
    problems = []
    if route["hash_policy"] != [{"header": {"header_name": "diffusiond-model"}}]:
        problems.append(f"hash_policy is not the diffusiond-model header: {route['hash_policy']}")
    if cluster["lb_policy"] not in ("RING_HASH", "MAGLEV"):
        problems.append(f"lb_policy {cluster['lb_policy']} is not a consistent hash")
    if route["cluster"] != cluster["name"]:
        problems.append(f"the route names cluster {route['cluster']}, the config defines {cluster['name']}")
    if route.get("timeout") != "0s":
        problems.append("a route timeout would cut long Denoise/Generate streams: set timeout: 0s")
    options = cluster["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
    if "http2_protocol_options" not in options.get("explicit_http_config", {}):
        problems.append("the upstream must speak HTTP/2 (gRPC)")
    health = cluster["health_checks"][0]["grpc_health_check"]
    if health.get("service_name") != "readiness":
        problems.append("health checks must ask the daemon's 'readiness' service (it turns off while draining)")
    if "outlier_detection" not in cluster:
        problems.append("no outlier_detection")
    for problem in problems:
        print(f"{path}: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
