#pragma once

// One export macro for libopenreg_torch.so; everything else has hidden visibility.
#if defined(OPENREG_TORCH_BUILDING_LIBRARY)
#define OPENREG_TORCH_API __attribute__((visibility("default")))
#else
#define OPENREG_TORCH_API
#endif
