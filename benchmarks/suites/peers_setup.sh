#!/usr/bin/env bash
# Create one virtualenv per peer of benchmarks/suites/peers.py under ~/.cache/albert-edge/peers/ (or
# $ALBERT_EDGE_PEERS_DIR), from the package registries, every version pinned. The peers pin versions
# that conflict with albert-edge's own environment and with each other (TensorFlow 2.12 + numpy < 1.24
# for Optimum's TFLite exporter; optimum 2.1 + transformers 4.57 for optimum-onnx; torch + torchao for
# ExecuTorch), so each gets its own. A venv whose pins are unchanged is left as it is (stamp file).
#
#   bash benchmarks/suites/peers_setup.sh            # all four (10-15 minutes from an empty cache)
#   bash benchmarks/suites/peers_setup.sh onnx       # just one: tflite | onnx | executorch | litert
#
# torch is always torch==2.13.0 (the CPU wheel found locally; an unpinned torch would pull a CUDA
# build of gigabytes). Pitfalls worked around here, and why, are in docs/peers.md.
set -euo pipefail

ROOT="${ALBERT_EDGE_PEERS_DIR:-$HOME/.cache/albert-edge/peers}"
PYTHON="${PYTHON:-python3.11}"

# Optimum 1.27 is the last release with a TFLite exporter. Its exporters-tf extra pins
# tensorflow<=2.12.1, transformers<4.38, numpy<1.24. optimum itself is installed without its
# dependencies: it declares torch, which the TFLite path never uses and which cannot share a venv
# with TensorFlow 2.12 (typing-extensions < 4.6 vs >= 4.10); the one torch/torchvision import on the
# text path is guarded in benchmarks/suites/peer_tools/build_optimum_tflite.py. huggingface_hub 0.25 is the
# newest that transformers 4.37 accepts and has the huggingface_hub.errors module optimum 1.27 imports.
TFLITE_NODEPS=(optimum==1.27.0)
TFLITE_PINS=(tensorflow-cpu==2.12.1 transformers==4.37.2 numpy==1.23.5 huggingface_hub==0.25.2
             typing-extensions==4.5.0 h5py==3.16.0 requests==2.34.2)
# optimum-onnx 0.1.0 requires optimum~=2.1.0 and transformers<4.58.
ONNX_PINS=(optimum-onnx==0.1.0 optimum==2.1.0 transformers==4.57.6 onnxruntime==1.23.2 onnx==1.19.1
           torch==2.13.0)
EXECUTORCH_PINS=(executorch==1.5.1 torch==2.13.0 torchao==0.18.0 transformers==4.57.6)
# Google's 2026 path: litert-torch (PyTorch -> .tflite) and litert-quantizer (.tflite -> int8 / int4).
# litert-torch 0.10 itself requires ai-edge-quantizer==0.10.* (the quantizer's old name) and leaves
# transformers unbounded, so the venv holds both quantizer packages; every other dependency is pinned by
# the constraints file (the venv's pip freeze, pip check clean).
LITERT_PINS=(litert-torch==0.10.0 litert-quantizer==0.11.0 ai-edge-quantizer==0.10.0 torch==2.13.0
             transformers==5.25.0 ai-edge-litert==2.3.0 litert-converter==0.5.0 torchao==0.18.0)
LITERT_CONSTRAINTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/peer_tools/litert_constraints.txt"

make_venv() {  # name, then pins; "--" separates the --no-deps pins that come first; "-c FILE": pip constraints
    local name="$1"; shift
    local nodeps=() pins=() seen_sep=0 constraints="" next_is_file=0
    for arg in "$@"; do
        if [[ $next_is_file == 1 ]]; then constraints="$arg"; next_is_file=0; continue; fi
        if [[ "$arg" == "-c" ]]; then next_is_file=1; continue; fi
        if [[ "$arg" == "--" ]]; then seen_sep=1; continue; fi
        if [[ $seen_sep == 0 ]]; then nodeps+=("$arg"); else pins+=("$arg"); fi
    done
    local dir="$ROOT/$name" stamp="${nodeps[*]:-} | ${pins[*]}" cflags=()
    if [[ -n "$constraints" ]]; then
        cflags=(-c "$constraints")
        stamp="$stamp | $(sha256sum "$constraints" | cut -c1-16)"
    fi
    if [[ -f "$dir/.albert-edge-pins" && "$(cat "$dir/.albert-edge-pins")" == "$stamp" ]]; then
        echo "peers_setup: $name venv up to date ($dir)"
        return
    fi
    echo "peers_setup: creating $name venv in $dir"
    rm -rf "$dir"
    "$PYTHON" -m venv "$dir"
    if [[ ${#nodeps[@]} -gt 0 ]]; then
        "$dir/bin/pip" install -q --no-deps "${nodeps[@]}" 2>&1 | grep -v "is ignored" || true
    fi
    "$dir/bin/pip" install -q "${cflags[@]}" "${pins[@]}" 2>&1 | grep -v "is ignored\|dependency resolver\|requires torch" || true
    for pin in "${nodeps[@]}" "${pins[@]}"; do
        local dist="${pin%%==*}" want="${pin##*==}" have
        have="$("$dir/bin/python" -c "import sys; from importlib import metadata; print(metadata.version(sys.argv[1]))" "$dist" 2>/dev/null || true)"
        if [[ "${have%%+*}" != "$want" ]]; then
            echo "peers_setup: $name: $dist is '${have:-missing}', expected $want" >&2
            exit 1
        fi
    done
    "$dir/bin/pip" freeze > "$dir/freeze.txt" 2>/dev/null
    echo "$stamp" > "$dir/.albert-edge-pins"
}

mkdir -p "$ROOT"
for name in "${@:-tflite onnx executorch litert}"; do
    for one in $name; do
        case "$one" in
            tflite) make_venv tflite "${TFLITE_NODEPS[@]}" -- "${TFLITE_PINS[@]}" ;;
            onnx) make_venv onnx -- "${ONNX_PINS[@]}" ;;
            executorch) make_venv executorch -- "${EXECUTORCH_PINS[@]}" ;;
            litert) make_venv litert -c "$LITERT_CONSTRAINTS" -- "${LITERT_PINS[@]}" ;;
            *) echo "peers_setup: unknown peer '$one' (expected tflite, onnx, executorch or litert)" >&2; exit 2 ;;
        esac
    done
done
echo "peers_setup: done; run python -m benchmarks.suites.peers"
