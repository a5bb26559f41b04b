// kvgraft's additions to node-llama-cpp 3.21.1's addon (copied into llama/addon/ by
// scripts/build-engine.sh): a sequence's state to and from caller memory, pinned host buffers
// for that memory, and a device-side copy between sequences. The stock addon only has the file
// path (llama_state_seq_{save,load}_file), which reads into a pageable temporary and copies it
// synchronously: ~2.5 GB/s. From pinned memory the same tensor copies run at PCIe speed.
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "AddonContext.h"
#include "ggml-backend.h"
#include "llama.h"
#include "napi.h"
#include "KvgraftState.h"

namespace {

// Bumped whenever a function below changes its contract; the GPU node checks it.
constexpr int32_t kKvgraftApiVersion = 1;

// llama_state_seq_{get,set}_data frame the state with this magic and the sequence id (see
// llama-context.cpp, io_magic); the file format has neither, so loads and saves add them here.
constexpr uint32_t kIoMagic = 0xaf143cd8;
constexpr size_t kIoPrefix = sizeof(uint32_t) + sizeof(llama_seq_id);

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

// {buffer, pinned}: `size` bytes of page-locked host memory from the first GPU's host buffer
// type, freed when the Buffer is collected; null when no GPU backend offers one.
Napi::Value AllocPinnedBuffer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const double requested = info[0].As<Napi::Number>().DoubleValue();
    if (!(requested > 0)) throw Napi::RangeError::New(env, "size must be positive");
    ggml_backend_buffer_type_t buft = pinnedHostBufferType();
    if (buft == nullptr) return env.Null();
    const size_t size = static_cast<size_t>(requested);
    ggml_backend_buffer_t buffer = ggml_backend_buft_alloc_buffer(buft, size);
    if (buffer == nullptr) throw Napi::Error::New(env, "pinned host allocation failed");
    auto* base = static_cast<uint8_t*>(ggml_backend_buffer_get_base(buffer));
    Napi::Buffer<uint8_t> out = Napi::Buffer<uint8_t>::New(
        env, base, size,
        [](Napi::Env, uint8_t*, ggml_backend_buffer_t owned) { ggml_backend_buffer_free(owned); }, buffer);
    return out;
}

// Runs a state transfer on the thread pool, holding the context and the buffer alive.
class StateWorker : public Napi::AsyncWorker {
    public:
        StateWorker(const Napi::CallbackInfo& info, AddonContext* context, bool load)
            : Napi::AsyncWorker(info.Env(), load ? "KvgraftLoadState" : "KvgraftSaveState"),
              context(context), load(load), deferred(Napi::Promise::Deferred::New(info.Env())) {
            sequenceId = info[1].As<Napi::Number>().Int32Value();
            Napi::Buffer<uint8_t> buffer = info[2].As<Napi::Buffer<uint8_t>>();
            bufferRef = Napi::Persistent(buffer);
            data = buffer.Data();
            const size_t length = buffer.Length();
            offset = static_cast<size_t>(info[3].As<Napi::Number>().DoubleValue());
            size = static_cast<size_t>(info[4].As<Napi::Number>().DoubleValue());
            if (offset < kIoPrefix || offset > length || size > length - offset)
                throw Napi::RangeError::New(info.Env(), "state range outside the buffer");
            context->Ref();  // last: a throw above must not leave a reference behind
        }
        ~StateWorker() { context->Unref(); }
        Napi::Promise GetPromise() { return deferred.Promise(); }

    protected:
        void Execute() override {
            // The 8 bytes before `offset` (the end of the file header's token list) briefly hold
            // the frame llama.cpp expects, so the state is used in place without a copy.
            uint8_t* frame = data + offset - kIoPrefix;
            uint8_t saved[kIoPrefix];
            std::memcpy(saved, frame, kIoPrefix);
            std::memcpy(frame, &kIoMagic, sizeof(kIoMagic));
            std::memcpy(frame + sizeof(kIoMagic), &sequenceId, sizeof(sequenceId));
            try {
                if (load) {
                    transferred = llama_state_seq_set_data(context->ctx, frame, size + kIoPrefix, sequenceId);
                    if (transferred == 0) SetError("llama.cpp refused the state");
                } else {
                    transferred = llama_state_seq_get_data(context->ctx, frame, size + kIoPrefix, sequenceId);
                    if (transferred == 0) SetError("llama.cpp could not write the state");
                }
            } catch (const std::exception& e) {
                SetError(e.what());
            } catch (...) {
                SetError("unknown error in a state transfer");
            }
            // A save leaves its frame out of the file bytes; a load leaves the buffer as it was.
            std::memcpy(frame, saved, kIoPrefix);
        }
        void OnOK() override {
            deferred.Resolve(Napi::Number::New(Env(), static_cast<double>(transferred > kIoPrefix ? transferred - kIoPrefix : 0)));
        }
        void OnError(const Napi::Error& err) override { deferred.Reject(err.Value()); }

    private:
        AddonContext* context;
        bool load;
        Napi::Promise::Deferred deferred;
        Napi::Reference<Napi::Buffer<uint8_t>> bufferRef;
        uint8_t* data = nullptr;
        size_t offset = 0;
        size_t size = 0;
        llama_seq_id sequenceId = 0;
        size_t transferred = 0;
};

// (context, sequenceId, buffer, offset, size) -> bytes: loads state bytes at buffer[offset, offset+size)
// into the sequence. offset must be >= 8 (in a block file it is after the token list).
Napi::Value LoadSequenceState(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    auto* worker = new StateWorker(info, context, true);
    worker->Queue();
    return worker->GetPromise();
}

// (context, sequenceId, buffer, offset, capacity) -> bytes written at buffer[offset, ...).
Napi::Value SaveSequenceState(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    auto* worker = new StateWorker(info, context, false);
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
// streams llama.cpp copies the whole stream on the device at the next update (before the next
// decode), so the caller evaluates next, and the target is emptied first.
Napi::Value CopySequence(const Napi::CallbackInfo& info) {
    AddonContext* context = unwrapContext(info[0]);
    const llama_seq_id source = info[1].As<Napi::Number>().Int32Value();
    const llama_seq_id target = info[2].As<Napi::Number>().Int32Value();
    llama_memory_t memory = llama_get_memory(context->ctx);
    llama_memory_seq_rm(memory, target, -1, -1);
    llama_memory_seq_cp(memory, source, target, -1, -1);
    return info.Env().Undefined();
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

// Reads a file range into a buffer (when fd >= 0) and hashes what it holds, on the thread pool:
// a cold restore reads each chunk once, with the reads and hashes of many chunks in parallel.
class ChunkWorker : public Napi::AsyncWorker {
    public:
        ChunkWorker(const Napi::CallbackInfo& info, int fd)
            : Napi::AsyncWorker(info.Env(), "KvgraftChunk"), fd(fd), deferred(Napi::Promise::Deferred::New(info.Env())) {
            Napi::Buffer<uint8_t> buffer = info[1].As<Napi::Buffer<uint8_t>>();
            bufferRef = Napi::Persistent(buffer);
            data = buffer.Data();
            offset = static_cast<size_t>(info[2].As<Napi::Number>().DoubleValue());
            length = static_cast<size_t>(info[3].As<Napi::Number>().DoubleValue());
            readLength = fd >= 0 ? static_cast<size_t>(info[5].As<Napi::Number>().DoubleValue()) : length;
            fileOffset = fd >= 0 ? static_cast<off_t>(info[4].As<Napi::Number>().DoubleValue()) : 0;
            if (offset > buffer.Length() || readLength < length || readLength > buffer.Length() - offset)
                throw Napi::RangeError::New(info.Env(), "chunk outside the buffer");
        }
        Napi::Promise GetPromise() { return deferred.Promise(); }

    protected:
        void Execute() override {
            size_t done = 0;
            while (fd >= 0 && done < length) {
                const ssize_t n = pread(fd, data + offset + done, readLength - done, fileOffset + static_cast<off_t>(done));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0) return SetError(std::string("read failed: ") + std::strerror(errno));
                if (n == 0) return SetError("the file is shorter than expected");
                done += static_cast<size_t>(n);
            }
            try {
                digest = sha256Hex(data + offset, length);
            } catch (const std::exception& e) {
                SetError(e.what());
            }
        }
        void OnOK() override { deferred.Resolve(Napi::String::New(Env(), digest)); }
        void OnError(const Napi::Error& err) override { deferred.Reject(err.Value()); }

    private:
        int fd;
        Napi::Promise::Deferred deferred;
        Napi::Reference<Napi::Buffer<uint8_t>> bufferRef;
        uint8_t* data = nullptr;
        size_t offset = 0;
        size_t length = 0;
        size_t readLength = 0;
        off_t fileOffset = 0;
        std::string digest;
};

// (fd, buffer, offset, length, fileOffset, readLength) -> SHA-256 hex of buffer[offset, offset+length)
// after reading the file's bytes there; with fd -1 it only hashes what the buffer holds.
// readLength >= length lets O_DIRECT reads stay aligned.
Napi::Value ReadChunk(const Napi::CallbackInfo& info) {
    auto* worker = new ChunkWorker(info, info[0].As<Napi::Number>().Int32Value());
    worker->Queue();
    return worker->GetPromise();
}

Napi::Value ApiVersion(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), kKvgraftApiVersion);
}

}  // namespace

void kvgraftStateInit(Napi::Object exports) {
    Napi::Object api = Napi::Object::New(exports.Env());
    api.DefineProperties({
        Napi::PropertyDescriptor::Function("apiVersion", ApiVersion),
        Napi::PropertyDescriptor::Function("allocPinnedBuffer", AllocPinnedBuffer),
        Napi::PropertyDescriptor::Function("sequenceStateSize", SequenceStateSize),
        Napi::PropertyDescriptor::Function("saveSequenceState", SaveSequenceState),
        Napi::PropertyDescriptor::Function("loadSequenceState", LoadSequenceState),
        Napi::PropertyDescriptor::Function("copySequence", CopySequence),
        Napi::PropertyDescriptor::Function("wipeSequence", WipeSequence),
        Napi::PropertyDescriptor::Function("readChunk", ReadChunk),
    });
    exports.Set("kvgraft", api);
}
