"""Refuses to load a build of openreg-ops-extra under a torch it was not built for.

A C++ extension compiled against one torch crashes or misbehaves under another (the ABI
is not stable). Checked before the extension (and openreg-torch) is loaded, so the user
gets one clear message instead of an undefined-symbol error or a segfault.
"""

import torch


def check_torch_version() -> None:
    # DOC START: extra-version-guard
    try:
        from ._build_info import TORCH_VERSION as built_for
    except ImportError:  # running from a source tree that was never built
        raise ImportError(
            "openreg-ops-extra is not built: install it with "
            "`pip install --no-build-isolation packages/openreg-ops-extra`"
        ) from None
    if built_for != torch.__version__:
        raise ImportError(
            f"openreg-ops-extra was built for torch {built_for} but torch {torch.__version__} "
            "is installed. Rebuild it against the installed torch: `pip install "
            "--no-build-isolation --force-reinstall --no-deps packages/openreg-ops-extra` (or "
            f"install torch {built_for}), or uninstall it (`pip uninstall openreg-ops-extra`). "
            "To start torch without openreg meanwhile, set TORCH_DEVICE_BACKEND_AUTOLOAD=0."
        )
    # DOC END: extra-version-guard
