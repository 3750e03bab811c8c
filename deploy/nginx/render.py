#!/usr/bin/env python3
"""Renders deploy/nginx/diffusiond.conf with the listen address and the replicas.

  render.py --listen 0.0.0.0:50051 host1:50051 host2:50051 > nginx.conf
  render.py --place flux,qwen-image,z-image host1:50051 host2:50051   # which replica serves each model

Each replica becomes `server HOST:PORT max_fails=1 fail_timeout=10s;` in the upstream. The order does
not matter: the consistent hash places a replica on the ring by its address, not by its position.
--place computes the ring as nginx does (integration.Routing checks it against a running nginx), to
size replicas before deploying (docs/scaling.md).
"""

import argparse
import bisect
import sys
import zlib
from pathlib import Path

TEMPLATE = Path(__file__).resolve().with_name("diffusiond.conf")


def render(listen, replicas, fail_timeout="10s"):
    """Returns the configuration text; ValueError without replicas."""
    if not replicas:
        raise ValueError("give at least one replica (HOST:PORT)")
    servers = "\n".join(f"    server {r} max_fails=1 fail_timeout={fail_timeout};" for r in replicas)
    return TEMPLATE.read_text().replace("{{servers}}", servers).replace("{{listen}}", listen)


def ring(servers):
    """Returns nginx's consistent-hash ring for `servers` ("host:port" as in the config) as sorted
    (point, server) pairs: 160 points a server, each the CRC32 of host, NUL, port and the previous point
    (ngx_http_upstream_init_chash)."""
    points = []
    for server in servers:
        host, port = server.rsplit(":", 1)
        base = zlib.crc32(host.encode() + b"\0" + port.encode())
        previous = 0
        for _ in range(160):
            previous = zlib.crc32(previous.to_bytes(4, "little"), base)
            points.append((previous, server))
    return sorted(points)


def ring_owner(points, key):
    """Returns the server that owns `key`: the first point at or after CRC32(key), wrapping around."""
    i = bisect.bisect_left(points, (zlib.crc32(key.encode()), ""))
    return points[i % len(points)][1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="0.0.0.0:50051", help="the proxy's address (HOST:PORT or PORT)")
    parser.add_argument("--fail_timeout", default="10s", help="how long a refusing replica is left out")
    parser.add_argument("--place", metavar="ID,ID...", help="print the replica of each model id instead")
    parser.add_argument("replicas", nargs="+", help="the daemons' gRPC addresses, HOST:PORT")
    args = parser.parse_args()
    if args.place:
        points = ring(args.replicas)
        for model_id in args.place.split(","):
            print(f"{model_id}\t{ring_owner(points, model_id)}")
        return
    sys.stdout.write(render(args.listen, args.replicas, args.fail_timeout))


if __name__ == "__main__":
    main()
