// Validates Kubernetes objects against the published API schemas, strictly:
//   node validate.js < objects.json      (a JSON array, e.g. `kubectl kustomize` output converted)
// with NODE_PATH naming a node_modules folder that holds the packages of package-lock.json here
// (kubernetes-models for the built-in kinds, @kubernetes-models/prometheus-operator for the
// ServiceMonitor and PrometheusRule). Prints one line per object and exits 1 if any is invalid: a
// wrong type, a missing required field, a field the schema does not declare, or a kind no package
// has a schema for.
"use strict";

// Where each API group's schemas live; the core group ("v1") has none in its apiVersion.
const PACKAGES = {
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator/monitoring.coreos.com",
};

function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  const module = group ? `${PACKAGES[group] || `kubernetes-models/${group}`}/${version}` : `kubernetes-models/${version}`;
  try {
    return require(module)[kind];
  } catch (e) {
    // No such group or version in the package (its exports map names every one it has).
    if (e.code === "ERR_PACKAGE_PATH_NOT_EXPORTED" || (e.code === "MODULE_NOT_FOUND" && e.message.includes(module))) {
      return undefined;
    }
    throw e;
  }
}

// The packages ship their schemas compiled into validators that, like the API server's default
// decoding, let undeclared fields through. Every field a schema declares is read by its compiled
// validator (to check it or to see that it is absent), and a map's keys are enumerated, so a field
// that the validator never reads is one the schema does not know: what `kubectl apply
// --validate=strict` refuses. track() wraps the object in proxies that record those reads.
function track(value, path, nodes) {
  if (value === null || typeof value !== "object") return value;
  const read = new Set();
  nodes.push({ path, value, read });
  const children = new Map();
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver);
      if (typeof key !== "string") return child;
      read.add(key);
      if (child === null || typeof child !== "object") return child;
      if (!children.has(key)) children.set(key, track(child, `${path}/${key}`, nodes));
      return children.get(key);
    },
    has(target, key) {
      if (typeof key === "string") read.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {  // a map (additionalProperties): every key is allowed
      for (const key of Reflect.ownKeys(target)) if (typeof key === "string") read.add(key);
      return Reflect.ownKeys(target);
    },
  });
}

function unknownFields(nodes) {
  const unknown = [];
  for (const { path, value, read } of nodes) {
    // A node whose validator read nothing is free-form (an object of any shape) or was never
    // reached because an enclosing error stopped validation; neither says a key is unknown.
    if (Array.isArray(value) || read.size === 0) continue;
    for (const key of Object.keys(value)) if (!read.has(key)) unknown.push(`${path}/${key}`);
  }
  return unknown;
}

function validate(object) {
  const Kind = modelClass(object.apiVersion, object.kind);
  if (Kind === undefined) return [`no published schema for ${object.apiVersion} ${object.kind}`];
  const nodes = [];
  try {
    Kind.prototype.validate.call(track(object, "", nodes));
  } catch (e) {
    return [e.message];
  }
  return unknownFields(nodes).map((field) => `unknown field ${field}`);
}

const objects = JSON.parse(require("fs").readFileSync(0, "utf8"));
let failed = 0;
for (const object of objects) {
  const name = `${object.kind}/${object.metadata && object.metadata.name}`;
  const problems = validate(object);
  if (problems.length) failed++;
  console.log(problems.length ? `${name}: INVALID: ${problems.join("; ")}` : `${name}: valid`);
}
process.exit(failed ? 1 : 0);
