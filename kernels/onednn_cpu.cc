#include "kernels/onednn_cpu.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace diffusiond {

namespace {

using dnnl::memory;
using Dims = memory::dims;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    default:
      return "other";
  }
}

// A bf16 matmul of 128 rows by a [K, N] weight in whatever blocked layout
// oneDNN prefers on this CPU: its weights_desc() is that layout, its
// impl_info_str() the kernel it runs.
dnnl::matmul::primitive_desc bf16_matmul_with_blocked_weights(int64_t in, int64_t out_features) {
  const auto bf16 = memory::data_type::bf16;
  const memory::desc src_md(Dims{128, in}, bf16, memory::format_tag::ab);
  const memory::desc any_md(Dims{in, out_features}, bf16, memory::format_tag::any);
  const memory::desc dst_md(Dims{128, out_features}, bf16, memory::format_tag::ab);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, any_md, dst_md), cpu_engine());
}

// One chunk's two products, for chunks of `rows` queries: scores (float32) =
// scale · q kᵀ (+ the mask's bias), and out (bf16) = probabilities (bf16) v;
// between them the softmax, float32 in, rounded to bf16 as it is written,
// in one pass over the scores. The same primitives serve every batch item
// and head; only the data handles change.
struct ChunkProducts {
  dnnl::matmul scores, values;
  dnnl::softmax_v2_forward softmax;
  memory q, kt, bias, s, p, v, o;

  ChunkProducts(int64_t rows, int64_t keys, int64_t head_dim, int64_t value_dim, bool masked, double scale) {
    const dnnl::engine& engine = cpu_engine();
    const auto bf16 = memory::data_type::bf16, f32 = memory::data_type::f32;
    const memory::desc q_md(Dims{rows, head_dim}, bf16, Dims{head_dim, 1});
    const memory::desc kt_md(Dims{head_dim, keys}, bf16, Dims{1, head_dim});  // k's rows, read transposed
    const memory::desc s_md(Dims{rows, keys}, f32, Dims{keys, 1});
    const memory::desc bias_md(Dims{1, keys}, f32, Dims{keys, 1});
    const memory::desc p_md(Dims{rows, keys}, bf16, Dims{keys, 1});
    const memory::desc v_md(Dims{keys, value_dim}, bf16, Dims{value_dim, 1});
    const memory::desc o_md(Dims{rows, value_dim}, bf16, Dims{value_dim, 1});
    // oneDNN 2.x applies the output scale after the bias; the bias is 0 or
    // -inf, which scaling leaves as it is.
    dnnl::primitive_attr scaled;
    scaled.set_output_scales(0, {static_cast<float>(scale)});
    const dnnl::matmul::desc scores_desc =
        masked ? dnnl::matmul::desc(q_md, kt_md, bias_md, s_md) : dnnl::matmul::desc(q_md, kt_md, s_md);
    scores = dnnl::matmul(dnnl::matmul::primitive_desc(scores_desc, scaled, engine));
    values = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(p_md, v_md, o_md), engine));
    softmax = dnnl::softmax_v2_forward(dnnl::softmax_v2_forward::primitive_desc(
        dnnl::softmax_v2_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::softmax_accurate, s_md,
                                       p_md, /*softmax_axis=*/1),
        engine));
    q = memory(q_md, engine, nullptr);
    kt = memory(kt_md, engine, nullptr);
    bias = memory(bias_md, engine, nullptr);
    s = memory(s_md, engine, nullptr);
    p = memory(p_md, engine, nullptr);
    v = memory(v_md, engine, nullptr);
    o = memory(o_md, engine, nullptr);
  }
};

// oneDNN runs on OpenMP's threads, as many as the calling thread's ICV
// says. libtorch sets that per thread on its first parallel op
// (at::set_num_threads from the main thread reaches other threads that way),
// so a thread whose first op is one of these sets it here.
void use_libtorch_threads() { at::internal::lazy_init_num_threads(); }

}  // namespace

bool have_onednn_bf16() {
  static const bool have = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
  }();
  return have;
}

std::string onednn_description() {
  const dnnl_version_t* version = dnnl_version();
  // The kernel a bf16 matmul gets here, as ONEDNN_VERBOSE would name it:
  // "brg:avx512_core_bf16" on native bf16, a reference or emulating one
  // elsewhere.
  std::string matmul = "none";
  try {
    matmul = bf16_matmul_with_blocked_weights(256, 256).impl_info_str();
  } catch (const dnnl::error&) {
  }
  return absl::StrCat("oneDNN ", version->major, ".", version->minor, ".", version->patch, ", ",
                      isa_name(dnnl::get_effective_cpu_isa()), ", bf16 matmul ", matmul);
}

namespace {

// The blocked layout oneDNN's bf16 matmul wants for a [K, N] weight on this
// CPU, for elements of `type` (bf16 weights, or their FP8 codes as u8: the
// blocking is in elements, whatever their size). Asked with 128 rows; it is
// the same for any (1 to 2304 rows measured on AVX512-BF16), and a matmul
// of other rows accepts it.
memory::desc packed_weights_md(int64_t in, int64_t out_features,
                               memory::data_type type = memory::data_type::bf16) {
  static std::mutex mu;
  static auto* known = new std::map<std::pair<int64_t, int64_t>, memory::desc>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = known->find({in, out_features});
  if (it == known->end()) {
    const memory::desc blocked = bf16_matmul_with_blocked_weights(in, out_features).weights_desc();
    it = known->emplace(std::make_pair(in, out_features), blocked).first;
  }
  memory::desc md = it->second;
  md.data.data_type = static_cast<dnnl_data_type_t>(type);
  return md;
}

// The [K, N] view oneDNN takes of a plain [N, K] weight: element (k, n) at
// n·row_stride + k.
memory::desc plain_weights_md(int64_t in, int64_t out_features, int64_t row_stride,
                              memory::data_type type = memory::data_type::bf16) {
  return memory::desc(Dims{in, out_features}, type, Dims{1, row_stride});
}

void check_linear_args(const torch::Tensor& x, const torch::Tensor& weight, const char* what) {
  TORCH_CHECK(have_onednn_bf16(), what, ": the CPU has no native bf16 products");
  TORCH_CHECK(x.scalar_type() == torch::kBFloat16 && weight.scalar_type() == torch::kBFloat16 && x.device().is_cpu() &&
                  weight.device().is_cpu() && weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1),
              what, ": x [..., K] and weight [N, K] must be bf16 CPU tensors");
}

// x Wᵀ + b with the weight described by `weights_md` at `weights_data`.
torch::Tensor linear_with(const torch::Tensor& x, const memory::desc& weights_md, void* weights_data,
                          int64_t out_features, const torch::Tensor& bias) {
  use_libtorch_threads();
  const int64_t in = x.size(-1);
  torch::Tensor rows = x.reshape({-1, in});
  if (rows.stride(1) != 1) rows = rows.contiguous();
  std::vector<int64_t> out_sizes = x.sizes().vec();
  out_sizes.back() = out_features;
  const int64_t m = rows.size(0);
  torch::Tensor out = torch::empty({m, out_features}, x.options());
  if (m == 0 || out_features == 0) return out.view(out_sizes);

  const dnnl::engine& engine = cpu_engine();
  const auto bf16 = memory::data_type::bf16;
  const memory::desc src_md(Dims{m, in}, bf16, Dims{rows.stride(0), 1});
  const memory::desc dst_md(Dims{m, out_features}, bf16, Dims{out_features, 1});
  memory src(src_md, engine, rows.data_ptr()), weights(weights_md, engine, weights_data),
      dst(dst_md, engine, out.data_ptr());
  dnnl::stream stream(engine);
  if (bias.defined()) {
    const torch::Tensor b =
        bias.scalar_type() == torch::kBFloat16 ? bias.contiguous() : bias.to(torch::kFloat32).contiguous();
    const memory::desc bias_md(Dims{1, out_features},
                               b.scalar_type() == torch::kBFloat16 ? bf16 : memory::data_type::f32,
                               Dims{out_features, 1});
    memory bias_mem(bias_md, engine, b.data_ptr());
    dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, bias_md, dst_md), engine))
        .execute(stream,
                 {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias_mem}, {DNNL_ARG_DST, dst}});
  } else {
    dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, weights_md, dst_md), engine))
        .execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
  }
  stream.wait();
  return out.view(out_sizes);
}

}  // namespace

torch::Tensor onednn_bf16_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  check_linear_args(x, weight, "onednn_bf16_linear");
  const int64_t in = weight.size(1), out_features = weight.size(0);
  if (in == 0) return torch::linear(x, weight, bias);  // no products: the bias alone
  const torch::Tensor w = weight.stride(1) == 1 ? weight : weight.contiguous();
  return linear_with(x, plain_weights_md(in, out_features, w.stride(0)), w.data_ptr(), out_features, bias);
}

namespace {

// Rewrites `weight` ([N, K], contiguous, elements of `type`) in place in the
// packed order; false, changing nothing, where that order needs other than
// N·K elements.
bool pack_in_place(const torch::Tensor& weight, memory::data_type type) {
  if (!have_onednn_bf16() || !weight.device().is_cpu() || weight.dim() != 2 || !weight.is_contiguous() ||
      weight.numel() == 0) {
    return false;
  }
  const int64_t in = weight.size(1), out_features = weight.size(0);
  const memory::desc packed_md = packed_weights_md(in, out_features, type);
  if (packed_md.get_size() != static_cast<size_t>(weight.nbytes())) return false;
  use_libtorch_threads();
  const dnnl::engine& engine = cpu_engine();
  const torch::Tensor packed = torch::empty_like(weight);
  memory plain(plain_weights_md(in, out_features, in, type), engine, weight.data_ptr()),
      blocked(packed_md, engine, packed.data_ptr());
  dnnl::stream stream(engine);
  dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
  stream.wait();
  std::memcpy(weight.data_ptr(), packed.data_ptr(), weight.nbytes());
  return true;
}

torch::Tensor unpack(const torch::Tensor& packed, memory::data_type type) {
  use_libtorch_threads();
  const int64_t in = packed.size(1), out_features = packed.size(0);
  torch::Tensor plain = torch::empty_like(packed);
  const dnnl::engine& engine = cpu_engine();
  memory blocked(packed_weights_md(in, out_features, type), engine, packed.data_ptr()),
      out(plain_weights_md(in, out_features, in, type), engine, plain.data_ptr());
  dnnl::stream stream(engine);
  dnnl::reorder(blocked, out).execute(stream, blocked, out);
  stream.wait();
  return plain;
}

}  // namespace

bool onednn_pack_bf16_weight(const torch::Tensor& weight) {
  return weight.scalar_type() == torch::kBFloat16 && pack_in_place(weight, memory::data_type::bf16);
}

torch::Tensor onednn_unpack_bf16_weight(const torch::Tensor& packed) {
  TORCH_CHECK(have_onednn_bf16() && packed.scalar_type() == torch::kBFloat16 && packed.dim() == 2,
              "onednn_unpack_bf16_weight: a packed bf16 [N, K] weight");
  return unpack(packed, memory::data_type::bf16);
}

bool onednn_pack_fp8_codes(const torch::Tensor& codes) {
  return codes.scalar_type() == torch::kUInt8 && pack_in_place(codes, memory::data_type::u8);
}

torch::Tensor onednn_unpack_fp8_codes(const torch::Tensor& packed_codes) {
  TORCH_CHECK(have_onednn_bf16() && packed_codes.scalar_type() == torch::kUInt8 && packed_codes.dim() == 2,
              "onednn_unpack_fp8_codes: packed uint8 [N, K] codes");
  return unpack(packed_codes, memory::data_type::u8);
}

torch::Tensor onednn_bf16_linear_packed(const torch::Tensor& x, const torch::Tensor& packed,
                                        const torch::Tensor& bias) {
  check_linear_args(x, packed, "onednn_bf16_linear_packed");
  const int64_t in = packed.size(1), out_features = packed.size(0);
  return linear_with(x, packed_weights_md(in, out_features), packed.data_ptr(), out_features, bias);
}

torch::Tensor onednn_bf16_attention(const torch::Tensor& q_in, const torch::Tensor& k_in, const torch::Tensor& v_in,
                                    const torch::Tensor& key_mask, double scale, int64_t chunk_rows) {
  TORCH_CHECK(have_onednn_bf16(), "onednn_bf16_attention: the CPU has no native bf16 products");
  use_libtorch_threads();
  const torch::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
  TORCH_CHECK(q.scalar_type() == torch::kBFloat16 && k.scalar_type() == torch::kBFloat16 &&
                  v.scalar_type() == torch::kBFloat16 && q.device().is_cpu(),
              "onednn_bf16_attention: q, k and v must be bf16 CPU tensors");
  const int64_t batch = q.size(0), heads = q.size(1), seq = q.size(2), head_dim = q.size(3);
  const int64_t keys = k.size(2), value_dim = v.size(3);
  const int64_t chunk = std::max<int64_t>(1, std::min(chunk_rows, seq));
  const bool masked = key_mask.defined();

  torch::Tensor out = torch::empty({batch, heads, seq, value_dim}, q.options());
  torch::Tensor scores = torch::empty({chunk, keys}, q.options().dtype(torch::kFloat32));
  torch::Tensor probs = torch::empty({chunk, keys}, q.options());
  torch::Tensor bias;
  if (masked) {
    bias = torch::zeros({batch, keys}, scores.options())
               .masked_fill(key_mask.logical_not(), -std::numeric_limits<float>::infinity());
  }
  // At most two shapes: the full chunk and the last, shorter one.
  std::unordered_map<int64_t, ChunkProducts> products;
  const auto products_for = [&](int64_t rows) -> ChunkProducts& {
    auto it = products.find(rows);
    if (it == products.end()) {
      it = products.try_emplace(rows, rows, keys, head_dim, value_dim, masked, scale).first;
    }
    return it->second;
  };

  dnnl::stream stream(cpu_engine());
  const auto bytes_at = [](const torch::Tensor& t, int64_t offset_elements) {
    return static_cast<void*>(static_cast<char*>(t.data_ptr()) + offset_elements * t.element_size());
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t head = b * heads + h;
      for (int64_t first = 0; first < seq; first += chunk) {
        const int64_t n = std::min(chunk, seq - first);
        ChunkProducts& c = products_for(n);
        c.q.set_data_handle(bytes_at(q, (head * seq + first) * head_dim));
        c.kt.set_data_handle(bytes_at(k, head * keys * head_dim));
        c.s.set_data_handle(scores.data_ptr());
        if (masked) {
          c.bias.set_data_handle(bytes_at(bias, b * keys));
          c.scores.execute(
              stream, {{DNNL_ARG_SRC, c.q}, {DNNL_ARG_WEIGHTS, c.kt}, {DNNL_ARG_BIAS, c.bias}, {DNNL_ARG_DST, c.s}});
        } else {
          c.scores.execute(stream, {{DNNL_ARG_SRC, c.q}, {DNNL_ARG_WEIGHTS, c.kt}, {DNNL_ARG_DST, c.s}});
        }
        c.p.set_data_handle(probs.data_ptr());
        c.softmax.execute(stream, {{DNNL_ARG_SRC, c.s}, {DNNL_ARG_DST, c.p}});
        c.v.set_data_handle(bytes_at(v, head * keys * value_dim));
        c.o.set_data_handle(bytes_at(out, (head * seq + first) * value_dim));
        c.values.execute(stream, {{DNNL_ARG_SRC, c.p}, {DNNL_ARG_WEIGHTS, c.v}, {DNNL_ARG_DST, c.o}});
        stream.wait();
      }
    }
  }
  return out;
}

}  // namespace diffusiond
