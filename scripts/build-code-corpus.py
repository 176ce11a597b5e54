#!/usr/bin/env python3
"""Build fixtures/code/functions.jsonl: real functions in three languages, written by others, that
the write-time filter (src/redact.rs) must accept. Used by the false-positive test in
tests/it/redact_corpus.rs.

Sources, each under its own license (recorded per function in the `license` field):
  - Python: the CPython 3.11 standard library (PSF License 2.0), top-level `def`s via `ast`.
  - Rust: crates in the local cargo registry cache whose license is MIT or Apache-2.0, `fn` items
    found by a brace-matching scan.
  - JavaScript: npm's own bundled dependencies (ISC / MIT, as their package.json says), `function`
    declarations found the same way.

Deterministic: files are visited in sorted order and every Nth function kept, so re-running on the
same inputs gives the same corpus.

Usage: scripts/build-code-corpus.py PYTHON_STDLIB CARGO_REGISTRY_SRC NPM_NODE_MODULES
"""
import ast, glob, json, os, re, sys

MAX_CHARS = 1200
PER_LANG = 900

def take_every(items, n):
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]

def python_functions(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*.py")) + glob.glob(os.path.join(root, "*", "*.py"))):
        if "/test" in path or "site-packages" in path or "idlelib" in path:
            continue
        try:
            src = open(path, encoding="utf-8").read()
            tree = ast.parse(src)
        except Exception:
            continue
        lines = src.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.end_lineno:
                text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
                if 3 <= text.count("\n") and len(text) <= MAX_CHARS:
                    out.append(("python", "cpython/Lib/" + os.path.relpath(path, root), "PSF-2.0", text))
    return out

def brace_functions(path, start_re, lang, source, license_):
    try:
        src = open(path, encoding="utf-8").read()
    except Exception:
        return []
    out = []
    for m in start_re.finditer(src):
        i = src.find("{", m.end())
        if i < 0 or src[m.end():i].count(";"):
            continue
        depth, j = 0, i
        while j < len(src):
            c = src[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        text = src[m.start(): j + 1]
        if depth == 0 and 3 <= text.count("\n") and len(text) <= MAX_CHARS:
            out.append((lang, source, license_, text))
    return out

def crate_license(crate_dir):
    try:
        toml = open(os.path.join(crate_dir, "Cargo.toml"), encoding="utf-8").read()
    except Exception:
        return None
    m = re.search(r'^license\s*=\s*"([^"]+)"', toml, re.M)
    lic = m.group(1) if m else ""
    return lic if ("MIT" in lic or "Apache-2.0" in lic) else None

def rust_functions(registry):
    out = []
    fn_re = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+\w+", re.M)
    for crate in sorted(os.listdir(registry)):
        d = os.path.join(registry, crate)
        lic = crate_license(d)
        if not lic:
            continue
        for path in sorted(glob.glob(os.path.join(d, "src", "**", "*.rs"), recursive=True))[:20]:
            out += brace_functions(path, fn_re, "rust", crate + "/" + os.path.relpath(path, d), lic)
    return out

def js_functions(node_modules):
    out = []
    fn_re = re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*\w+\s*\(", re.M)
    for pkg_json in sorted(glob.glob(os.path.join(node_modules, "**", "package.json"), recursive=True)):
        d = os.path.dirname(pkg_json)
        try:
            lic = json.load(open(pkg_json)).get("license")
        except Exception:
            continue
        if lic not in ("MIT", "ISC", "BSD-2-Clause", "BSD-3-Clause", "Apache-2.0"):
            continue
        for path in sorted(glob.glob(os.path.join(d, "lib", "*.js")) + glob.glob(os.path.join(d, "*.js")))[:10]:
            out += brace_functions(path, fn_re, "javascript", os.path.relpath(path, node_modules), lic)
    return out

def main():
    py_root, registry, node_modules, out_path = sys.argv[1:5]
    rows = []
    for found in (python_functions(py_root), rust_functions(registry), js_functions(node_modules)):
        # One function text once, then an even spread over the sources.
        seen, uniq = set(), []
        for r in found:
            if r[3] not in seen:
                seen.add(r[3]); uniq.append(r)
        rows += take_every(uniq, PER_LANG)
    with open(out_path, "w", encoding="utf-8") as f:
        for lang, source, lic, text in rows:
            f.write(json.dumps({"lang": lang, "source": source, "license": lic, "text": text}, ensure_ascii=False) + "\n")
    counts = {}
    for r in rows:
        counts[r[0]] = counts.get(r[0], 0) + 1
    print(f"wrote {len(rows)} functions: {counts}", file=sys.stderr)

main()
