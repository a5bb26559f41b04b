// kvgraft's additions to node-llama-cpp 3.21.1's addon (copied into llama/addon/ by
// scripts/build-engine.sh): a sequence's state to and from an arena of host memory (pinned on a
// GPU), file reads into it with SHA-256 of each chunk, and a device-side copy between sequences. The stock addon only has the file
// path (llama_state_seq_{save,load}_file), which reads into a pageable temporary and copies it
// synchronously: ~2.5 GB/s. From pinned memory the same tensor copies run at PCIe speed.
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "AddonContext.h"
#include "ggml-backend.h"
#include "llama.h"
#include "napi.h"
#include "KvgraftState.h"

namespace {

// Bumped whenever a function below changes its contract; the GPU node checks it.
constexpr int32_t kKvgraftApiVersion = 6;

// llama_state_seq_{get,set}_data frame the state with this magic and the sequence id (see
// llama-context.cpp, io_magic); the file format has neither, so loads and saves add them here.
constexpr uint32_t kIoMagic = 0xaf143cd8;
constexpr size_t kIoPrefix = sizeof(uint32_t) + sizeof(llama_seq_id);
// Arena alignment: what O_DIRECT reads need.
constexpr size_t kAlign = 4096;

// One block of host memory holding many block states. Not a Node Buffer: Node 20 caps a Buffer
// at 4 GiB, below one 12B state (4.7 GB), so JavaScript addresses it by offset.
struct Arena {
    ggml_backend_buffer_t pinnedBuffer = nullptr;
    void* plain = nullptr;
    uint8_t* base = nullptr;
    size_t size = 0;
    ~Arena() {
        if (pinnedBuffer != nullptr) ggml_backend_buffer_free(pinnedBuffer);
        std::free(plain);
    }
};

ggml_backend_buffer_type_t pinnedHostBufferType() {
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_GPU) continue;
        ggml_backend_buffer_type_t buft = ggml_backend_dev_host_buffer_type(dev);
        if (buft != nullptr) return buft;
    }
    return nullptr;
}

AddonContext* unwrapContext(const Napi::Value& value) {
    if (!value.IsObject()) throw Napi::TypeError::New(value.Env(), "expected an addon context");
    AddonContext* context = Napi::ObjectWrap<AddonContext>::Unwrap(value.As<Napi::Object>());
    if (context == nullptr || context->disposed || context->ctx == nullptr)
        throw Napi::Error::New(value.Env(), "Context is disposed");
    return context;
}

size_t sizeArg(const Napi::Value& value) {
    const double n = value.As<Napi::Number>().DoubleValue();
    if (!(n >= 0) || n > 9007199254740991.0) throw Napi::RangeError::New(value.Env(), "invalid size or offset");
    return static_cast<size_t>(n);
}

Arena* unwrapArena(const Napi::Value& value) {
    if (!value.IsExternal()) throw Napi::TypeError::New(value.Env(), "expected an arena");
    return value.As<Napi::External<Arena>>().Data();
}

// The arena's bytes [offset, offset + length), or a RangeError.
uint8_t* arenaRange(const Napi::Value& arenaValue, size_t offset, size_t length) {
    Arena* arena = unwrapArena(arenaValue);
    if (offset > arena->size || length > arena->size - offset)
        throw Napi::RangeError::New(arenaValue.Env(), "range outside the arena");
    return arena->base + offset;
}

// (size) -> {arena, pinned, size}: page-locked host memory from the first GPU's host buffer
// type when there is one, else page-aligned ordinary memory; freed when the arena is collected.
Napi::Value AllocArena(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const size_t requested = sizeArg(info[0]);
    if (requested == 0) throw Napi::RangeError::New(env, "size must be positive");
    const size_t size = (requested + kAlign - 1) / kAlign * kAlign;
    auto* arena = new Arena();
    arena->size = size;
    ggml_backend_buffer_type_t buft = pinnedHostBufferType();
    if (buft != nullptr) arena->pinnedBuffer = ggml_backend_buft_alloc_buffer(buft, size);
    if (arena->pinnedBuffer != nullptr) {
        arena->base = static_cast<uint8_t*>(ggml_backend_buffer_get_base(arena->pinnedBuffer));
    } else if (posix_memalign(&arena->plain, kAlign, size) == 0) {
        arena->base = static_cast<uint8_t*>(arena->plain);
    } else {
        delete arena;
        throw Napi::Error::New(env, "arena allocation failed");
    }
    Napi::Object out = Napi::Object::New(env);
    out.Set("arena", Napi::External<Arena>::New(env, arena, [](Napi::Env, Arena* owned) { delete owned; }));
    out.Set("pinned", Napi::Boolean::New(env, arena->pinnedBuffer != nullptr));
    out.Set("size", Napi::Number::New(env, static_cast<double>(size)));
    return out;
}

// (arena, offset, length) -> a new Buffer with a copy of those bytes (headers: small reads).
Napi::Value CopyOut(const Napi::CallbackInfo& info) {
    const size_t offset = sizeArg(info[1]);
    const size_t length = sizeArg(info[2]);
    const uint8_t* src = arenaRange(info[0], offset, length);
    return Napi::Buffer<uint8_t>::Copy(info.Env(), src, length);
}

// (arena, offset, buffer): copies the buffer's bytes into the arena at offset.
Napi::Value CopyIn(const Napi::CallbackInfo& info) {
    const size_t offset = sizeArg(info[1]);
    Napi::Buffer<uint8_t> buffer = info[2].As<Napi::Buffer<uint8_t>>();
    uint8_t* dst = arenaRange(info[0], offset, buffer.Length());
    std::memcpy(dst, buffer.Data(), buffer.Length());
    return info.Env().Undefined();
}

// Base of the asynchronous arena operations: keeps the arena alive while it runs.
class ArenaWorker : public Napi::AsyncWorker {
    public:
        ArenaWorker(const Napi::CallbackInfo& info, const char* name, const Napi::Value& arenaValue, size_t offset, size_t length)
            : Napi::AsyncWorker(info.Env(), name), deferred(Napi::Promise::Deferred::New(info.Env())) {
            data = arenaRange(arenaValue, offset, length);
            this->length = length;
            arenaRef = Napi::Persistent(arenaValue.As<Napi::External<Arena>>());
        }
        Napi::Promise GetPromise() { return deferred.Promise(); }

    protected:
        void OnError(const Napi::Error& err) override { deferred.Reject(err.Value()); }
        Napi::Promise::Deferred deferred;
        Napi::Reference<Napi::External<Arena>> arenaRef;
        uint8_t* data = nullptr;
        size_t length = 0;
};

// Moves a sequence's state between the arena and llama.cpp on the thread pool.
class StateWorker : public ArenaWorker {
    public:
        StateWorker(const Napi::CallbackInfo& info, AddonContext* context, bool load)
            : ArenaWorker(info, load ? "KvgraftLoadState" : "KvgraftSaveState", info[2], sizeArg(info[3]), sizeArg(info[4])),
              context(context), load(load) {
            sequenceId = info[1].As<Napi::Number>().Int32Value();
            if (sizeArg(info[3]) < kIoPrefix) throw Napi::RangeError::New(info.Env(), "state offset must leave room for the frame");
            context->Ref();  // last: a throw above must not leave a reference behind
        }
        ~StateWorker() { context->Unref(); }

    protected:
        void Execute() override {
            // The 8 bytes before the state (the end of the file header's token list) briefly hold
            // the frame llama.cpp expects, so the state is used in place without a copy.
            uint8_t* frame = data - kIoPrefix;
            uint8_t saved[kIoPrefix];
            std::memcpy(saved, frame, kIoPrefix);
            std::memcpy(frame, &kIoMagic, sizeof(kIoMagic));
            std::memcpy(frame + sizeof(kIoMagic), &sequenceId, sizeof(sequenceId));
            try {
                if (load) {
                    transferred = llama_state_seq_set_data(context->ctx, frame, length + kIoPrefix, sequenceId);
                    if (transferred == 0) SetError("llama.cpp refused the state");
                } else {
                    transferred = llama_state_seq_get_data(context->ctx, frame, length + kIoPrefix, sequenceId);
                    if (transferred == 0) SetError("llama.cpp could not write the state");
                }
            } catch (const std::exception& e) {
                SetError(e.what());
            } catch (...) {
                SetError("unknown error in a state transfer");
            }
            std::memcpy(frame, saved, kIoPrefix);
        }
        void OnOK() override {
            deferred.Resolve(Napi::Number::New(Env(), static_cast<double>(transferred > kIoPrefix ? transferred - kIoPrefix : 0)));
        }

    private:
        AddonContext* context;
        bool load;
        llama_seq_id sequenceId = 0;
        size_t transferred = 0;
};

// (context, sequenceId, arena, offset, size) -> bytes read: loads the state at arena[offset,
// offset+size) into the sequence. offset >= 8 (in a block file the state follows the tokens).
Napi::Value LoadSequenceState(const Napi::CallbackInfo& info) {
    auto* worker = new StateWorker(info, unwrapContext(info[0]), true);
    worker->Queue();
    return worker->GetPromise();
}

// (context, sequenceId, arena, offset, capacity) -> bytes written at arena[offset, ...).
Napi::Value SaveSequenceState(const Napi::CallbackInfo& info) {
    auto* worker = new StateWorker(info, unwrapContext(info[0]), false);
    worker->Queue();
    return worker->GetPromise();
}

// (context, sequenceId) -> bytes of the sequence's state without the 8-byte frame.
Napi::Value SequenceStateSize(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    const llama_seq_id sequenceId = info[1].As<Napi::Number>().Int32Value();
    const size_t size = llama_state_seq_get_size(context->ctx, sequenceId);
    return Napi::Number::New(info.Env(), static_cast<double>(size > kIoPrefix ? size - kIoPrefix : 0));
}

// (context, sourceSequence, targetSequence): the target gets the source's cells. Across KV
// streams llama.cpp copies the stream's data on the device at the next update (before the next
// decode; with llama-patches/seq-copy-used-cells.diff only the cells in use, and the cell
// bookkeeping in one piece), so the caller evaluates next. With a stream per sequence (not
// kv_unified) the copy replaces the target's stream whole, so the target is not emptied first:
// emptying it would free the cell sets the copy can reuse. In one shared stream it is.
Napi::Value CopySequence(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    const llama_seq_id source = info[1].As<Napi::Number>().Int32Value();
    const llama_seq_id target = info[2].As<Napi::Number>().Int32Value();
    llama_memory_t memory = llama_get_memory(context->ctx);
    if (context->context_params.kv_unified) {
        llama_memory_seq_rm(memory, target, -1, -1);
    }
    llama_memory_seq_cp(memory, source, target, -1, -1);
    return info.Env().Undefined();
}

// (context) -> llama.cpp's own evaluation timings since the previous call, then resets them: the time
// from each llama_decode's start to the synchronize that ends it (graph build, compute and the wait
// for the device), for single-token evaluations and for batches. The context must have been created
// with performance tracking, else the times stay 0. (llama.cpp's counts are not passed on: it
// reports at least 1 of each, so they cannot tell whether anything ran.)
Napi::Value TakeEvalTimings(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    const llama_perf_context_data data = llama_perf_context(context->ctx);
    llama_perf_context_reset(context->ctx);
    Napi::Object timings = Napi::Object::New(info.Env());
    timings.Set("tokenEvalMs", Napi::Number::New(info.Env(), data.t_eval_ms));
    timings.Set("batchEvalMs", Napi::Number::New(info.Env(), data.t_p_eval_ms));
    return timings;
}

// The first token of highest logit in a row of n logits: llama.cpp's greedy comparison.
llama_token firstArgmax(const float* logits, int32_t n) {
    llama_token best = 0;
    for (llama_token tokenId = 1; tokenId < n; tokenId++) {
        if (logits[tokenId] > logits[best]) best = tokenId;
    }
    return best;
}

// Evaluates tokens after a sequence's cells and picks the next token greedily, in one call on the
// thread pool. node-llama-cpp's path for the same step is two calls (decode, then sample) with its
// batch queue in JavaScript between and around them: ~1 ms of a 10.7 ms hot step of the 12b preset
// on the H200. The input goes in batches of the caller's batch size (node-llama-cpp's), logits for
// the last token only; the pick is the first token of highest logit, the comparison of llama.cpp's
// greedy sampler (and of addon/greedy-token.diff). On any failure after decoding began the cells
// from startPos on are removed, so the sequence holds what it held before.
class GreedyStepWorker : public Napi::AsyncWorker {
    public:
        GreedyStepWorker(const Napi::CallbackInfo& info, AddonContext* context)
            : Napi::AsyncWorker(info.Env(), "KvgraftGreedyStep"),
              deferred(Napi::Promise::Deferred::New(info.Env())),
              context(context) {
            const int32_t sequences = static_cast<int32_t>(llama_n_seq_max(context->ctx));
            sequenceId = info[1].As<Napi::Number>().Int32Value();
            if (sequenceId < 0 || sequenceId >= sequences) throw Napi::RangeError::New(info.Env(), "no such sequence");
            if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
                throw Napi::TypeError::New(info.Env(), "tokens must be a Uint32Array");
            Napi::Uint32Array input = info[2].As<Napi::Uint32Array>();
            tokens.assign(input.Data(), input.Data() + input.ElementLength());
            if (tokens.empty()) throw Napi::RangeError::New(info.Env(), "no tokens to evaluate");
            const size_t start = sizeArg(info[3]);
            if (start + tokens.size() > static_cast<size_t>(INT32_MAX)) throw Napi::RangeError::New(info.Env(), "positions out of range");
            startPos = static_cast<llama_pos>(start);
            batchSize = sizeArg(info[4]);
            if (batchSize == 0 || batchSize > llama_n_batch(context->ctx)) throw Napi::RangeError::New(info.Env(), "invalid batch size");
            context->Ref();  // last: a throw above must not leave a reference behind
        }
        ~GreedyStepWorker() { context->Unref(); }
        Napi::Promise GetPromise() { return deferred.Promise(); }

    protected:
        void Execute() override {
            try {
                if (!decodeAll()) {
                    undo();
                    return;
                }
                const float* logits = llama_get_logits_ith(context->ctx, -1);
                const int32_t vocabLength = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(context->ctx)));
                if (logits == nullptr || vocabLength <= 0) {
                    SetError("the step produced no logits");
                    undo();
                    return;
                }
                next = firstArgmax(logits, vocabLength);
            } catch (const std::exception& e) {
                SetError(e.what());
                undo();
            } catch (...) {
                SetError("unknown error in a greedy step");
                undo();
            }
        }
        void OnOK() override { deferred.Resolve(Napi::Number::New(Env(), next)); }
        void OnError(const Napi::Error& err) override { deferred.Reject(err.Value()); }

    private:
        // Frees a llama_batch however the decode loop ends.
        struct BatchGuard {
            llama_batch batch;
            ~BatchGuard() { llama_batch_free(batch); }
        };

        // Removes what this step may have added to the sequence.
        void undo() { llama_memory_seq_rm(llama_get_memory(context->ctx), sequenceId, startPos, -1); }

        // llama_decode of the input in batches; false (with the error set) when one fails.
        bool decodeAll() {
            BatchGuard guard{llama_batch_init(static_cast<int32_t>(std::min(batchSize, tokens.size())), 0, 1)};
            llama_batch& batch = guard.batch;
            for (size_t first = 0; first < tokens.size(); first += batchSize) {
                const size_t count = std::min(batchSize, tokens.size() - first);
                batch.n_tokens = static_cast<int32_t>(count);
                for (size_t i = 0; i < count; i++) {
                    batch.token[i] = static_cast<llama_token>(tokens[first + i]);
                    batch.pos[i] = startPos + static_cast<llama_pos>(first + i);
                    batch.n_seq_id[i] = 1;
                    batch.seq_id[i][0] = sequenceId;
                    batch.logits[i] = first + i == tokens.size() - 1;
                }
                const int32_t status = llama_decode(context->ctx, batch);
                if (status != 0) {
                    SetError("llama_decode failed with status " + std::to_string(status));
                    return false;
                }
            }
            return true;
        }

        Napi::Promise::Deferred deferred;
        AddonContext* context;
        llama_seq_id sequenceId = 0;
        std::vector<uint32_t> tokens;
        llama_pos startPos = 0;
        size_t batchSize = 1;
        llama_token next = -1;
};

// (context, sequenceId, tokens: Uint32Array, startPos, batchSize) -> the next token, greedily. The caller
// holds the context's lock (nothing else may decode on it meanwhile) and passes the sequence's
// next position.
Napi::Value GreedyStep(const Napi::CallbackInfo& info) {
    auto* worker = new GreedyStepWorker(info, unwrapContext(info[0]));
    worker->Queue();
    return worker->GetPromise();
}

// The greedy token of each of many logit rows of the last decode (batch indexes), in one call on
// the thread pool, the rows split over up to 8 threads. A batched step of B greedy slots otherwise
// takes B sampler calls through the pool (4 threads) and B promise settlements; on the H200's 12b
// preset (262,144 logits a row) that was 1.4 to 5.6 ms of a step of 29. The same pick as
// addon/greedy-token.diff's. The caller holds the context's lock (no decode meanwhile).
class GreedyPickWorker : public Napi::AsyncWorker {
    public:
        GreedyPickWorker(const Napi::CallbackInfo& info, AddonContext* context)
            : Napi::AsyncWorker(info.Env(), "KvgraftGreedyPick"),
              deferred(Napi::Promise::Deferred::New(info.Env())),
              context(context) {
            if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
                throw Napi::TypeError::New(info.Env(), "batch indexes must be a Uint32Array");
            Napi::Uint32Array input = info[1].As<Napi::Uint32Array>();
            indexes.assign(input.Data(), input.Data() + input.ElementLength());
            context->Ref();  // last: a throw above must not leave a reference behind
        }
        ~GreedyPickWorker() { context->Unref(); }
        Napi::Promise GetPromise() { return deferred.Promise(); }

    protected:
        void Execute() override {
            const int32_t vocabLength = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(context->ctx)));
            // The rows first, on this thread: llama_get_logits_ith may reorder the outputs.
            std::vector<const float*> rows(indexes.size());
            for (size_t i = 0; i < indexes.size(); i++) {
                rows[i] = llama_get_logits_ith(context->ctx, static_cast<int32_t>(indexes[i]));
                if (rows[i] == nullptr || vocabLength <= 0) {
                    SetError("no logits at batch index " + std::to_string(indexes[i]));
                    return;
                }
            }
            picks.assign(rows.size(), 0);
            const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
            const size_t threads = std::max<size_t>(1, std::min({rows.size(), hardware, static_cast<size_t>(8)}));
            auto work = [&](size_t first) {
                for (size_t i = first; i < rows.size(); i += threads) picks[i] = static_cast<uint32_t>(firstArgmax(rows[i], vocabLength));
            };
            std::vector<std::thread> helpers;
            for (size_t t = 1; t < threads; t++) helpers.emplace_back(work, t);
            work(0);
            for (auto& helper : helpers) helper.join();
        }
        void OnOK() override {
            Napi::Uint32Array out = Napi::Uint32Array::New(Env(), picks.size());
            std::copy(picks.begin(), picks.end(), out.Data());
            deferred.Resolve(out);
        }
        void OnError(const Napi::Error& err) override { deferred.Reject(err.Value()); }

    private:
        Napi::Promise::Deferred deferred;
        AddonContext* context;
        std::vector<uint32_t> indexes;
        std::vector<uint32_t> picks;
};

// (context, batchIndexes: Uint32Array) -> Uint32Array of each row's greedy token.
Napi::Value GreedyPick(const Napi::CallbackInfo& info) {
    auto* worker = new GreedyPickWorker(info, unwrapContext(info[0]));
    worker->Queue();
    return worker->GetPromise();
}

// (context, sequenceId) -> true when every cell of the sequence was removed.
Napi::Value WipeSequence(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    const llama_seq_id sequenceId = info[1].As<Napi::Number>().Int32Value();
    llama_memory_t memory = llama_get_memory(context->ctx);
    llama_memory_seq_rm(memory, sequenceId, -1, -1);
    return Napi::Boolean::New(info.Env(), llama_memory_seq_pos_max(memory, sequenceId) < 0);
}

std::string toHex(const unsigned char* digest, unsigned int length) {
    static const char* digits = "0123456789abcdef";
    std::string out(length * 2, '0');
    for (unsigned int i = 0; i < length; i++) {
        out[2 * i] = digits[digest[i] >> 4];
        out[2 * i + 1] = digits[digest[i] & 15];
    }
    return out;
}

// SHA-256 with the OpenSSL that Node itself links and exports (no copy of the bytes into JS).
std::string sha256Hex(const uint8_t* data, size_t length) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digestLength = 0;
    EVP_MD_CTX* md = EVP_MD_CTX_new();
    const bool ok = md != nullptr && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) == 1 &&
        EVP_DigestUpdate(md, data, length) == 1 && EVP_DigestFinal_ex(md, digest, &digestLength) == 1;
    EVP_MD_CTX_free(md);
    if (!ok) throw std::runtime_error("SHA-256 failed");
    return toHex(digest, digestLength);
}

// Reads a file range into the arena (when fd >= 0) and hashes what the range holds, or writes
// the range to the file; on the thread pool, so many chunks move and hash in parallel.
class ChunkWorker : public ArenaWorker {
    public:
        enum class Mode { ReadAndHash, Hash, Write };
        ChunkWorker(const Napi::CallbackInfo& info, Mode mode, const Napi::Value& arena, int fd, size_t offset, size_t length,
            off_t fileOffset, size_t ioLength)
            : ArenaWorker(info, "KvgraftChunk", arena, offset, ioLength), mode(mode), fd(fd), hashLength(length), fileOffset(fileOffset) {
            if (ioLength < length) throw Napi::RangeError::New(info.Env(), "io length below the chunk length");
        }

    protected:
        void Execute() override {
            size_t done = 0;
            while (mode != Mode::Hash && done < hashLength) {
                const off_t at = fileOffset + static_cast<off_t>(done);
                const ssize_t n = mode == Mode::Write ? pwrite(fd, data + done, hashLength - done, at)
                                                      : pread(fd, data + done, length - done, at);
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) return SetError(std::string(mode == Mode::Write ? "write" : "read") + " failed: " + std::strerror(errno));
                if (n == 0) return SetError("the file is shorter than expected");
                done += static_cast<size_t>(n);
            }
            if (mode == Mode::Write) return;
            try {
                digest = sha256Hex(data, hashLength);
            } catch (const std::exception& e) {
                SetError(e.what());
            }
        }
        void OnOK() override {
            if (mode == Mode::Write) deferred.Resolve(Env().Undefined());
            else deferred.Resolve(Napi::String::New(Env(), digest));
        }

    private:
        Mode mode;
        int fd;
        size_t hashLength;
        off_t fileOffset;
        std::string digest;
};

// (fd, arena, offset, length, fileOffset, readLength) -> SHA-256 hex of arena[offset, offset+length)
// after reading readLength (>= length, so O_DIRECT reads stay aligned) bytes of the file there.
Napi::Value ReadChunk(const Napi::CallbackInfo& info) {
    const size_t length = sizeArg(info[3]);
    auto* worker = new ChunkWorker(info, ChunkWorker::Mode::ReadAndHash, info[1], info[0].As<Napi::Number>().Int32Value(),
        sizeArg(info[2]), length, static_cast<off_t>(sizeArg(info[4])), sizeArg(info[5]));
    worker->Queue();
    return worker->GetPromise();
}

// (arena, offset, length) -> SHA-256 hex of arena[offset, offset+length), on the thread pool.
Napi::Value HashRange(const Napi::CallbackInfo& info) {
    const size_t length = sizeArg(info[2]);
    auto* worker = new ChunkWorker(info, ChunkWorker::Mode::Hash, info[0], -1, sizeArg(info[1]), length, 0, length);
    worker->Queue();
    return worker->GetPromise();
}

// (fd, arena, offset, length, fileOffset): writes arena[offset, offset+length) to the file.
Napi::Value WriteChunk(const Napi::CallbackInfo& info) {
    const size_t length = sizeArg(info[3]);
    auto* worker = new ChunkWorker(info, ChunkWorker::Mode::Write, info[1], info[0].As<Napi::Number>().Int32Value(),
        sizeArg(info[2]), length, static_cast<off_t>(sizeArg(info[4])), length);
    worker->Queue();
    return worker->GetPromise();
}

// Copies received network buffers into the arena on the thread pool (a bucket fetch: the main
// thread only gathers them), holding each buffer until the copy is done.
class CopyInWorker : public ArenaWorker {
    public:
        CopyInWorker(const Napi::CallbackInfo& info, size_t total)
            : ArenaWorker(info, "KvgraftCopyIn", info[0], sizeArg(info[1]), total) {
            Napi::Array buffers = info[2].As<Napi::Array>();
            for (uint32_t i = 0; i < buffers.Length(); i++) {
                Napi::Buffer<uint8_t> buffer = buffers.Get(i).As<Napi::Buffer<uint8_t>>();
                pieces.emplace_back(buffer.Data(), buffer.Length());
                held.push_back(Napi::Persistent(static_cast<Napi::Object>(buffer)));
            }
        }

    protected:
        void Execute() override {
            size_t at = 0;
            for (const auto& [source, bytes] : pieces) {
                std::memcpy(data + at, source, bytes);
                at += bytes;
            }
        }
        void OnOK() override { deferred.Resolve(Env().Undefined()); }

    private:
        std::vector<std::pair<const uint8_t*, size_t>> pieces;
        std::vector<Napi::ObjectReference> held;
};

// (arena, offset, buffers) -> resolves once the buffers' bytes, one after another, are in the
// arena from offset on.
Napi::Value CopyInAsync(const Napi::CallbackInfo& info) {
    if (!info[2].IsArray()) throw Napi::TypeError::New(info.Env(), "expected an array of buffers");
    Napi::Array buffers = info[2].As<Napi::Array>();
    size_t total = 0;
    for (uint32_t i = 0; i < buffers.Length(); i++) {
        Napi::Value value = buffers.Get(i);
        if (!value.IsBuffer()) throw Napi::TypeError::New(info.Env(), "expected an array of buffers");
        total += value.As<Napi::Buffer<uint8_t>>().Length();
    }
    auto* worker = new CopyInWorker(info, total);
    worker->Queue();
    return worker->GetPromise();
}

// A bucket fetch fills an arena range in order (mostly) while hash followers on the thread pool
// hash the filled prefix of their ranges as it grows (the whole state, each chunk). JavaScript
// only moves the prefix's end (hashAdvance), so the hashing never waits for its event loop.
struct HashFollower {
    std::mutex mutex;
    std::condition_variable grown;
    size_t stored = 0;
    bool cancelled = false;
};

// No byte for this long ends a follower with an error (so a thread is never held forever).
constexpr auto kFollowerIdleLimit = std::chrono::seconds(120);

HashFollower* unwrapFollower(const Napi::Value& value) {
    if (!value.IsExternal()) throw Napi::TypeError::New(value.Env(), "expected a hash follower");
    return value.As<Napi::External<HashFollower>>().Data();
}

class FollowWorker : public ArenaWorker {
    public:
        FollowWorker(const Napi::CallbackInfo& info, const Napi::External<HashFollower>& followerValue)
            : ArenaWorker(info, "KvgraftHashFollow", info[0], sizeArg(info[1]), sizeArg(info[2])),
              follower(followerValue.Data()) {
            followerRef = Napi::Persistent(followerValue);
        }

    protected:
        void Execute() override {
            EVP_MD_CTX* md = EVP_MD_CTX_new();
            try {
                if (md == nullptr || EVP_DigestInit_ex(md, EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 failed");
                for (size_t at = 0; at < length;) {
                    size_t to;
                    {
                        std::unique_lock<std::mutex> lock(follower->mutex);
                        const bool moved = follower->grown.wait_for(lock, kFollowerIdleLimit,
                            [&] { return follower->cancelled || follower->stored > at; });
                        if (follower->cancelled) throw std::runtime_error("cancelled");
                        if (!moved) throw std::runtime_error("no bytes arrived for two minutes");
                        to = std::min(follower->stored, length);
                    }
                    if (EVP_DigestUpdate(md, data + at, to - at) != 1) throw std::runtime_error("SHA-256 failed");
                    at = to;
                }
                unsigned char out[EVP_MAX_MD_SIZE];
                unsigned int outLength = 0;
                if (EVP_DigestFinal_ex(md, out, &outLength) != 1) throw std::runtime_error("SHA-256 failed");
                digest = toHex(out, outLength);
            } catch (const std::exception& e) {
                SetError(e.what());
            }
            EVP_MD_CTX_free(md);
        }
        void OnOK() override { deferred.Resolve(Napi::String::New(Env(), digest)); }

    private:
        HashFollower* follower;
        Napi::Reference<Napi::External<HashFollower>> followerRef;
        std::string digest;
};

// (arena, offset, length) -> {follower, digest}: `digest` resolves to the SHA-256 of the range
// once hashAdvance moved its filled prefix to the end, and rejects after hashCancel.
Napi::Value HashFollow(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    auto follower = Napi::External<HashFollower>::New(env, new HashFollower(), [](Napi::Env, HashFollower* owned) { delete owned; });
    auto* worker = new FollowWorker(info, follower);
    Napi::Object out = Napi::Object::New(env);
    out.Set("follower", follower);
    out.Set("digest", worker->GetPromise());
    worker->Queue();
    return out;
}

// (follower, end): the range's bytes before `end` are in place.
Napi::Value HashAdvance(const Napi::CallbackInfo& info) {
    HashFollower* follower = unwrapFollower(info[0]);
    const size_t end = sizeArg(info[1]);
    {
        std::lock_guard<std::mutex> lock(follower->mutex);
        follower->stored = std::max(follower->stored, end);
    }
    follower->grown.notify_all();
    return info.Env().Undefined();
}

// (follower): its workers stop (their promises reject) without waiting for more bytes.
Napi::Value HashCancel(const Napi::CallbackInfo& info) {
    HashFollower* follower = unwrapFollower(info[0]);
    {
        std::lock_guard<std::mutex> lock(follower->mutex);
        follower->cancelled = true;
    }
    follower->grown.notify_all();
    return info.Env().Undefined();
}

Napi::Value ApiVersion(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), kKvgraftApiVersion);
}

}  // namespace

void kvgraftStateInit(Napi::Object exports) {
    Napi::Object api = Napi::Object::New(exports.Env());
    api.DefineProperties({
        Napi::PropertyDescriptor::Function("apiVersion", ApiVersion),
        Napi::PropertyDescriptor::Function("allocArena", AllocArena),
        Napi::PropertyDescriptor::Function("copyOut", CopyOut),
        Napi::PropertyDescriptor::Function("copyIn", CopyIn),
        Napi::PropertyDescriptor::Function("copyInAsync", CopyInAsync),
        Napi::PropertyDescriptor::Function("hashRange", HashRange),
        Napi::PropertyDescriptor::Function("hashFollow", HashFollow),
        Napi::PropertyDescriptor::Function("hashAdvance", HashAdvance),
        Napi::PropertyDescriptor::Function("hashCancel", HashCancel),
        Napi::PropertyDescriptor::Function("writeChunk", WriteChunk),
        Napi::PropertyDescriptor::Function("sequenceStateSize", SequenceStateSize),
        Napi::PropertyDescriptor::Function("saveSequenceState", SaveSequenceState),
        Napi::PropertyDescriptor::Function("loadSequenceState", LoadSequenceState),
        Napi::PropertyDescriptor::Function("copySequence", CopySequence),
        Napi::PropertyDescriptor::Function("wipeSequence", WipeSequence),
        Napi::PropertyDescriptor::Function("takeEvalTimings", TakeEvalTimings),
        Napi::PropertyDescriptor::Function("greedyStep", GreedyStep),
        Napi::PropertyDescriptor::Function("greedyPick", GreedyPick),
        Napi::PropertyDescriptor::Function("readChunk", ReadChunk),
    });
    exports.Set("kvgraft", api);
}
