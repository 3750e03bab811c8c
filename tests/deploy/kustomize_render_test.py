#!/usr/bin/env python3
"""Renders deploy/k8s (the base and each overlay) and deploy/envoy (the routing proxy) with `kubectl kustomize`,
validates every object against the published schemas and checks the objects (ctest deploy.KustomizeRender): the
hardening, the drain timing, the GPU settings, the monitoring objects, Envoy's config and its admission by the
NetworkPolicy.

  kustomize_render_test.py PATH/TO/deploy/k8s SCHEMA_DIR

Any kubectl renders the overlays, Debian 12's (kubernetes-client 1.20, whose kustomize is v2.0) included. The
schemas are the npm packages pinned in deploy/k8s/schema/package-lock.json, installed with `npm ci` into
SCHEMA_DIR (under the build folder) when that lock changes, or taken from $DIFFUSIOND_K8S_SCHEMA_MODULES (a
node_modules folder holding them); deploy/k8s/schema/validate.js refuses wrong types, missing required fields and
fields the schemas do not declare, and a few broken objects check that it does.

Exits 77 (ctest: skipped) without kubectl or PyYAML (deploy/install-deps.sh installs kubernetes-client and
python3-yaml), and fails without node and npm (nodejs, npm), which validating needs.
"""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML not found; install python3-yaml (deploy/install-deps.sh)")
    sys.exit(77)

# What the daemon's drain takes besides DIFFUSIOND_DRAIN_GRACE (server/daemon.cc): accepting calls for
# min(grace / 10, 5 s) while the endpoint leaves the Service, the wait for cancelled work (15 s) and the
# gRPC shutdown (2 s); plus the margin deployment.yaml documents for the unload and the kubelet.
CANCEL_WAIT_S, SHUTDOWN_S, MARGIN_S = 15, 2, 5


def seconds(duration):
    """'30s', '2m', '1m30s', '500ms' -> seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration)
    if not parts or "".join(n + u for n, u in parts) != duration:
        raise ValueError(f"not a duration: {duration}")
    return sum(float(n) * units[u] for n, u in parts)


def render(kubectl, folder):
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError(f"kubectl kustomize {folder} failed:\n{out.stderr}")
    # Newer kubectl warns that bases: and patchesStrategicMerge: are deprecated (kept for Debian 12's, see
    # deploy/k8s/base/kustomization.yaml); anything else on stderr is news.
    news = [line for line in out.stderr.splitlines() if line.strip() and "is deprecated" not in line]
    if news:
        raise AssertionError(f"kubectl kustomize {folder} warned:\n" + "\n".join(news))
    return [d for d in yaml.safe_load_all(out.stdout) if d]


class Checks:
    def __init__(self, name):
        self.name, self.problems = name, []

    def expect(self, condition, message):
        if not condition:
            self.problems.append(f"{self.name}: {message}")


def kinds(objects):
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    return by_kind


def check_hardening(c, pod, container):
    """Pod Security "restricted", no service-account token."""
    c.expect(pod.get("automountServiceAccountToken") is False, "automountServiceAccountToken is not false")
    c.expect(pod["securityContext"].get("seccompProfile") == {"type": "RuntimeDefault"},
             "the pod's seccompProfile is not RuntimeDefault")
    c.expect(pod["securityContext"].get("runAsNonRoot") is True, "the pod may run as root")
    sc = container["securityContext"]
    c.expect(sc.get("seccompProfile") == {"type": "RuntimeDefault"},
             "the container's seccompProfile is not RuntimeDefault")
    c.expect(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
    c.expect(sc.get("readOnlyRootFilesystem") is True, "the root filesystem is writable")
    c.expect(sc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities are not all dropped")


def check_common(c, objects):
    by_kind = kinds(objects)
    (deployment,) = by_kind["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    check_hardening(c, pod, container)
    c.expect(container["startupProbe"]["grpc"].get("service") == "readiness",
             "the startup probe does not wait for readiness (preloads)")

    (config,) = by_kind["ConfigMap"]
    grace = seconds(config["data"]["DIFFUSIOND_DRAIN_GRACE"])
    needed = min(grace / 10, 5) + grace + CANCEL_WAIT_S + SHUTDOWN_S + MARGIN_S
    c.expect(pod["terminationGracePeriodSeconds"] >= needed,
             f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} < {needed:g} "
             f"(drain grace {grace:g}s + accept + cancel wait + shutdown + margin)")

    (policy,) = by_kind["NetworkPolicy"]
    spec = policy["spec"]
    c.expect(spec["podSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"],
             "the NetworkPolicy selects other pods than the Deployment's")
    c.expect(spec["policyTypes"] == ["Ingress"], "the NetworkPolicy does not govern ingress")
    rules = {r["ports"][0]["port"]: r["from"] for r in spec["ingress"]}
    c.expect(set(rules) == {"grpc", "metrics"}, f"ingress rules for ports {sorted(rules)}, not grpc and metrics")
    c.expect(all("podSelector" in f and f["podSelector"].get("matchLabels") for f in rules.get("grpc", [])),
             "gRPC is admitted from pods without a client label")
    c.expect(rules.get("metrics") == [{"namespaceSelector": {"matchLabels": {
        "kubernetes.io/metadata.name": "monitoring"}}}], "metrics are admitted from outside the monitoring namespace")
    return by_kind, container, pod


def check_envoy(c, objects, envoy_config, policy):
    """deploy/envoy: Envoy's config is diffusiond.yaml itself, its pods are clients the daemons' NetworkPolicy
    admits, and its upstream is the base's headless Service."""
    by_kind = kinds(objects)
    (deployment,), (config,), (service,) = by_kind["Deployment"], by_kind["ConfigMap"], by_kind["Service"]
    template = deployment["spec"]["template"]
    pod = template["spec"]
    (container,) = pod["containers"]
    check_hardening(c, pod, container)
    c.expect(config["data"].get("envoy.yaml") == envoy_config.read_text(),
             f"the ConfigMap's envoy.yaml is not {envoy_config.name}")
    c.expect([v["configMap"]["name"] for v in pod["volumes"] if "configMap" in v] == [config["metadata"]["name"]],
             "the pod does not mount the generated ConfigMap")
    labels = template["metadata"]["labels"]
    grpc_from = [f["podSelector"]["matchLabels"] for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == "grpc"
                 for f in r["from"]]
    c.expect(any(all(labels.get(k) == v for k, v in m.items()) for m in grpc_from),
             "the Envoy pods lack the client label the daemons' NetworkPolicy admits")
    c.expect(all(labels.get(k) == v for k, v in service["spec"]["selector"].items()),
             "the Service does not select the Envoy pods")
    (cluster,) = yaml.safe_load(config["data"]["envoy.yaml"])["static_resources"]["clusters"]
    address = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    c.expect(address["address"].startswith("diffusiond-headless."), "Envoy's upstream is not the headless Service")
    return by_kind


def schema_modules(k8s, schema_dir):
    """Returns a node_modules folder with the packages of deploy/k8s/schema/package-lock.json, running `npm ci`
    in schema_dir when its copy of the lock differs (the first run downloads them, into npm's cache there too;
    later ones reuse them)."""
    if os.environ.get("DIFFUSIOND_K8S_SCHEMA_MODULES"):
        return Path(os.environ["DIFFUSIOND_K8S_SCHEMA_MODULES"])
    npm = shutil.which("npm")
    if npm is None:
        raise AssertionError("npm not found: validating needs nodejs and npm (deploy/install-deps.sh installs them)")
    lock = (k8s / "schema" / "package-lock.json").read_text()
    schema_dir.mkdir(parents=True, exist_ok=True)
    stamp = schema_dir / "installed-package-lock.json"
    if not stamp.exists() or stamp.read_text() != lock:
        shutil.copy(k8s / "schema" / "package.json", schema_dir)
        (schema_dir / "package-lock.json").write_text(lock)
        started = time.monotonic()
        # No install scripts: the packages are schemas and their validators, plain JavaScript.
        out = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
                              "--cache", str(schema_dir / "npm-cache")],
                             cwd=schema_dir, capture_output=True, text=True, timeout=240)
        if out.returncode != 0:
            raise AssertionError(f"npm ci in {schema_dir} failed:\n{out.stdout}{out.stderr}")
        stamp.write_text(lock)
        print(f"schemas installed with npm ci in {time.monotonic() - started:.1f} s")
    return schema_dir / "node_modules"


def schema_validator(k8s, modules):
    """Returns validate(objects) -> {"Kind/name": "valid" or the problems}, by deploy/k8s/schema/validate.js."""
    node = shutil.which("node")
    if node is None:
        raise AssertionError("node not found: validating needs nodejs (deploy/install-deps.sh installs it)")

    def validate(objects):
        out = subprocess.run([node, str(k8s / "schema" / "validate.js")], input=json.dumps(objects),
                             capture_output=True, text=True, env={**os.environ, "NODE_PATH": str(modules)})
        verdicts = dict(line.split(": ", 1) for line in out.stdout.splitlines() if ": " in line)
        if out.returncode not in (0, 1) or len(verdicts) != len(objects):
            raise AssertionError(f"validate.js exited {out.returncode}:\n{out.stdout}{out.stderr}")
        return verdicts
    return validate


def check_schemas(c, validate, objects):
    for name, verdict in validate(objects).items():
        c.expect(verdict == "valid", f"{name} does not match its schema: {verdict}")


def check_validator_refuses(validate, objects):
    """Breaks copies of rendered objects in the ways the validator must catch; returns the breaks it let by."""
    by_kind = {o["kind"]: o for o in objects}

    def broken(kind, name, edit):
        o = copy.deepcopy(by_kind[kind])
        o["metadata"]["name"] = name
        edit(o)
        return o
    cases = {  # name: (object, what the verdict must name)
        "unknown-container-field": (broken("Deployment", "unknown-container-field", lambda o: o["spec"]["template"][
            "spec"]["containers"][0].update(imagePullPolicyy="Always")), "imagePullPolicyy"),
        "unknown-top-field": (broken("Service", "unknown-top-field", lambda o: o.update(specs={})), "specs"),
        "wrong-type": (broken("Deployment", "wrong-type", lambda o: o["spec"].update(replicas="two")), "integer"),
        "missing-required": (broken("NetworkPolicy", "missing-required", lambda o: o["spec"].pop("podSelector")),
                             "podSelector"),
        "unknown-crd-field": (broken("ServiceMonitor", "unknown-crd-field", lambda o: o["spec"]["endpoints"][0].update(
            scrapeInterval="15s")), "scrapeInterval"),
        "crd-wrong-type": (broken("PrometheusRule", "crd-wrong-type", lambda o: o["spec"]["groups"][0].update(
            rules="none")), "array"),
        "no-schema": (dict(apiVersion="example.com/v1", kind="Widget", metadata=dict(name="no-schema")), "schema"),
    }
    verdicts = validate([o for o, _ in cases.values()])
    missed = []
    for name, (o, word) in cases.items():
        verdict = verdicts.get(f"{o['kind']}/{name}", "")
        if not verdict.startswith("INVALID") or word not in verdict:
            missed.append(f"validate.js let a broken object by ({name}): {verdict or 'no verdict'}")
    return missed


def check_monitoring(c, by_kind, rules_file):
    c.expect(len(by_kind.get("ServiceMonitor", [])) == 1, "no ServiceMonitor")
    rules = by_kind.get("PrometheusRule", [])
    c.expect(len(rules) == 1, "no PrometheusRule")
    if rules:
        with open(rules_file) as f:
            c.expect(rules[0]["spec"] == yaml.safe_load(f), f"the PrometheusRule differs from {rules_file.name}")


def main(k8s, schema_dir):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("SKIP: kubectl not found (Debian: kubernetes-client)")
        return 77
    version = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
    print(f"{kubectl}: {version.splitlines()[0] if version else 'no version'}")
    k8s = Path(k8s)
    rules_file = k8s.parent / "prometheus" / "rules.yml"
    validate = schema_validator(k8s, schema_modules(k8s, Path(schema_dir)))
    problems = []
    for name in ("base", "overlays/cpu", "overlays/gpu"):
        c = Checks(name)
        objects = render(kubectl, k8s / name)
        check_schemas(c, validate, objects)
        by_kind, container, pod = check_common(c, objects)
        limits = container["resources"]["limits"]
        args = container.get("args", [])
        if name == "overlays/gpu":
            c.expect(limits.get("nvidia.com/gpu") == 1, "no nvidia.com/gpu: 1 limit")
            c.expect(args[args.index("--device") + 1:][:1] == ["cuda:0"] if "--device" in args else False,
                     "no --device cuda:0")
            c.expect("--vram_budget" in args, "no --vram_budget")
            c.expect(bool(pod.get("nodeSelector")), "no nodeSelector")
            c.expect(any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])),
                     "no toleration of the nvidia.com/gpu taint")
        else:
            c.expect("nvidia.com/gpu" not in limits and not args, "GPU settings in a CPU setup")
        if name.startswith("overlays/"):
            check_monitoring(c, by_kind, rules_file)
            if name == "overlays/cpu":
                problems += check_validator_refuses(validate, objects)
        else:
            c.expect("ServiceMonitor" not in by_kind, "the base needs the Prometheus Operator's CRDs")
        c.expect(all(o["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == "diffusiond"
                     for o in objects), "an object without the app.kubernetes.io/part-of label")
        problems += c.problems
        print(f"{name}: {sum(len(v) for v in by_kind.values())} objects, schema-valid and checked, "
              f"{len(c.problems)} problems")
        if name == "base":
            (policy,) = by_kind["NetworkPolicy"]
    # deploy/envoy: the routing proxy, applied next to an overlay.
    c = Checks("deploy/envoy")
    objects = render(kubectl, k8s.parent / "envoy")
    check_schemas(c, validate, objects)
    check_envoy(c, objects, k8s.parent / "envoy" / "diffusiond.yaml", policy)
    c.expect(all(o["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == "diffusiond"
                 for o in objects), "an object without the app.kubernetes.io/part-of label")
    problems += c.problems
    print(f"deploy/envoy: {len(objects)} objects, schema-valid and checked, {len(c.problems)} problems")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
