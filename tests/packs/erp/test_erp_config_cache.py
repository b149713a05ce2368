"""A form's config is the caller's (its select options are the caller's tenant's rows): the ERP
client caches it per user, so one brand's warehouses never reach another brand's form card."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.packs.erp.conftest import ErpServer
from tether.packs.erp.client import ErpClient


def _warehouse_options(config: dict[str, Any]) -> set[str]:
    for field in config["master"]:
        if field["column"] == "warehouse_id":
            return {str(o["value"]) if isinstance(o, dict) else str(o) for o in field["options"]}
    raise AssertionError("form 2003 has no warehouse field")


def test_a_brand_never_gets_another_brands_cached_form_options(erp_server: ErpServer) -> None:
    brand1, brand2 = erp_server.token("admin"), erp_server.token("b2admin")
    with erp_server.erp_direct(brand1) as erp:
        own1 = _warehouse_options(erp.get("/forms/2003/config").json())
    with erp_server.erp_direct(brand2) as erp:
        own2 = _warehouse_options(erp.get("/forms/2003/config").json())
    assert own1 and own2 and own1.isdisjoint(own2)  # the demo's brands have their own warehouses

    async def through_the_client() -> tuple[set[str], set[str], set[str]]:
        client = ErpClient(f"{erp_server.url}/erp")
        try:
            first = _warehouse_options(await client.config(brand1, "2003"))
            second = _warehouse_options(await client.config(brand2, "2003"))  # brand 1's entry is fresh
            again = _warehouse_options(await client.config(brand1, "2003"))
        finally:
            await client.aclose()
        return first, second, again

    first, second, again = asyncio.run(through_the_client())
    assert first == own1 and again == own1
    assert second == own2
