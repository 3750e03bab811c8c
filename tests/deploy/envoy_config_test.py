#!/usr/bin/env python3
"""deploy/envoy/diffusiond.yaml is a valid Envoy bootstrap that routes by the model header (ctest deploy.EnvoyConfig).

  envoy_config_test.py PATH/TO/deploy/envoy/diffusiond.yaml SCHEMA_DIR

Envoy itself is not packaged for Debian 12, so the config is checked against Envoy's published API instead: the
protos that @grpc/grpc-js-xds ships (deploy/envoy/schema/package-lock.json pins it; `npm pack` fetches that one
package into SCHEMA_DIR, under the build folder, and its sha512 must match the lock's). protoc compiles the
bootstrap and the extensions the config names by "@type", and the YAML is parsed into
envoy.config.bootstrap.v3.Bootstrap as Envoy parses it (YAML to JSON to proto): unknown fields, wrong types, bad
enum values and durations fail, and so do fields Envoy's API marks deprecated. Broken copies of the config check
that they do. Not checked: the protoc-gen-validate rules (ranges, required oneofs) and whether extensions are
compiled into your Envoy; `envoy --mode validate -c FILE` checks those where Envoy is installed.

Exits 77 (ctest: skipped) without PyYAML or protobuf's Python package (python3-yaml, python3-protobuf); fails
without npm or protoc (protobuf-compiler).
"""

import base64
import copy
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

try:
    import yaml
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
except ImportError as e:
    print(f"SKIP: {e.name} not found; install python3-yaml and python3-protobuf (deploy/install-deps.sh)")
    sys.exit(77)

PACKAGE = "@grpc/grpc-js-xds"
# Include folders inside the package's deps/ (its layout: the envoy, xds, protoc-gen-validate and googleapis
# repositories as git submodules).
INCLUDES = ("envoy-api", "xds", "protoc-gen-validate", "googleapis")


def routing_problems(config):
    """The rules docs/scaling.md relies on, which a schema cannot say."""
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
    return problems


def sri_sha512(path):
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def envoy_protos(lock_file, schema_dir):
    """Returns the package's deps/ folder under schema_dir, fetching and unpacking the pinned version first if
    it is not there yet."""
    entry = json.loads(lock_file.read_text())["packages"][f"node_modules/{PACKAGE}"]
    version, integrity = entry["version"], entry["integrity"]
    unpacked = schema_dir / f"grpc-js-xds-{version}"
    if (unpacked / "integrity").is_file() and (unpacked / "integrity").read_text() == integrity:
        return unpacked / "package" / "deps"
    npm = shutil.which("npm")
    if npm is None:
        raise AssertionError("npm not found: fetching Envoy's protos needs it (deploy/install-deps.sh installs it)")
    schema_dir.mkdir(parents=True, exist_ok=True)
    out = subprocess.run([npm, "pack", f"{PACKAGE}@{version}", "--json", "--pack-destination", str(schema_dir),
                          "--cache", str(schema_dir / "npm-cache")], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"npm pack {PACKAGE}@{version} failed:\n{out.stdout}{out.stderr}")
    tarball = schema_dir / json.loads(out.stdout)[0]["filename"]
    if sri_sha512(tarball) != integrity:
        raise AssertionError(f"{tarball.name} is not the package {lock_file} pins: sha512 differs")
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(tarball) as tar:
        tar.extractall(unpacked, members=[m for m in tar.getmembers()
                                          if m.isfile() and m.name.endswith(".proto") and ".." not in m.name])
    deps = unpacked / "package" / "deps"
    # The package's validate.proto predates StringRules.ignore_empty, which some of its Envoy protos set (the
    # package reads them with protobufjs, which does not check options). protoc does: add the field as
    # protoc-gen-validate itself has it. It only annotates validation rules, which this test does not apply.
    rules = deps / "protoc-gen-validate" / "validate" / "validate.proto"
    text = rules.read_text()
    if "ignore_empty" not in text[text.index("message StringRules {"):text.index("message BytesRules {")]:
        end = text.index("\n}\n", text.index("message StringRules {"))
        rules.write_text(text[:end] + "\n  optional bool ignore_empty = 26;" + text[end:])
    (unpacked / "integrity").write_text(integrity)
    return deps


def type_names(node):
    """Every "@type" in the config: the extensions' messages."""
    if isinstance(node, dict):
        if "@type" in node:
            yield node["@type"].rsplit("/", 1)[-1]
        for value in node.values():
            yield from type_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from type_names(value)


def descriptor_pool_for(deps, config, work):
    """Compiles the bootstrap and the config's extensions with protoc; returns a pool of their messages."""
    protoc = shutil.which("protoc")
    if protoc is None:
        raise AssertionError("protoc not found (protobuf-compiler; deploy/install-deps.sh installs it)")
    files = {"envoy/config/bootstrap/v3/bootstrap.proto"}
    for name in set(type_names(config)):
        folder = deps / "envoy-api" / Path(*name.split(".")[:-1])
        if not folder.is_dir():
            raise AssertionError(f"no protos for @type {name} in {PACKAGE}")
        files |= {str(p.relative_to(deps / "envoy-api")) for p in folder.glob("*.proto")}
    output = work / "envoy.pb"
    out = subprocess.run([protoc, *(f"-I{deps / d}" for d in INCLUDES), "--include_imports", f"-o{output}",
                          *sorted(files)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"protoc failed on Envoy's protos:\n{out.stderr}")
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(output.read_bytes()).file:
        pool.Add(file)
    return pool


def message_class(descriptor):
    if hasattr(message_factory, "GetMessageClass"):  # protobuf 4.22+
        return message_factory.GetMessageClass(descriptor)
    return message_factory.MessageFactory(descriptor.file.pool).GetPrototype(descriptor)


def deprecated_fields(message, pool, path=""):
    """The fields set in message (Any payloads included) that Envoy's API marks deprecated."""
    if message.DESCRIPTOR.full_name == "google.protobuf.Any":
        inner = message_class(pool.FindMessageTypeByName(message.type_url.rsplit("/", 1)[-1]))()
        inner.ParseFromString(message.value)
        yield from deprecated_fields(inner, pool, path)
        return
    for field, value in message.ListFields():
        here = f"{path}.{field.name}"
        if field.GetOptions().deprecated:
            yield here
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for key, item in value.items():
                    yield from deprecated_fields(item, pool, f"{here}[{key}]")
        elif field.label == field.LABEL_REPEATED:
            for i, item in enumerate(value):
                yield from deprecated_fields(item, pool, f"{here}[{i}]")
        else:
            yield from deprecated_fields(value, pool, here)


def schema_problems(config, pool):
    bootstrap = message_class(pool.FindMessageTypeByName("envoy.config.bootstrap.v3.Bootstrap"))()
    try:
        json_format.ParseDict(config, bootstrap, descriptor_pool=pool)
    except json_format.ParseError as e:
        return [str(e).split("\n")[0]]
    return [f"{field} is deprecated in Envoy's API" for field in deprecated_fields(bootstrap, pool)]


def broken_copies(config):
    """Configs the schema check must refuse: name -> (config, a word its complaint must contain)."""
    def broken(edit):
        c = copy.deepcopy(config)
        edit(c)
        return c
    cluster = lambda c: c["static_resources"]["clusters"][0]  # noqa: E731
    manager = lambda c: c["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0][  # noqa: E731
        "typed_config"]
    return {
        "unknown field": (broken(lambda c: cluster(c).update(lb_polcy="RING_HASH")), "lb_polcy"),
        "unknown field inside an extension": (broken(lambda c: manager(c).update(stat_prefx="x")), "stat_prefx"),
        "bad enum value": (broken(lambda c: cluster(c).update(lb_policy="RING")), "RING"),
        "bad duration": (broken(lambda c: cluster(c).update(connect_timeout="5 seconds")), "duration"),
        "deprecated field": (broken(lambda c: cluster(c).update(http2_protocol_options={})), "deprecated"),
    }


def main(path, schema_dir):
    path, schema_dir = Path(path), Path(schema_dir)
    with open(path) as f:
        config = yaml.safe_load(f)
    problems = routing_problems(config)
    deps = envoy_protos(path.parent / "schema" / "package-lock.json", schema_dir)
    pool = descriptor_pool_for(deps, config, schema_dir)
    problems += schema_problems(config, pool)
    for name, (broken, word) in broken_copies(config).items():
        found = schema_problems(broken, pool)
        if not any(word in p for p in found):
            problems.append(f"the schema check let a broken copy by ({name}): {found}")
    for problem in problems:
        print(f"{path}: {problem}")
    if not problems:
        print(f"{path}: a valid envoy.config.bootstrap.v3.Bootstrap ({PACKAGE}'s Envoy protos), routing by the "
              f"diffusiond-model header; {len(broken_copies(config))} broken copies refused")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
