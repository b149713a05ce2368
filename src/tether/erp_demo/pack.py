"""The demo ERP as a pack of the embedded default: ``tether.erp_demo.pack`` mounts the ERP at
``/erp`` inside ``tether serve`` and prepares its database at start-up (mounted apps' own
lifespans do not run). The ERP pack still reaches it over HTTP, as it would a real ERP. Its
password checks (``/erp/login``, ``/erp/ui/login``) go through tether's login limits
(``login_gate``).

Leave it out of ``TETHER_PACKS`` (or set ``TETHER_ERP_EMBEDDED=false``) when the ERP runs
elsewhere — ``tether erp serve`` or a real one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from tether.erp_demo.app import ErpDemo
from tether.erp_demo.settings import ErpSettings, agent_key_of
from tether.pack import Pack

log = logging.getLogger("tether.erp_demo")


def pack(env: Any) -> Pack:
    settings = ErpSettings()
    if settings.kind == "tryton":  # the ERP pack talks to Tryton: no demo ERP beside it
        log.info("TETHER_ERP_KIND=tryton: the demo ERP is not mounted")
        return Pack(name="erp_demo")
    erp = ErpDemo(settings, agent_key=agent_key_of(settings.agent_key, embedded=True))

    async def startup(services: Any) -> None:
        erp.login_gate = services.abuse.login_attempt  # one throttle for every password check here
        seeded = await asyncio.to_thread(erp.prepare)
        if seeded:
            log.info("demo ERP seeded: %s", ", ".join(f"{k} {v}" for k, v in seeded.items()))

    async def shutdown(_services: Any) -> None:
        erp.close()

    return Pack(name="erp_demo", startup=startup, shutdown=shutdown, apps={"/erp": erp.asgi})
