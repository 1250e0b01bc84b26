"""Per-tensor backend metadata on openreg: a layout tag.

Vendors keep internal per-tensor state (a memory format, a tiling) in the
``c10::BackendMeta`` slot PyTorch reserves on every TensorImpl for PrivateUse1
backends. openreg's example is a layout tag: a short name a user sets and reads. It
survives ``torch.save``/``torch.load`` (openreg registers the serialization hooks),
copies between openreg tensors (``clone``, ``.to("openreg:1")``) and shallow copies
(``detach``, ``.data``); a tensor computed from a tagged one (``x + 1``) is a new
tensor without a tag. See docs/operators.md, "Backend metadata".
"""

from __future__ import annotations

import torch

from .. import _C

__all__ = ["set_layout_tag", "get_layout_tag"]


def set_layout_tag(tensor: torch.Tensor, tag: str | None) -> None:
    """Tag a strided openreg tensor (1 to 64 letters, digits, '_' or '-'); None clears
    the tag."""
    _C._set_layout_tag(tensor, tag)


def get_layout_tag(tensor: torch.Tensor) -> str | None:
    """The layout tag of a strided openreg tensor, or None."""
    return _C._get_layout_tag(tensor)
