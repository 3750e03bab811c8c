#!/usr/bin/env bash
# Installs what is missing, builds, and runs the project's main job: the
# diffusiond daemon serving the built-in demo models of both architectures
# side by side, driven by a client.
#   1. diffusiond-demo writes two small models (random weights, real
#      diffusers file format) and conditioning for them into build/models if
#      absent: a Z-Image-architecture model (caption features) and a
#      FLUX.1-dev-architecture model (T5 sequence and CLIP pooled vector);
#   2. diffusiond starts on loopback with build/models as its models dir;
#   3. diffusionctl loads both models (progress bar), denoises a 512x512
#      latent with each — Z-Image with classifier-free guidance (a negative
#      prompt, guidance 4), FLUX with its distilled guidance scalar
#      (guidance=3.5, one pass per step) — with per-step progress, lists the
#      cache (both models) and reads the daemon's statistics;
#   4. from a prompt to a PNG: diffusionctl generate runs a Z-Image pipeline
#      folder (build/models/zpipe: Qwen3 text encoder with its tokenizer,
#      transformer, VAE — random weights in the real layouts, so the image is
#      noise) through the daemon, which loads each component as a cached
#      model, encodes, denoises and decodes, and streams every stage; then
#      the same for a FLUX.1-dev pipeline folder (build/models/fluxpipe: CLIP
#      and T5 encoders with their tokenizers, transformer, VAE), again with a
#      random LoRA adapter (build/models/flux-style-lora.safetensors) applied
#      for that request only, a Qwen-Image
#      one (build/models/qwenpipe: Qwen2.5-VL with its tokenizer, transformer,
#      AutoencoderKLQwenImage), a Krea 2 one (build/models/krea2pipe:
#      Qwen3-VL tapped at several layers, transformer, the same VAE) and an
#      Anima one (build/models/animapipe: Qwen3 with its tokenizer, the text
#      conditioner reading it through the prompt's T5 ids, the Cosmos
#      transformer, the same VAE), those three at 256x256 to keep the demo
#      short;
#   5. from a prompt to a video: diffusionctl generate runs a Wan 2.2 pipeline
#      folder (build/models/wanpipe: UMT5 with its tokenizer, two experts
#      switching at boundary_ratio, the causal 3-D VAE) and writes a 9-frame
#      MP4 as the VAE decodes its frames;
#   6. SIGTERM drains the daemon, which exits 0.
# The final latents are written to build/demo-latents.safetensors and
# build/demo-flux-latents.safetensors, the images to build/demo.png,
# build/demo-flux.png, build/demo-flux-lora.png, build/demo-qwen-image.png,
# build/demo-krea2.png and build/demo-anima.png, the video to build/demo-wan.mp4. Extra
# arguments go to both `diffusionctl denoise` calls (e.g. --steps 4 --seed 7).
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/build-env.sh

bash deploy/install-deps.sh
cmake -S . -B build/release -G Ninja >/dev/null
cmake --build build/release --target diffusiond diffusionctl diffusiond-demo

bin=build/release/server
tools=build/release/tools
clients=build/release/clients
mkdir -p build/models
if [[ ! -f build/models/demo/config.json ]]; then
  "$tools/diffusiond-demo" --arch z-image --model_dir build/models/demo --generate_only \
    --inputs_dir build/models/demo-inputs
fi
if [[ ! -f build/models/flux-demo/config.json ]]; then
  "$tools/diffusiond-demo" --arch flux --model_dir build/models/flux-demo --generate_only \
    --inputs_dir build/models/flux-demo-inputs
fi
if [[ ! -f build/models/zpipe/model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/zpipe
fi
if [[ ! -f build/models/fluxpipe/model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/fluxpipe --pipeline flux
fi
if [[ ! -f build/models/flux-style-lora.safetensors ]]; then
  "$tools/diffusiond-demo" --write_lora build/models/flux-style-lora.safetensors
fi
if [[ ! -f build/models/qwenpipe/model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/qwenpipe --pipeline qwen-image
fi
if [[ ! -f build/models/krea2pipe/model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/krea2pipe --pipeline krea2
fi
if [[ ! -f build/models/wanpipe/model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/wanpipe --pipeline wan22
fi
if [[ ! -f build/models/animapipe/modular_model_index.json ]]; then
  "$tools/diffusiond-demo" --write_pipeline build/models/animapipe --pipeline anima
fi

log=build/diffusiond-demo.log
echo "== starting diffusiond (log: $log)"
"$bin/diffusiond" --models_dir build/models --listen 127.0.0.1:0 --metrics_listen 127.0.0.1:0 \
  --drain_grace 10s 2>"$log" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "msg=ready" "$log" && break
  kill -0 $daemon 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done
grep "msg=ready" "$log"
address=$(grep -o ' listen=[^ ]*' "$log" | head -1 | cut -d= -f2)
ctl=("$clients/diffusionctl" --address "$address")

echo "== diffusionctl health readiness"
"${ctl[@]}" health readiness
echo "== diffusionctl load demo"
"${ctl[@]}" load demo
echo "== diffusionctl denoise demo (512x512, guidance 4)"
"${ctl[@]}" denoise demo --conditioning build/models/demo-inputs/conditioning.safetensors \
  --negative build/models/demo-inputs/negative.safetensors --guidance 4 --shape 16,64,64 --seed 42 \
  --out build/demo-latents.safetensors "$@"
echo "== diffusionctl load flux-demo"
"${ctl[@]}" load flux-demo
echo "== diffusionctl denoise flux-demo (512x512, distilled guidance 3.5)"
"${ctl[@]}" denoise flux-demo --conditioning build/models/flux-demo-inputs/conditioning.safetensors \
  --scalars guidance=3.5 --shape 16,64,64 --seed 42 --out build/demo-flux-latents.safetensors "$@"
echo "== diffusionctl generate zpipe (prompt -> 512x512 PNG through text encoder, transformer, VAE)"
"${ctl[@]}" generate zpipe --prompt "a lighthouse on a cliff at dawn" --negative "blurry" \
  --width 512 --height 512 --steps 8 --guidance 4 --seed 42 --out build/demo.png
echo "== diffusionctl generate fluxpipe (prompt -> 512x512 PNG through CLIP, T5, transformer, VAE)"
"${ctl[@]}" generate fluxpipe --prompt "a lighthouse on a cliff at dawn" \
  --width 512 --height 512 --steps 4 --seed 42 --out build/demo-flux.png
echo "== diffusionctl generate fluxpipe with a LoRA adapter at weight 0.8 (the base stays loaded, FP8)"
"${ctl[@]}" generate fluxpipe --prompt "a lighthouse on a cliff at dawn" \
  --width 512 --height 512 --steps 4 --seed 42 --lora flux-style-lora.safetensors:0.8 --out build/demo-flux-lora.png
echo "== diffusionctl generate qwenpipe (prompt -> 256x256 PNG through Qwen2.5-VL, transformer, VAE; true CFG)"
"${ctl[@]}" generate qwenpipe --prompt "a lighthouse on a cliff at dawn" --negative "blurry" \
  --width 256 --height 256 --steps 4 --seed 42 --out build/demo-qwen-image.png
echo "== diffusionctl generate krea2pipe (prompt -> 256x256 PNG through Qwen3-VL's tapped layers, transformer, VAE)"
"${ctl[@]}" generate krea2pipe --prompt "a lighthouse on a cliff at dawn" --negative "blurry" \
  --width 256 --height 256 --steps 4 --seed 42 --out build/demo-krea2.png
echo "== diffusionctl generate animapipe (prompt -> 256x256 PNG through Qwen3, the text conditioner, Cosmos, VAE)"
"${ctl[@]}" generate animapipe --prompt "a lighthouse on a cliff at dawn" --negative "blurry" \
  --width 256 --height 256 --steps 4 --seed 42 --out build/demo-anima.png
echo "== diffusionctl generate wanpipe (prompt -> 9 frames of 256x256 through UMT5, two experts, the video VAE -> MP4)"
"${ctl[@]}" generate wanpipe --prompt "a lighthouse on a cliff at dawn, waves rolling in" \
  --width 256 --height 256 --num_frames 9 --steps 6 --seed 42 --out build/demo-wan.mp4
echo "== diffusionctl ls"
"${ctl[@]}" ls
echo "== diffusionctl stats"
"${ctl[@]}" stats

echo "== SIGTERM: drain and exit"
trap - EXIT
kill -TERM $daemon
status=0
wait $daemon || status=$?
tail -n 3 "$log"
echo "diffusiond exited with status $status"
exit $status
