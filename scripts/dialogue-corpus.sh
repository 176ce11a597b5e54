#!/usr/bin/env bash
# A public dialogue for the supersession bench's negative corpus: the English conversations of
# chatterbot-corpus 1.2.0 (BSD), downloaded with pip and unpacked into a directory of YAML files.
# Usage: scripts/dialogue-corpus.sh [DIR]; then GIT_NEO_DIALOGUE=DIR/english cargo bench --bench statebench
set -euo pipefail
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/git-neo/dialogue}"
mkdir -p "$dir"
python3 -m pip download --no-deps --quiet chatterbot-corpus==1.2.0 -d "$dir/wheel"
python3 - "$dir" <<'PY'
import sys, zipfile, glob, os
d = sys.argv[1]
wheel = glob.glob(os.path.join(d, "wheel", "chatterbot_corpus-1.2.0-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    for n in z.namelist():
        if n.startswith("chatterbot_corpus/data/english/") and n.endswith(".yml"):
            out = os.path.join(d, "english", os.path.basename(n))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(z.read(n))
print(os.path.join(d, "english"))
PY
