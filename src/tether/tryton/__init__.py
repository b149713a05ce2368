"""Tryton, a real ERP nobody here wrote, as a one-command local system (docs/erp.md "Tryton"):
``prepare`` builds a database with modules, languages and deterministic demo data through Tryton's
own API, ``server`` runs ``trytond`` on it, ``rpc`` is tether's JSON-RPC client of it.

Tryton itself (``trytond``, its modules, ``proteus``) is the optional ``tryton`` dependency group:
modules here import it inside functions, so importing this package never needs it."""
