// A device measurement (not shipped): one decode step's attention over S KV streams that hold the
// same block, as llama.cpp runs it (flash attention over views of a cache tensor of one stream a
// sequence, the views and precision of src/llama-kv-cache.cpp and src/llama-graph.cpp), with the
// streams' cells in S copies ("copies", what a hot block's slots hold today) or in one place that
// every stream's view reads (the stream stride 0: "shared"). Same kernels and the same bytes, so
// the outputs must be bit-identical; the time says what reading a hot block's cells once (through
// the L2 cache, by mapping every slot's pages onto one copy's) would save.
//
//   fa-alias-bench [--streams 16,48,96] [--cells 2048] [--layers 48] [--runs 10] [--budget-gib 40] [--cpu]
//
// The 12b preset's attention: 16 query heads, 8 KV heads of 256, f16 KV, one token a stream.
// A third layout, "mapped" (fa-alias-pages.h), keeps the copies' views and addresses but maps every
// stream's range onto one physical copy: route (b) itself, where "shared" is its upper bound.
// Each layer has its own tensors (a step reads 48 layers' cells, not one layer's 48 times); where
// the copies would not fit in --budget-gib, fewer layers run and the time is scaled to --layers.
// Exit 0: every output bit-identical to the copies'; 1: one is not; 3: they are, but the driver
// refused the mapped layout (its columns say "-"; the other two layouts' rows are still printed).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

#include "fa-alias-pages.h"

namespace {
constexpr int64_t kHeadDim = 256, kHeads = 16, kKvHeads = 8, kEmbdKv = kHeadDim * kKvHeads;

struct Options {
    std::vector<int> streams{16, 48, 96};
    int cells = 2048, layers = 48, runs = 10;
    double budget_gib = 40;
    bool cpu = false;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) { std::fprintf(stderr, "fa-alias-bench: %s needs a value\n", a.c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--streams") {
            o.streams.clear();
            std::string list = next();
            for (size_t p = 0; p < list.size();) {
                size_t q = list.find(',', p);
                o.streams.push_back(std::atoi(list.substr(p, q - p).c_str()));
                p = q == std::string::npos ? list.size() : q + 1;
            }
        } else if (a == "--cells") o.cells = std::atoi(next());
        else if (a == "--layers") o.layers = std::atoi(next());
        else if (a == "--runs") o.runs = std::atoi(next());
        else if (a == "--budget-gib") o.budget_gib = std::atof(next());
        else if (a == "--cpu") o.cpu = true;
        else { std::fprintf(stderr, "fa-alias-bench: unknown option %s\n", a.c_str()); std::exit(2); }
    }
    return o;
}

// One step's tensors and its two graphs: `layers` attention ops over `streams` streams whose cells
// are read from every stream's copy (`copies`) or from stream 0's through a stride of 0 (`shared`;
// ggml sizes a view by its extents, so the shared view is taken of the copies' tensor and reads its
// first stream).
struct Step {
    ggml_context* ctx = nullptr;
    ggml_backend_buffer_t buf = nullptr;
    ggml_cgraph* copies = nullptr;
    ggml_cgraph* shared = nullptr;
    ggml_cgraph* mapped = nullptr;
    ggml_backend_buffer_t mapped_buf = nullptr;
    std::vector<ggml_tensor*> caches, mapped_caches, queries, copies_out, shared_out, mapped_out;
    ggml_tensor* mask = nullptr;

    Step(ggml_backend_t backend, bool gpu, int streams, int cells, int layers) {
        ggml_init_params params{ggml_tensor_overhead() * (size_t)(layers * 30 + 8) + 3 * ggml_graph_overhead(), nullptr, true};
        ctx = ggml_init(params);
        mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, cells, 1, 1, streams);
        copies = ggml_new_graph(ctx);
        shared = ggml_new_graph(ctx);
        const size_t stream_bytes = ggml_row_size(GGML_TYPE_F16, kEmbdKv * cells);
        mapped_buf = alias_pages::aliased_buffer(backend, gpu, 2 * (size_t)layers, streams, stream_bytes);
        // without the mapping (the driver refused it) the step has the other two layouts only
        if (mapped_buf) mapped = ggml_new_graph(ctx);
        char* mapped_base = mapped_buf ? (char*)ggml_backend_buffer_get_base(mapped_buf) : nullptr;
        for (int l = 0; l < layers; ++l) {
            ggml_tensor* k = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, kEmbdKv, cells, streams);
            ggml_tensor* v = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, kEmbdKv, cells, streams);
            ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, kHeadDim, 1, kHeads, streams);
            // [n_embd_head, n_head_kv, n_kv, streams] as get_k/get_v make them, permuted as build_attn_mha does
            auto view = [&](ggml_tensor* t, size_t stream_stride) {
                return ggml_permute(ctx, ggml_view_4d(ctx, t, kHeadDim, kKvHeads, cells, streams,
                                                      ggml_row_size(GGML_TYPE_F16, kHeadDim),
                                                      ggml_row_size(GGML_TYPE_F16, kEmbdKv), stream_stride, 0),
                                    0, 2, 1, 3);
            };
            auto attend = [&](ggml_tensor* k, ggml_tensor* v, size_t stream_stride, ggml_cgraph* graph, std::vector<ggml_tensor*>& outs) {
                ggml_tensor* out = ggml_flash_attn_ext(ctx, q, view(k, stream_stride), view(v, stream_stride), mask,
                                                       1.0f / std::sqrt((float)kHeadDim), 0.0f, 0.0f);
                ggml_flash_attn_ext_set_prec(out, GGML_PREC_F32);
                ggml_build_forward_expand(graph, out);
                outs.push_back(out);
            };
            attend(k, v, stream_bytes, copies, copies_out);
            attend(k, v, 0, shared, shared_out);
            caches.push_back(k);
            caches.push_back(v);
            queries.push_back(q);
            if (!mapped_buf) continue;
            // the mapped layout's K and V: tensor 2l and 2l + 1 of the aliased buffer, allocated before
            // their views are made, so that ggml_backend_alloc_ctx_tensors initializes the views on them
            ggml_tensor* mk = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, kEmbdKv, cells, streams);
            ggml_tensor* mv = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, kEmbdKv, cells, streams);
            ggml_backend_tensor_alloc(mapped_buf, mk, mapped_base + (2 * l) * streams * stream_bytes);
            ggml_backend_tensor_alloc(mapped_buf, mv, mapped_base + (2 * l + 1) * streams * stream_bytes);
            attend(mk, mv, stream_bytes, mapped, mapped_out);
            mapped_caches.push_back(mk);
            mapped_caches.push_back(mv);
        }
        buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
        if (!buf) { std::fprintf(stderr, "fa-alias-bench: could not allocate %d streams x %d layers\n", streams, layers); std::exit(1); }
    }
    ~Step() {
        ggml_backend_buffer_free(buf);
        if (mapped_buf) ggml_backend_buffer_free(mapped_buf);
        ggml_free(ctx);
    }
};

// The same pseudo-random cells in every stream (a hot block's copies), random queries, a mask of
// zeros (every cell visible).
void fill(Step& s, int streams, int cells) {
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<ggml_fp16_t> cache((size_t)kEmbdKv * cells);
    const size_t stream_bytes = cache.size() * sizeof(ggml_fp16_t);
    for (size_t c = 0; c < s.caches.size(); ++c) {
        for (auto& x : cache) x = ggml_fp32_to_fp16(normal(rng));
        for (int i = 0; i < streams; ++i) ggml_backend_tensor_set(s.caches[c], cache.data(), i * stream_bytes, stream_bytes);
        // one write reaches every stream of the mapped layout: their pages are the same
        if (s.mapped_buf) ggml_backend_tensor_set(s.mapped_caches[c], cache.data(), 0, stream_bytes);
    }
    if (s.mapped_buf) alias_pages::settle(s.mapped_buf);
    std::vector<float> q((size_t)kHeadDim * kHeads * streams);
    for (ggml_tensor* t : s.queries) {
        for (auto& x : q) x = normal(rng);
        ggml_backend_tensor_set(t, q.data(), 0, q.size() * sizeof(float));
    }
    std::vector<ggml_fp16_t> mask((size_t)cells * streams, ggml_fp32_to_fp16(0.0f));
    ggml_backend_tensor_set(s.mask, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
}

double median_ms(ggml_backend_t backend, ggml_cgraph* graph, int runs) {
    for (int i = 0; i < 3; ++i) ggml_backend_graph_compute(backend, graph);
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(backend, graph);
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

std::vector<char> bytes(const std::vector<ggml_tensor*>& outs) {
    std::vector<char> all;
    for (ggml_tensor* t : outs) {
        size_t at = all.size();
        all.resize(at + ggml_nbytes(t));
        ggml_backend_tensor_get(t, all.data() + at, 0, ggml_nbytes(t));
    }
    return all;
}
}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    ggml_backend_load_all();
    ggml_backend_t backend = ggml_backend_init_by_type(o.cpu ? GGML_BACKEND_DEVICE_TYPE_CPU : GGML_BACKEND_DEVICE_TYPE_GPU, nullptr);
    if (!backend) { std::fprintf(stderr, "fa-alias-bench: no %s backend\n", o.cpu ? "CPU" : "GPU"); return 1; }
    std::printf("backend %s, %d cells a stream, f16 KV, %d query heads, %d KV heads of %d, one token a stream; ms a step of %d layers (median of %d)\n",
                ggml_backend_name(backend), o.cells, (int)kHeads, (int)kKvHeads, (int)kHeadDim, o.layers, o.runs);
    std::printf("| streams | layers run | copies ms | shared ms | mapped ms | copies / shared | copies / mapped | copies' KV read GB/s | "
                "shared, mapped outputs bit-identical to copies' |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    // 1: an output differs from the copies'; 3 (outputs equal): the mapped layout could not be made
    int status = 0;
    bool mapped_missing = false;
    for (int streams : o.streams) {
        const double layer_bytes = 2.0 * kEmbdKv * o.cells * sizeof(ggml_fp16_t) * streams;
        const int layers = std::max(1, std::min(o.layers, (int)(o.budget_gib * (1 << 30) / layer_bytes)));
        const double scale = (double)o.layers / layers;
        Step step(backend, !o.cpu, streams, o.cells, layers);
        fill(step, streams, o.cells);
        // alternating, twice each, the better median of each kept: one order's warm-up does not favour another
        double ms_copies = 1e30, ms_shared = 1e30, ms_mapped = 1e30;
        for (int round = 0; round < 2; ++round) {
            ms_copies = std::min(ms_copies, median_ms(backend, step.copies, o.runs) * scale);
            ms_shared = std::min(ms_shared, median_ms(backend, step.shared, o.runs) * scale);
            if (step.mapped) ms_mapped = std::min(ms_mapped, median_ms(backend, step.mapped, o.runs) * scale);
        }
        const std::vector<char> copies = bytes(step.copies_out);
        const bool shared_same = copies == bytes(step.shared_out);
        const bool mapped_same = !step.mapped || copies == bytes(step.mapped_out);
        status |= shared_same && mapped_same ? 0 : 1;
        mapped_missing |= !step.mapped;
        char mapped_ms[32] = "-", mapped_ratio[32] = "-";
        if (step.mapped) {
            std::snprintf(mapped_ms, sizeof mapped_ms, "%.3f", ms_mapped);
            std::snprintf(mapped_ratio, sizeof mapped_ratio, "%.2f", ms_copies / ms_mapped);
        }
        std::printf("| %d | %d | %.3f | %.3f | %s | %.2f | %s | %.0f | %s, %s |\n", streams, layers, ms_copies, ms_shared, mapped_ms,
                    ms_copies / ms_shared, mapped_ratio, layer_bytes * o.layers / (ms_copies / 1e3) / 1e9,
                    shared_same ? "yes" : "NO", !step.mapped ? "-" : mapped_same ? "yes" : "NO");
        std::fflush(stdout);
    }
    ggml_backend_free(backend);
    return status != 0 ? status : mapped_missing ? 3 : 0;
}
