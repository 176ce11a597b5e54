#!/usr/bin/env python3
"""Assemble the update-pair corpus (fixtures/updates/pairs.tsv) from the CHANGELOG.md files of the
crates in the cargo registry cache.

Each pair is (old, new, source): `new` is a changelog line that announces a change of one thing's
value (a version, the MSRV, the edition, a dependency, a switch from one tool to another), cleaned
of its list marker and pull-request references and otherwise verbatim; `old` is the state that line
replaced, written as a plain statement of the same thing with the value it had before: the "from"
value when the line gives one, else the value the crate's previous line about the same thing set.
Several phrasings of the old statement are used in turn, so no single template is measured.

The first of CHANGELOG.md, CHANGES.md, CHANGES, RELEASES.md, RELEASE-NOTES.md, HISTORY.md and NEWS.md
a crate has is read.

Usage: scripts/update-corpus.py <registry src dir> > fixtures/updates/pairs.tsv
"""
import os
import re
import sys

VERBS = r"(?:set|sets|pin(?:ned|s)?|bump(?:ed|s)?|rais(?:e|ed|es)|increas(?:e|ed|es)|upgrad(?:e|ed|es)|updat(?:e|ed|es)|lower(?:ed)?|decreas(?:e|ed))"
VALUE = r"`?v?(\d+(?:\.\d+){0,2}(?:-[a-z0-9.]+)?)`?"
CHANGE = re.compile(
    r"^(?P<verb>" + VERBS + r")\s+(?P<np>(?:the\s+)?[`A-Za-z][`A-Za-z0-9_\-. ()]{1,60}?)\s+(?:from\s+" + VALUE + r"\s+)?to\s+(?:Rust\s+|rustc\s+|version\s+|v)?" + VALUE + r"\b",
    re.I,
)
SWITCH = re.compile(r"^(?P<verb>switch(?:ed)?|migrat(?:e|ed))\s+(?P<np>[A-Za-z][A-Za-z0-9_\- ]{1,40}?\s+)?from\s+`?(?P<a>[A-Za-z][\w.\-]*)`?\s+to\s+`?(?P<b>[A-Za-z][\w.\-]*)`?", re.I)
TO_NAME = re.compile(r"^(?P<verb>" + VERBS + r"|mov(?:e|ed|es)|migrat(?:e|ed|es))\s+to\s+`?(?P<np>[A-Za-z][A-Za-z0-9_\-]*)`?\s+" + VALUE + r"\b", re.I)
FROM_TO = re.compile(r"^(?:\*\*[^*]+\*\*\s+)?(?:[A-Za-z ]+:\s+)?(?P<verb>chang(?:e|ed|es)|mov(?:e|ed|es)|switch(?:ed|es)?|migrat(?:e|ed|es))\s+(?P<np>(?:the\s+)?[`A-Za-z][`A-Za-z0-9_\-.* ]{1,50}?)\s+from\s+`?(?P<a>[^ `]+)`?\s+to\s+`?(?P<b>[^ `,;]+)`?", re.I)
INSTEAD = re.compile(r"^(?:[a-z]+:\s+)?(?P<np>(?:the\s+)?[`A-Za-z][`A-Za-z0-9_\- ]{1,40}?)\s+(?:now\s+)?(?P<verb>uses|returns|defaults to|requires|depends on|is|are)\s+(?P<b>[^.;(]+?)\s+instead of\s+(?P<a>[^.;(,]+)", re.I)
NOW = re.compile(r"^(?P<np>(?:the\s+)?[A-Za-z][A-Za-z0-9_\-() ]{1,60}?)\s+is\s+now\s+" + VALUE + r"\b", re.I)
OLD = ["{np} is {v}", "The {np} is {v}", "{np}: {v}", "{np} is set to {v}", "{np} stays at {v}"]


def clean(line):
    line = re.sub(r"^\s*[-*+]\s+", "", line).strip()
    line = re.sub(r"\s*\((?:\[?#\d+\]?(?:\([^)]*\))?[, ]*)+\)", "", line)  # (#123), ([#123](url))
    line = re.sub(r"\s*\[#\d+\](?:\([^)]*\))?", "", line)
    line = re.sub(r"\s*\(?https?://\S+\)?", "", line)
    line = re.sub(r"\s*\(\[`[0-9a-f]{7,}`\].*$", "", line)  # ([`0606d46`](…)
    line = re.sub(r"(?:\s+#\d+)+\s*$", "", line)  # a bare trailing #308
    line = re.sub(r"\s*\(\[[\w-]*#\d+\]\)\s*$", "", line)  # ([rand#1558])
    return line.strip()


def main(root):
    pairs = []
    seen = set()
    for crate in sorted(os.listdir(root)):
        names = ["CHANGELOG.md", "CHANGES.md", "CHANGES", "RELEASES.md", "RELEASE-NOTES.md", "HISTORY.md", "NEWS.md"]
        found = [n for n in names if os.path.isfile(os.path.join(root, crate, n))]
        if not found:
            continue
        name = found[0]
        path = os.path.join(root, crate, name)
        lines = [l for l in open(path, encoding="utf-8", errors="replace").read().splitlines() if l.strip() and not l.lstrip().startswith(("#", "|", "<", "["))]
        # A changelog lists the newest release first: walk from the oldest line, remembering the
        # last value each thing was set to.
        last = {}
        for raw in reversed(lines):
            line = clean(raw)
            if "::" in line or "()" in line or len(line) > 160:
                continue
            m = CHANGE.match(line)
            s = SWITCH.match(line) if not m else None
            t = TO_NAME.match(line) if not (m or s) else None
            f = FROM_TO.match(line) if not (m or s or t) else None
            i = INSTEAD.match(line) if not (m or s or t or f) else None
            n = NOW.match(line) if not (m or s or t or f or i) else None
            if n:
                np = re.sub(r"[`()]", "", n.group("np")).strip()
                np = re.sub(r"^the\s+", "", np, flags=re.I)
                key = np.lower()
                before, after = last.get(key), n.group(2)
                last[key] = after
                if not before or before == after:
                    continue
                old = OLD[len(pairs) % len(OLD)].format(np=np, v=before)
                if old[0].islower() and " " in old[:12]:
                    old = old[0].upper() + old[1:]
                if (old, line) not in seen:
                    seen.add((old, line))
                    pairs.append((old, line, f"{crate}/{name}"))
                continue
            a_words = i.group("a").split() if i else []
            clean_a = i and 1 <= len(a_words) <= 6 and not a_words[0].endswith("ing") \
                and a_words[-1].lower() not in ("when", "it", "to", "the", "a", "an", "of", "for", "and") \
                and not line.split()[-1] in ("It", "it", "the", "to", "of", "and", "when") \
                and not i.group("np").lower().startswith("if ")
            if clean_a:
                np = i.group("np").strip()
                old = f"{np} {i.group('verb')} {i.group('a').strip()}"
                if old[0].islower() and " " in old[:12] and not old.startswith("`"):
                    old = old[0].upper() + old[1:]
            elif f and f.group("a").lower() != f.group("b").lower() and not re.sub(r"[`*]", "", f.group("np")).lower().startswith("to "):
                np = re.sub(r"[`*]", "", f.group("np")).strip()
                np = re.sub(r"^the\s+", "", np, flags=re.I)
                old = ["The {np} is {v}", "{np}: {v}", "{np} is {v}"][len(pairs) % 3].format(np=np, v=f.group("a"))
                if old[0].islower() and " " in old[:12]:
                    old = old[0].upper() + old[1:]
            elif t:
                np = t.group("np")
                key = np.lower()
                before, after = last.get(key), t.group(3)
                last[key] = after
                if not before or before == after:
                    continue
                old = ["{np} {v} is used", "{np}: {v}", "{np} is pinned to {v}", "{np} is at {v}"][len(pairs) % 4].format(np=np, v=before)
            elif m:
                np = re.sub(r"[`()]", "", m.group("np")).strip()
                np = re.sub(r"^the\s+", "", np, flags=re.I)
                key = np.lower()
                before = m.group(3) or last.get(key)
                after = m.group(4)
                last[key] = after
                if not before or before == after or not re.search(r"[A-Za-z]", np):
                    continue
                old = OLD[len(pairs) % len(OLD)].format(np=np, v=before)
                # A sentence starts with a capital, unless it starts with a crate's own name.
                if old[0].islower() and not re.match(r"^[a-z0-9]+[-_]", old) and " " in old[:12]:
                    old = old[0].upper() + old[1:]
            elif s and s.group("a").lower() != s.group("b").lower():
                np = (s.group("np") or "").strip()
                thing = np if np else crate.rsplit("-", 1)[0]
                old = f"{thing} uses {s.group('a')}"
                if not np:
                    line = f"{thing} {line[0].lower()}{line[1:]}"
            else:
                continue
            if (old, line) in seen:
                continue
            seen.add((old, line))
            pairs.append((old, line, f"{crate}/{name}"))
    for old, new, src in pairs:
        print(f"{old}\t{new}\t{src}")


if __name__ == "__main__":
    main(sys.argv[1])
