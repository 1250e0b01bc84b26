#pragma once

// One export macro for libopenreg_torch.so; everything else has hidden visibility.
#if defined(OPENREG_TORCH_BUILDING_LIBRARY)
#define OPENREG_TORCH_API __attribute__((visibility("default")))
#else
#define OPENREG_TORCH_API
#endif

// For the few thread-locals every operator reads (current stream, running kernel, alias
// cache, allocation routing): initial-exec makes an access one %fs-relative load instead
// of a __tls_get_addr call. The cost: the library's whole TLS segment is then carved from
// the small static reserve glibc keeps for libraries loaded by dlopen, so thread-locals
// here stay small and large per-thread state lives behind a pointer (test_autoload.py
// checks the segment's size). Only for trivially constructed values: one with a
// constructor or destructor pays a guard lookup on every access anyway.
#define OPENREG_HOT_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))
