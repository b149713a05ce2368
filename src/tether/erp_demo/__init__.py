"""The demo ERP (seed 003's xlyEntry stand-in): its own database, login tokens, form metadata,
reads with the seed's holes (grants not enforced, a read that writes), writes, the AI staging
queue (``ai_op_queue``) and native form pages. ``tether erp serve`` runs it alone; the ERP pack
mounts ``ErpDemo(...).asgi`` at ``/erp``. The contract is docs/erp.md."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.erp_demo import facts
    from tether.erp_demo.app import ErpDemo
    from tether.erp_demo.settings import ErpSettings

__all__ = ["ErpDemo", "ErpSettings", "facts"]
_WHERE = {"ErpDemo": "tether.erp_demo.app", "ErpSettings": "tether.erp_demo.settings", "facts": "tether.erp_demo.facts"}


def __getattr__(name: str) -> Any:
    """Loaded on first use, so that ``tether --help`` (which lists ``tether erp``) does not load the ERP."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_WHERE[name])
    return module if name == "facts" else getattr(module, name)
