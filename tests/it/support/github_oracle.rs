//! Independent oracles for every request warden sends to the fake GitHub: GitHub's official
//! OpenAPI description (`@octokit/openapi`: the operation must exist for the method and
//! path, its query parameters and its JSON body must match the operation's schemas) and
//! GitHub's published GraphQL schema (`@octokit/graphql-schema`, checked by graphql-js's
//! `validate` and variable coercion in a node process). `scripts/test` installs them
//! outside the clone, keyed by these versions.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub const OPENAPI_VERSION: &str = "23.0.2";
pub const GRAPHQL_SCHEMA_VERSION: &str = "15.26.1";
pub const GRAPHQL_JS_VERSION: &str = "16.11.0";

/// Where the oracles are installed: `WARDEN_OCTOKIT_DIR`, else the cache `scripts/test`
/// fills.
pub fn dir() -> PathBuf {
    if let Some(d) = std::env::var_os("WARDEN_OCTOKIT_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache"));
    cache.join("warden").join(format!(
        "octokit-oracles-{OPENAPI_VERSION}-{GRAPHQL_SCHEMA_VERSION}-{GRAPHQL_JS_VERSION}"
    ))
}

fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let p = dir().join("node_modules/@octokit/openapi/generated/api.github.com.json");
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: run scripts/test once (it installs the GitHub API oracles)",
                p.display()
            )
        });
        serde_json::from_str(&text).expect("the OpenAPI description is JSON")
    })
}

/// `#/components/...` references replaced by what they name (cycles cut at depth 40).
fn inline_refs(v: &Value, depth: usize) -> Value {
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                if depth > 40 {
                    return json!({});
                }
                let target = r
                    .trim_start_matches("#/")
                    .split('/')
                    .fold(spec(), |acc, k| {
                        &acc[k.replace("~1", "/").replace("~0", "~")]
                    });
                return inline_refs(target, depth + 1);
            }
            Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), inline_refs(v, depth)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| inline_refs(v, depth)).collect()),
        v => v.clone(),
    }
}

/// The OpenAPI operation for `method` on `path` (the template with the most literal
/// segments that matches).
fn operation(method: &str, path: &str) -> Result<(String, Value), String> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut best: Option<(usize, &String)> = None;
    for (tpl, _) in spec()["paths"].as_object().unwrap() {
        let t: Vec<&str> = tpl.trim_matches('/').split('/').collect();
        if t.len() != segs.len() {
            continue;
        }
        let mut literal = 0;
        let ok = t.iter().zip(&segs).all(|(a, b)| {
            if a.starts_with('{') {
                !b.is_empty()
            } else {
                literal += 1;
                a == b
            }
        });
        if ok && best.is_none_or(|(n, _)| literal > n) {
            best = Some((literal, tpl));
        }
    }
    let (_, tpl) =
        best.ok_or_else(|| format!("no operation in GitHub's API description matches {path}"))?;
    let op = spec()["paths"][tpl]
        .get(method.to_ascii_lowercase())
        .ok_or_else(|| format!("{tpl} has no {method} operation in GitHub's API description"))?;
    Ok((tpl.clone(), inline_refs(op, 0)))
}

fn check(schema: &Value, instance: &Value, what: &str) -> Result<(), String> {
    let v = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .build(schema)
        .map_err(|e| format!("{what}: the description's schema does not compile: {e}"))?;
    match v.iter_errors(instance).next() {
        None => Ok(()),
        Some(e) => Err(format!("{what}: {e} at `{}`", e.instance_path())),
    }
}

/// Checks one REST request against the OpenAPI description.
pub fn check_rest(
    method: &str,
    path: &str,
    query: &str,
    body: Option<&Value>,
) -> Result<(), String> {
    let (tpl, op) = operation(method, path)?;
    let params = op["parameters"].as_array().cloned().unwrap_or_default();
    // Path parameters.
    let t: Vec<&str> = tpl.trim_matches('/').split('/').collect();
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    for (a, b) in t.iter().zip(&segs) {
        if let Some(name) = a.strip_prefix('{').and_then(|a| a.strip_suffix('}')) {
            let p = params
                .iter()
                .find(|p| p["name"] == name && p["in"] == "path")
                .ok_or(format!("{tpl}: path parameter {name} undeclared"))?;
            check(
                &p["schema"],
                &coerce(b, &p["schema"]),
                &format!("{method} {tpl} path {name}"),
            )?;
        }
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let p = params
            .iter()
            .find(|p| p["name"] == k && p["in"] == "query")
            .ok_or_else(|| {
                format!("{method} {tpl}: query parameter `{k}` is not in GitHub's description")
            })?;
        check(
            &p["schema"],
            &coerce(v, &p["schema"]),
            &format!("{method} {tpl} query {k}"),
        )?;
    }
    let rb = &op["requestBody"];
    match (body, rb.is_null()) {
        (Some(b), false) => check(
            &rb["content"]["application/json"]["schema"],
            b,
            &format!("{method} {tpl} body"),
        ),
        (Some(_), true) => Err(format!("{method} {tpl} takes no body")),
        (None, false) if rb["required"] == true => Err(format!("{method} {tpl} needs a body")),
        (None, _) => Ok(()),
    }
}

fn coerce(s: &str, schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("integer") => s
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or(Value::String(s.into())),
        Some("boolean") => s
            .parse::<bool>()
            .map(Value::from)
            .unwrap_or(Value::String(s.into())),
        _ => Value::String(s.into()),
    }
}

struct Node {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

const VALIDATOR: &str = r#"
const dir = process.argv[1];
const g = require(dir + '/node_modules/graphql');
const { getVariableValues } = require(dir + '/node_modules/graphql/execution/values');
const fs = require('fs');
// The introspection result GitHub publishes (its SDL twin repeats two fields, which
// graphql-js refuses to build).
const intro = JSON.parse(fs.readFileSync(dir + '/node_modules/@octokit/graphql-schema/schema.json', 'utf8'));
const schema = g.buildClientSchema(intro.data || intro);
require('readline').createInterface({ input: process.stdin }).on('line', (line) => {
  let errors = [];
  try {
    const { query, variables } = JSON.parse(line);
    const doc = g.parse(query);
    errors = g.validate(schema, doc).map((e) => e.message);
    if (errors.length === 0) {
      const ops = doc.definitions.filter((d) => d.kind === 'OperationDefinition');
      if (ops.length !== 1) errors.push('exactly one operation expected');
      else {
        const r = getVariableValues(schema, ops[0].variableDefinitions || [], variables || {});
        if (r.errors) errors = r.errors.map((e) => e.message);
      }
    }
  } catch (e) { errors = [String(e.message || e)]; }
  process.stdout.write(JSON.stringify(errors) + '\n');
});
"#;

fn node() -> &'static Mutex<Node> {
    static NODE: OnceLock<Mutex<Node>> = OnceLock::new();
    NODE.get_or_init(|| {
        let d = dir();
        assert!(
            d.join("node_modules/@octokit/graphql-schema/schema.json")
                .is_file(),
            "{}: no GraphQL schema: run scripts/test once (it installs the GitHub API oracles)",
            d.display()
        );
        let mut child = Command::new("node")
            .args(["-e", VALIDATOR, d.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs (v20 is a test peer)");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Mutex::new(Node {
            _child: child,
            stdin,
            stdout,
        })
    })
}

/// Checks a GraphQL request (document and variables) against GitHub's schema.
pub fn check_graphql(body: &Value) -> Result<(), String> {
    let mut n = node().lock().unwrap_or_else(|e| e.into_inner());
    let line = json!({"query": body["query"], "variables": body["variables"]}).to_string();
    writeln!(n.stdin, "{line}").map_err(|e| e.to_string())?;
    n.stdin.flush().map_err(|e| e.to_string())?;
    let mut out = String::new();
    n.stdout.read_line(&mut out).map_err(|e| e.to_string())?;
    let errors: Vec<String> =
        serde_json::from_str(&out).map_err(|e| format!("validator: {e}: {out}"))?;
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
