// Validates Kubernetes objects against the published API schemas (the kubernetes-models package):
//   node validate.js < objects.json      (a JSON array, e.g. `kubectl kustomize` output converted)
// Prints one line per object; exits 1 if any is invalid. Kinds it has no schema for (the Prometheus
// Operator's CRDs) are reported as skipped. Install it with `npm install` in this folder.
"use strict";

const objects = JSON.parse(require("fs").readFileSync(0, "utf8"));
let failed = 0;
for (const object of objects) {
  const name = `${object.kind}/${object.metadata.name}`;
  const [group, version] = object.apiVersion.includes("/") ? object.apiVersion.split("/") : ["", object.apiVersion];
  let Kind;
  try {
    Kind = require(group ? `kubernetes-models/${group}/${version}` : `kubernetes-models/${version}`)[object.kind];
  } catch (e) {
    Kind = undefined;
  }
  if (Kind === undefined) {
    console.log(`${name}: skipped (no schema for ${object.apiVersion})`);
    continue;
  }
  try {
    new Kind(object).validate();
    console.log(`${name}: valid`);
  } catch (e) {
    failed++;
    console.log(`${name}: INVALID: ${e.message}`);
  }
}
process.exit(failed ? 1 : 0);
