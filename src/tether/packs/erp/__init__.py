"""The ERP assistant pack (seed 003): ``TETHER_PACKS=tether.packs.erp.pack``."""
