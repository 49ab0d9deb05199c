// Checks Kubernetes manifests against the Kubernetes API's JSON schemas (those of the npm package
// kubernetes-models, generated from the API server's OpenAPI document), strictly: a field the
// schema does not define is an error, as with `kubectl apply --validate=strict`. Then checks
// what applying the files together needs: every Secret key and volume claim a pod uses is
// defined in the files, a Service selects some workload's pods and names one of their ports, and
// an Indexed Job running `iris eval run --shard auto` sets IRIS_SHARD_COUNT to its completions.
//
//   node validate_kubernetes.js NPM_PREFIX FILE.yaml...
//   node validate_kubernetes.js NPM_PREFIX --expect-errors FILE.yaml
//       succeeds only when FILE has errors, and each of its "# expect: TEXT" lines names
//       (part of) one of them: how the tests show that a broken manifest is caught.
"use strict";

const fs = require("fs");
const path = require("path");

const [prefix, ...rest] = process.argv.slice(2);
const expectErrors = rest[0] === "--expect-errors";
const files = expectErrors ? rest.slice(1) : rest;
if (!prefix || files.length === 0) {
    console.error("usage: node validate_kubernetes.js NPM_PREFIX [--expect-errors] FILE.yaml...");
    process.exit(2);
}
const modules = path.join(prefix, "node_modules");
function load(name) {
    try {
        return require(require.resolve(name, { paths: [modules] }));
    } catch (error) {
        console.error(`cannot load the npm package ${name} from ${modules} (scripts/setup.sh ` +
                      `test installs it): ${error.message}`);
        process.exit(2);
    }
}
const YAML = load("yaml");

// The compiled schema validator of apiVersion/kind. kubernetes-models exports one model class
// per kind, whose file names the schema module it validates with; the schema modules are not
// exported, so they are loaded by path.
function schemaValidator(apiVersion, kind) {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    const name = ["kubernetes-models", group, version, kind].filter(Boolean).join("/");
    let file;
    try {
        file = require.resolve(name, { paths: [modules] });
    } catch {
        return null;
    }
    const schema = /require\("(\.[^"]*\/_schemas\/\w+\.js)"\)/.exec(fs.readFileSync(file, "utf8"));
    if (!schema) return null;
    return require(path.resolve(path.dirname(file), schema[1])).validate;
}

// A copy of `value` that records which fields the validator looks at. The compiled validators
// read every property their schema defines and enumerate the keys of maps (labels, stringData),
// so a field never read is one the schema does not have.
function watched(value, where, unread) {
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((item, i) => watched(item, `${where}/${i}`, unread));
    const read = new Set();
    const keys = Object.keys(value);
    const copy = Object.fromEntries(keys.map((k) => [k, watched(value[k], `${where}/${k}`, unread)]));
    unread.push(() => keys.filter((k) => !read.has(k)).map((k) => `${where}/${k}`));
    return new Proxy(copy, {
        get(target, key, receiver) {
            if (typeof key === "string") read.add(key);
            return Reflect.get(target, key, receiver);
        },
        ownKeys(target) {
            keys.forEach((k) => read.add(k));
            return Reflect.ownKeys(target);
        },
    });
}

function readDocuments(file, errors) {
    const documents = [];
    for (const document of YAML.parseAllDocuments(fs.readFileSync(file, "utf8"))) {
        for (const error of document.errors) {
            errors.push(`${file}: line ${error.linePos?.[0]?.line ?? "?"}: ${error.message}`);
        }
        const value = document.toJS();
        if (value !== null && value !== undefined) documents.push(value);
    }
    return documents;
}

// The validators are compiled without messages: one from the failed keyword and its parameters.
function describe(error) {
    const p = error.params ?? {};
    switch (error.keyword) {
        case "type": return `must be ${p.type}`;
        case "required": return `must have required property '${p.missingProperty}'`;
        case "enum": return `must be equal to one of the allowed values (${(p.allowedValues ?? []).join(", ")})`;
        case "format": return `must match format '${p.format}'`;
        default: return `fails '${error.keyword}' ${JSON.stringify(p)}`;
    }
}

function checkSchema(file, doc, errors) {
    const where = `${file}: ${doc.kind ?? "?"} ${doc.metadata?.name ?? "(no name)"}`;
    if (typeof doc.apiVersion !== "string" || typeof doc.kind !== "string") {
        errors.push(`${where}: apiVersion and kind are required`);
        return;
    }
    const validate = schemaValidator(doc.apiVersion, doc.kind);
    if (!validate) {
        errors.push(`${where}: no schema for apiVersion ${doc.apiVersion}, kind ${doc.kind}`);
        return;
    }
    const unread = [];
    if (!validate(watched(doc, "", unread))) {
        for (const e of validate.errors) errors.push(`${where}: ${e.instancePath || "/"} ${describe(e)}`);
    }
    for (const field of unread.flatMap((list) => list())) {
        errors.push(`${where}: ${field}: unknown field`);
    }
}

function podSpecOf(doc) {
    if (doc.kind === "Pod") return doc.spec;
    if (doc.kind === "CronJob") return doc.spec?.jobTemplate?.spec?.template?.spec;
    return doc.spec?.template?.spec;
}

function checkReferences(docs, errors) {
    const secrets = new Map(), claims = new Set();
    for (const { doc } of docs) {
        if (doc.kind === "Secret") {
            secrets.set(doc.metadata?.name,
                        new Set([...Object.keys(doc.data ?? {}), ...Object.keys(doc.stringData ?? {})]));
        }
        if (doc.kind === "PersistentVolumeClaim") claims.add(doc.metadata?.name);
    }
    for (const { file, doc } of docs) {
        const pod = podSpecOf(doc);
        if (!pod) continue;
        const where = `${file}: ${doc.kind} ${doc.metadata?.name}`;
        for (const volume of pod.volumes ?? []) {
            const claim = volume.persistentVolumeClaim?.claimName;
            if (claim && !claims.has(claim)) errors.push(`${where}: volume claim '${claim}' is not defined`);
        }
        for (const container of [...(pod.initContainers ?? []), ...(pod.containers ?? [])]) {
            for (const env of container.env ?? []) {
                const ref = env.valueFrom?.secretKeyRef;
                if (ref && !ref.optional && !secrets.get(ref.name)?.has(ref.key)) {
                    errors.push(`${where}: env ${env.name}: secret '${ref.name}' has no key '${ref.key}'`);
                }
            }
            checkShardCount(where, doc, container, errors);
        }
    }
    for (const { file, doc } of docs) {
        if (doc.kind !== "Service" || !doc.spec?.selector) continue;
        const selector = Object.entries(doc.spec.selector);
        const pods = docs.map(({ doc: d }) => d)
            .filter((d) => podSpecOf(d) && selector.every(([k, v]) => d.spec?.template?.metadata?.labels?.[k] === v));
        const where = `${file}: Service ${doc.metadata?.name}`;
        if (pods.length === 0) errors.push(`${where}: its selector matches no workload's pods`);
        for (const port of doc.spec.ports ?? []) {
            if (typeof port.targetPort !== "string") continue;
            const named = (d) => podSpecOf(d).containers.some((c) => (c.ports ?? []).some((p) => p.name === port.targetPort));
            if (pods.length > 0 && !pods.every(named)) {
                errors.push(`${where}: targetPort '${port.targetPort}' is not a port of the pods it selects`);
            }
        }
    }
}

// `iris eval run --shard auto` reads the shard count from IRIS_SHARD_COUNT: in an Indexed Job
// it has to be the Job's completions, or shards are lost or run twice.
function checkShardCount(where, doc, container, errors) {
    const args = [...(container.command ?? []), ...(container.args ?? [])];
    const auto = args.some((a, i) => a === "--shard=auto" || (a === "--shard" && args[i + 1] === "auto"));
    if (!auto) return;
    if (doc.kind !== "Job" || doc.spec?.completionMode !== "Indexed") {
        errors.push(`${where}: --shard auto needs an Indexed Job (it reads JOB_COMPLETION_INDEX)`);
        return;
    }
    const count = (container.env ?? []).find((e) => e.name === "IRIS_SHARD_COUNT")?.value;
    if (count !== String(doc.spec.completions)) {
        errors.push(`${where}: IRIS_SHARD_COUNT is ${count === undefined ? "not set" : `'${count}'`} ` +
                    `but the Job has ${doc.spec.completions} completions`);
    }
}

const errors = [];
const docs = [];
for (const file of files) {
    for (const doc of readDocuments(file, errors)) {
        checkSchema(file, doc, errors);
        docs.push({ file, doc });
    }
}
checkReferences(docs, errors);

if (!expectErrors) {
    for (const error of errors) console.error(error);
    console.log(`${docs.length} objects in ${files.length} files: ${errors.length} errors`);
    process.exit(errors.length === 0 ? 0 : 1);
}
const expected = files.flatMap((file) =>
    fs.readFileSync(file, "utf8").split("\n").filter((l) => l.startsWith("# expect: ")).map((l) => l.slice(10).trim()));
let missing = 0;
for (const text of expected) {
    if (!errors.some((e) => e.includes(text))) {
        console.error(`expected an error containing '${text}'`);
        ++missing;
    }
}
for (const error of errors) console.log(`caught: ${error}`);
if (errors.length === 0) console.error("expected errors, found none");
process.exit(errors.length > 0 && missing === 0 && expected.length > 0 ? 0 : 1);
