// fa-alias-bench's third layout (a device measurement, not shipped): every stream's range of a cache
// tensor is its own virtual range, as with copies, but all of them are mapped onto one physical
// copy's pages. That is what route (b) of docs/benchmarks.md's seventh round would do to a hot
// block's slots, and unlike the stride-0 view it keeps the copies' addresses and views exactly: if
// the GPU's L2 (physically tagged) serves the streams' reads of one page, this layout runs at the
// shared view's time.
//
// On the GPU the pages come from CUDA's virtual memory calls (cuMemCreate, cuMemAddressReserve,
// cuMemMap: 2 MiB granules; one physical allocation a tensor, mapped whole from offset 0: parts
// of one allocation were refused with CUDA_ERROR_NOT_SUPPORTED on the H100 on 2026-12-08), loaded
// with dlopen so that the --cpu check runs where there is no driver; on the CPU from a memfd mapped once a stream (4 KiB pages). The tensors live in a ggml
// buffer of the backend's own buffer type, so its kernels read them as any of its buffers.
#pragma once

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda.h>

#include "ggml-backend-impl.h"

namespace alias_pages {

// The driver calls used, resolved once from libcuda.so.1.
struct Driver {
    decltype(&cuInit) init;
    decltype(&cuDeviceGet) deviceGet;
    decltype(&cuDevicePrimaryCtxRetain) primaryCtxRetain;
    decltype(&cuCtxSetCurrent) ctxSetCurrent;
    decltype(&cuMemGetAllocationGranularity) granularity;
    decltype(&cuMemCreate) create;
    decltype(&cuMemAddressReserve) reserve;
    decltype(&cuMemMap) map;
    decltype(&cuMemSetAccess) setAccess;
    decltype(&cuMemcpyHtoD) htod;
    decltype(&cuMemcpyDtoH) dtoh;
    decltype(&cuMemsetD8) memset8;
    decltype(&cuMemUnmap) unmap;
    decltype(&cuMemAddressFree) addressFree;
    decltype(&cuMemRelease) release;
    decltype(&cuCtxSynchronize) synchronize;
};

// Whether a driver call succeeded; a failure is said.
inline bool succeeded(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) std::fprintf(stderr, "fa-alias-bench: %s failed (CUresult %d)\n", what, (int)r);
    return r == CUDA_SUCCESS;
}

inline void check(CUresult r, const char* what) {
    if (!succeeded(r, what)) std::exit(1);
}

inline const Driver& driver() {
    static Driver d = [] {
        void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        if (!lib) { std::fprintf(stderr, "fa-alias-bench: no libcuda.so.1: %s\n", dlerror()); std::exit(1); }
        auto sym = [&](const char* name) {
            void* f = dlsym(lib, name);
            if (!f) { std::fprintf(stderr, "fa-alias-bench: libcuda has no %s\n", name); std::exit(1); }
            return f;
        };
        Driver r{};
        r.init = (decltype(r.init))sym("cuInit");
        r.deviceGet = (decltype(r.deviceGet))sym("cuDeviceGet");
        r.primaryCtxRetain = (decltype(r.primaryCtxRetain))sym("cuDevicePrimaryCtxRetain");
        r.ctxSetCurrent = (decltype(r.ctxSetCurrent))sym("cuCtxSetCurrent");
        r.granularity = (decltype(r.granularity))sym("cuMemGetAllocationGranularity");
        r.create = (decltype(r.create))sym("cuMemCreate");
        r.reserve = (decltype(r.reserve))sym("cuMemAddressReserve");
        r.map = (decltype(r.map))sym("cuMemMap");
        r.setAccess = (decltype(r.setAccess))sym("cuMemSetAccess");
        r.htod = (decltype(r.htod))sym("cuMemcpyHtoD_v2");
        r.dtoh = (decltype(r.dtoh))sym("cuMemcpyDtoH_v2");
        r.memset8 = (decltype(r.memset8))sym("cuMemsetD8_v2");
        r.unmap = (decltype(r.unmap))sym("cuMemUnmap");
        r.addressFree = (decltype(r.addressFree))sym("cuMemAddressFree");
        r.release = (decltype(r.release))sym("cuMemRelease");
        r.synchronize = (decltype(r.synchronize))sym("cuCtxSynchronize");
        check(r.init(0), "cuInit");
        CUdevice dev;
        check(r.deviceGet(&dev, 0), "cuDeviceGet");
        CUcontext ctx;
        // the primary context, the one ggml's CUDA backend (the runtime API) runs in
        check(r.primaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
        check(r.ctxSetCurrent(ctx), "cuCtxSetCurrent");
        return r;
    }();
    return d;
}

// `tensors` ranges of `streams` x `stream_bytes` virtual bytes, each stream's range mapped onto the
// tensor's one physical copy of `stream_bytes`.
struct Mapping {
    bool gpu = false;
    size_t tensors = 0, streams = 0, stream_bytes = 0;
    char* base = nullptr;  // virtual: tensor t's stream s at base + (t * streams + s) * stream_bytes
    int fd = -1;
    std::vector<CUmemGenericAllocationHandle> handles;  // the GPU's: tensor t's physical copy (0: not made)
    size_t mapped = 0;  // the GPU's: stream ranges mapped so far, in order

    size_t virtual_bytes() const { return tensors * streams * stream_bytes; }
};

inline void unmap_aliased(Mapping* m);

inline Mapping* map_aliased(bool gpu, size_t tensors, size_t streams, size_t stream_bytes) {
    auto* m = new Mapping{gpu, tensors, streams, stream_bytes};
    const size_t physical = tensors * stream_bytes;
    if (!gpu) {
        m->fd = memfd_create("fa-alias", 0);
        if (m->fd < 0 || ftruncate(m->fd, (off_t)physical) != 0) { std::perror("fa-alias-bench: memfd"); std::exit(1); }
        void* va = mmap(nullptr, m->virtual_bytes(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (va == MAP_FAILED) { std::perror("fa-alias-bench: reserve"); std::exit(1); }
        m->base = (char*)va;
        for (size_t t = 0; t < tensors; ++t)
            for (size_t s = 0; s < streams; ++s)
                if (mmap(m->base + (t * streams + s) * stream_bytes, stream_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                         m->fd, (off_t)(t * stream_bytes)) == MAP_FAILED) { std::perror("fa-alias-bench: mmap"); std::exit(1); }
        return m;
    }
    const Driver& d = driver();
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t granule = 0;
    check(d.granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "cuMemGetAllocationGranularity");
    if (stream_bytes % granule != 0) {
        std::fprintf(stderr, "fa-alias-bench: a stream's %zu bytes are not a multiple of the device's %zu-byte granule (--cells sets them)\n",
                     stream_bytes, granule);
        std::exit(2);
    }
    // A driver that refuses a step leaves the layout out (null), freeing what was made: the other
    // layouts' times still come, and the run's exit says the mapped one is missing.
    m->handles.assign(tensors, 0);
    bool ok = true;
    for (size_t t = 0; ok && t < tensors; ++t) ok = succeeded(d.create(&m->handles[t], stream_bytes, &prop, 0), "cuMemCreate");
    CUdeviceptr va = 0;
    ok = ok && succeeded(d.reserve(&va, m->virtual_bytes(), granule, 0, 0), "cuMemAddressReserve");
    m->base = (char*)va;
    for (size_t i = 0; ok && i < tensors * streams; ++i) {
        ok = succeeded(d.map(va + i * stream_bytes, stream_bytes, 0, m->handles[i / streams], 0), "cuMemMap");
        if (ok) m->mapped = i + 1;
    }
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ok = ok && succeeded(d.setAccess(va, m->virtual_bytes(), &access, 1), "cuMemSetAccess");
    if (!ok) {
        unmap_aliased(m);
        return nullptr;
    }
    return m;
}

inline void unmap_aliased(Mapping* m) {
    if (!m->gpu) {
        munmap(m->base, m->virtual_bytes());
        close(m->fd);
    } else {
        // each mapping as it was made; a failure here only leaks until exit, so it is said, not fatal
        const Driver& d = driver();
        bool ok = true;
        for (size_t i = 0; i < m->mapped; ++i)
            ok = d.unmap((CUdeviceptr)(m->base + i * m->stream_bytes), m->stream_bytes) == CUDA_SUCCESS && ok;
        if (m->base) ok = d.addressFree((CUdeviceptr)m->base, m->virtual_bytes()) == CUDA_SUCCESS && ok;
        for (auto h : m->handles)
            if (h) ok = d.release(h) == CUDA_SUCCESS && ok;
        if (!ok) std::fprintf(stderr, "fa-alias-bench: freeing a mapping failed (left to the process's exit)\n");
    }
    delete m;
}

// Waits for the writes into the mapping (a copy from pageable memory may return before its DMA ends).
inline void settle(ggml_backend_buffer_t b) {
    if (((Mapping*)b->context)->gpu) check(driver().synchronize(), "cuCtxSynchronize");
}

inline Mapping* of(ggml_backend_buffer_t b) { return (Mapping*)b->context; }

inline void copy_in(Mapping* m, char* dst, const void* src, size_t n) {
    if (m->gpu) check(driver().htod((CUdeviceptr)dst, src, n), "cuMemcpyHtoD");
    else std::memcpy(dst, src, n);
}

// A ggml buffer over the mapping, of the backend's own buffer type (its kernels take it as theirs);
// null where the driver refused the mapping.
inline ggml_backend_buffer_t aliased_buffer(ggml_backend_t backend, bool gpu, size_t tensors, size_t streams, size_t stream_bytes) {
    static const ggml_backend_buffer_i iface = {
        /* free_buffer   */ [](ggml_backend_buffer_t b) { unmap_aliased(of(b)); },
        /* get_base      */ [](ggml_backend_buffer_t b) -> void* { return of(b)->base; },
        /* init_tensor   */ nullptr,
        /* memset_tensor */ [](ggml_backend_buffer_t b, ggml_tensor* t, uint8_t v, size_t off, size_t n) {
            if (of(b)->gpu) check(driver().memset8((CUdeviceptr)((char*)t->data + off), v, n), "cuMemsetD8");
            else std::memset((char*)t->data + off, v, n);
        },
        /* set_tensor    */ [](ggml_backend_buffer_t b, ggml_tensor* t, const void* data, size_t off, size_t n) {
            copy_in(of(b), (char*)t->data + off, data, n);
        },
        /* get_tensor    */ [](ggml_backend_buffer_t b, const ggml_tensor* t, void* data, size_t off, size_t n) {
            if (of(b)->gpu) check(driver().dtoh(data, (CUdeviceptr)((char*)t->data + off), n), "cuMemcpyDtoH");
            else std::memcpy(data, (char*)t->data + off, n);
        },
        /* set_tensor_2d */ nullptr,
        /* get_tensor_2d */ nullptr,
        /* cpy_tensor    */ nullptr,
        /* clear         */ [](ggml_backend_buffer_t b, uint8_t v) {
            Mapping* m = of(b);
            // every stream's range aliases the first's, so clearing the first streams clears all
            for (size_t t = 0; t < m->tensors; ++t) {
                char* p = m->base + t * m->streams * m->stream_bytes;
                if (m->gpu) check(driver().memset8((CUdeviceptr)p, v, m->stream_bytes), "cuMemsetD8");
                else std::memset(p, v, m->stream_bytes);
            }
        },
        /* reset         */ nullptr,
    };
    Mapping* m = map_aliased(gpu, tensors, streams, stream_bytes);
    if (!m) return nullptr;
    return ggml_backend_buffer_init(ggml_backend_get_default_buffer_type(backend), iface, m, m->virtual_bytes());
}

}  // namespace alias_pages
