#!/usr/bin/env python3
"""Agent writes for the simulated year of tests/it/curation.rs, from text nobody here wrote.

Reads the markdown (READMEs, changelogs) of every crate in the cargo registry cache, keeps
paragraphs of 60 to 400 characters that start with a letter (no tables, links or HTML lines),
shuffles them with a fixed seed and writes JSON lines {"text", "source"} (source: the crate),
the shape of fixtures/code/functions.jsonl. Then:

    python3 scripts/year-corpus.py > /tmp/year.jsonl
    GIT_NEO_YEAR_CORPUS=/tmp/year.jsonl cargo test --test it -- --include-ignored --nocapture simulated_year

Licence boilerplate and release notes repeat across crates: near-duplicates, as agents write them.
"""
import glob
import json
import os
import random
import sys

home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
crates = sorted(glob.glob(os.path.join(home, "registry", "src", "*", "*")))
out = []
for crate in crates:
    name = os.path.basename(crate).rsplit("-", 1)[0]
    for path in sorted(glob.glob(os.path.join(crate, "*.md")))[:2]:
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        for p in text.split("\n\n"):
            p = " ".join(p.split())
            if 60 <= len(p) <= 400 and p[0].isalpha():
                out.append({"text": p, "source": name})
if not out:
    sys.exit("no crate markdown in %s: build the project once so cargo fills it" % os.path.join(home, "registry", "src"))
random.Random(7).shuffle(out)
for o in out[:4000]:
    print(json.dumps(o))
print("%d paragraphs from %d crates" % (min(len(out), 4000), len(crates)), file=sys.stderr)
