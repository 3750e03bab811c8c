#!/usr/bin/env python3
"""Renders deploy/nginx/diffusiond.conf with the listen address and the replicas.

  render.py --listen 0.0.0.0:50051 host1:50051 host2:50051 > nginx.conf

Each replica becomes `server HOST:PORT max_fails=1 fail_timeout=10s;` in the upstream. The order does
not matter: the consistent hash places a replica on the ring by its address, not by its position.
"""

import argparse
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().with_name("diffusiond.conf")


def render(listen, replicas, fail_timeout="10s"):
    """Returns the configuration text; ValueError without replicas."""
    if not replicas:
        raise ValueError("give at least one replica (HOST:PORT)")
    servers = "\n".join(f"    server {r} max_fails=1 fail_timeout={fail_timeout};" for r in replicas)
    return TEMPLATE.read_text().replace("{{servers}}", servers).replace("{{listen}}", listen)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="0.0.0.0:50051", help="the proxy's address (HOST:PORT or PORT)")
    parser.add_argument("--fail_timeout", default="10s", help="how long a refusing replica is left out")
    parser.add_argument("replicas", nargs="+", help="the daemons' gRPC addresses, HOST:PORT")
    args = parser.parse_args()
    sys.stdout.write(render(args.listen, args.replicas, args.fail_timeout))


if __name__ == "__main__":
    main()
