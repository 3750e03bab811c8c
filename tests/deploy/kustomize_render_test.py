#!/usr/bin/env python3
"""Renders deploy/k8s (the base and each overlay) with `kubectl kustomize` and checks the objects
(ctest deploy.KustomizeRender): the hardening, the drain timing, the GPU settings, the monitoring objects.

  kustomize_render_test.py PATH/TO/deploy/k8s

Exits 77 (ctest: skipped) without kubectl, without PyYAML (python3-yaml), or with a kubectl older than
1.22, whose embedded kustomize predates `labels:` and components (Debian 12's kubernetes-client is 1.20).

Optionally, each rendered object is also validated against the published Kubernetes API schemas
(deploy/k8s/schema/validate.js, the npm package kubernetes-models): when node is installed and the
package is, in deploy/k8s/schema/node_modules (`npm install` there) or in $DIFFUSIOND_K8S_SCHEMA_MODULES
(a node_modules folder). Otherwise the test says it skipped that part.
"""

import json
import os
import re
import shutil
import subprocess
import sys
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


def kubectl_too_old(kubectl):
    out = subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True)
    try:
        version = json.loads(out.stdout)["clientVersion"]
        return (int(version["major"]), int(re.match(r"\d+", version["minor"]).group())) < (1, 22)
    except (ValueError, KeyError, AttributeError):
        return False  # unknown: try it


def render(kubectl, folder):
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError(f"kubectl kustomize {folder} failed:\n{out.stderr}")
    return [d for d in yaml.safe_load_all(out.stdout) if d]


class Checks:
    def __init__(self, name):
        self.name, self.problems = name, []

    def expect(self, condition, message):
        if not condition:
            self.problems.append(f"{self.name}: {message}")


def check_common(c, objects):
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    (deployment,) = by_kind["Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
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


def schema_validator(k8s):
    """Returns a function validating objects with deploy/k8s/schema/validate.js, or None without node or
    the kubernetes-models package."""
    node = shutil.which("node")
    modules = os.environ.get("DIFFUSIOND_K8S_SCHEMA_MODULES") or str(k8s / "schema" / "node_modules")
    if node is None or not (Path(modules) / "kubernetes-models").is_dir():
        return None

    def validate(c, objects):
        out = subprocess.run([node, str(k8s / "schema" / "validate.js")], input=json.dumps(objects),
                             capture_output=True, text=True, env={**os.environ, "NODE_PATH": modules})
        c.expect(out.returncode == 0, f"schema validation failed:\n{out.stdout}{out.stderr}")
    return validate


def check_monitoring(c, by_kind, rules_file):
    c.expect(len(by_kind.get("ServiceMonitor", [])) == 1, "no ServiceMonitor")
    rules = by_kind.get("PrometheusRule", [])
    c.expect(len(rules) == 1, "no PrometheusRule")
    if rules:
        with open(rules_file) as f:
            c.expect(rules[0]["spec"] == yaml.safe_load(f), f"the PrometheusRule differs from {rules_file.name}")


def main(k8s):
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("SKIP: kubectl not found")
        return 77
    if kubectl_too_old(kubectl):
        print("SKIP: kubectl < 1.22: its kustomize predates `labels:` and components")
        return 77
    k8s = Path(k8s)
    rules_file = k8s.parent / "prometheus" / "rules.yml"
    problems = []
    validate = schema_validator(k8s)
    print("schema validation:", "kubernetes-models" if validate else
          "skipped (no node, or no kubernetes-models: npm install in deploy/k8s/schema)")
    for name in ("base", "overlays/cpu", "overlays/gpu"):
        c = Checks(name)
        objects = render(kubectl, k8s / name)
        if validate:
            validate(c, objects)
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
        else:
            c.expect("ServiceMonitor" not in by_kind, "the base needs the Prometheus Operator's CRDs")
        problems += c.problems
        print(f"{name}: {sum(len(v) for v in by_kind.values())} objects, {len(c.problems)} problems")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
