"""The demo ERP (seed 003's xlyEntry stand-in): its own database, login tokens, form metadata,
reads with the seed's holes (grants not enforced, a read that writes), writes, the AI staging
queue (``ai_op_queue``) and native form pages. ``tether erp serve`` runs it alone; the ERP pack
mounts ``ErpDemo(...).asgi`` at ``/erp``. The contract is docs/erp.md."""

from tether.erp_demo import facts
from tether.erp_demo.app import ErpDemo
from tether.erp_demo.settings import ErpSettings

__all__ = ["ErpDemo", "ErpSettings", "facts"]
